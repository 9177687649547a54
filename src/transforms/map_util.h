// Shared by vmap, pmap and shard_map: JAX's message when the axes to map disagree in size,
// and the expansion of a pytree prefix (in_axes, in_specs, ...) to one value per leaf.
#pragma once

#include <string>
#include <vector>

#include "core/aval.h"
#include "parax/errors.h"
#include "parax/tree.h"

namespace parax::detail {

// Returns a prefix node in Python's form: `0`, `(0, None)`, `(P('i'), (P(), P('j')))`.
template <class Node, class LeafStr>
std::string prefix_str(const Node& node, LeafStr leaf_str) {
  if (const auto* v = node.leaf_value()) return leaf_str(*v);
  const auto& c = node.children();
  std::string out = "(";
  for (size_t i = 0; i < c.size(); ++i) out += (i ? ", " : "") + prefix_str(c[i], leaf_str);
  return out + (c.size() == 1 ? ",)" : ")");
}

// Returns one value per leaf of `tree`: a leaf node's value for its whole subtree, a list
// node's children matched to the tree node's. Throws JAX's ValueError, as `<what>
// specification must be a tree prefix ...`, when `node` is not a prefix of `tree`.
template <class Node, class LeafStr>
auto expand_prefix(const Node& node, const TreeDef& tree, const std::string& what,
                   LeafStr leaf_str) {
  std::vector<std::decay_t<decltype(*node.leaf_value())>> out;
  const auto visit = [&](const auto& self, const Node& n, const TreeDef& def) -> bool {
    if (const auto* v = n.leaf_value()) {
      out.insert(out.end(), size_t(def.num_leaves()), *v);
      return true;
    }
    if (def.kind == TreeDef::Kind::leaf || def.children.size() != n.children().size()) {
      return false;
    }
    for (size_t i = 0; i < def.children.size(); ++i) {
      if (!self(self, n.children()[i], def.children[i])) return false;
    }
    return true;
  };
  if (!visit(visit, node, tree)) {
    throw ValueError(what + " specification must be a tree prefix of the corresponding value, "
                     "got specification " + prefix_str(node, leaf_str) + " for value tree " +
                     tree.to_string() + ".");
  }
  return out;
}

// Throws ValueError listing the mapped axes' sizes, the most common first, as JAX does
// ("vmap got inconsistent sizes for array axes to be mapped:\n  * most axes (2 of them)
// had size 8, e.g. axis 0 of args[1] of type float32[8,3];\n  * one axis had size 4: ...").
// dims[i] < 0: argument i is not mapped.
[[noreturn]] void throw_inconsistent_sizes(const std::string& fn,
                                           const std::vector<core::Aval>& avals,
                                           const std::vector<int>& dims,
                                           const std::vector<std::string>& names);

}  // namespace parax::detail
