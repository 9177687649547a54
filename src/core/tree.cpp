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

std::vector<std::string> split_field_names(const char* names) {
  std::vector<std::string> out;
  std::string name;
  for (const char* c = names;; ++c) {
    if (*c == ',' || *c == '\0') {
      out.push_back(name);
      name.clear();
      if (*c == '\0') break;
    } else if (*c != ' ' && *c != '\t' && *c != '\n') {
      name += *c;
    }
  }
  return out;
}

}  // namespace detail

std::string keystr(const KeyPath& path) {
  std::string s;
  for (const PathEntry& e : path) {
    switch (e.kind) {
      case PathEntry::Kind::dict:
        s += "['" + e.key + "']";
        break;
      case PathEntry::Kind::sequence:
        s += "[" + std::to_string(e.index) + "]";
        break;
      case PathEntry::Kind::attr:
        s += "." + e.key;
        break;
    }
  }
  return s;
}

}  // namespace parax
