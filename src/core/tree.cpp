#include "parax/tree.h"

namespace parax {

int TreeDef::num_leaves() const {
  if (kind == Kind::leaf) return 1;
  int n = 0;
  for (const TreeDef& c : children) n += c.num_leaves();
  return n;
}

namespace {
std::string body(const TreeDef& d) {
  std::string s;
  auto children = [&](const char* open, const char* close) {
    s += open;
    for (size_t i = 0; i < d.children.size(); ++i) {
      if (i) s += ", ";
      if (d.kind == TreeDef::Kind::dict) s += "'" + d.keys[i] + "': ";
      s += body(d.children[i]);
    }
    if (d.kind == TreeDef::Kind::tuple && d.children.size() == 1) s += ",";
    s += close;
  };
  switch (d.kind) {
    case TreeDef::Kind::leaf:
      return "*";
    case TreeDef::Kind::list:
      children("[", "]");
      break;
    case TreeDef::Kind::tuple:
      children("(", ")");
      break;
    case TreeDef::Kind::dict:
      if (!d.type_name.empty()) s += d.type_name + "(";
      children("{", "}");
      if (!d.type_name.empty()) s += ")";
      break;
    case TreeDef::Kind::custom:
      s += "CustomNode(" + d.type_name + "[], ";
      children("[", "]");
      s += ")";
      break;
  }
  return s;
}
}  // namespace

std::string TreeDef::to_string() const { return "PyTreeDef(" + body(*this) + ")"; }

namespace detail {
void throw_tree_mismatch(const TreeDef& expected, const std::string& what) {
  throw ValueError("[tree::unflatten] the tree structure " + expected.to_string() +
                   " does not match the C++ type: expected " + what);
}
}  // namespace detail

}  // namespace parax
