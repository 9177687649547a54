// Shared by vmap, pmap and shard_map: JAX's message when the axes to map disagree in size,
// and the expansion of a pytree prefix (in_axes, in_specs, ...) to one value per leaf.
#pragma once

#include <string>
#include <vector>

#include "core/aval.h"
#include "parax/errors.h"
#include "parax/tree.h"

namespace parax::detail {

// Returns a prefix node in Python's form: `0`, `(0, None)`, `(P('i'), (P(), P('j')))`. The
// outermost list matches the tuple of positional arguments and prints as a tuple; lists
// inside it print as Python lists, as JAX users write them: in_axes `([0],)`.
template <class Node, class LeafStr>
std::string prefix_str(const Node& node, LeafStr leaf_str, int depth = 0) {
  if (const auto* v = node.leaf_value()) return leaf_str(*v);
  const auto& c = node.children();
  std::string out = depth == 0 ? "(" : "[";
  for (size_t i = 0; i < c.size(); ++i) {
    out += (i ? ", " : "") + prefix_str(c[i], leaf_str, depth + 1);
  }
  if (depth > 0) return out + "]";
  return out + (c.size() == 1 ? ",)" : ")");
}

// Returns the key of child `i` of `def` in JAX's keystr form: "[0]", or "['w']" in a dict.
std::string child_key(const TreeDef& def, size_t i);

// Returns JAX's keystr of every leaf of `tree`, in leaf order: "" for a lone leaf, "[1][0]",
// "[0]['w']".
std::vector<std::string> leaf_key_paths(const TreeDef& tree);

// How expand_prefix words a prefix that does not fit.
struct PrefixError {
  // The prefix's name in JAX's messages: "vmap in_axes", "shard_map in_specs".
  std::string what;
  // vmap's form ("vmap in_axes specification must be a tree prefix of the corresponding
  // value, got specification ([0],) for value tree PyTreeDef((*,)).") instead of
  // tree_util's "pytree structure error: different ... at key path\n    <what><path>...".
  bool spec_form = false;
  // A paragraph JAX appends to the key-path form (pmap's explanation), or empty.
  std::string note;
};

// Throws the ValueError `err` describes for a prefix list node (of `n_prefix` children, at
// `depth`) that does not fit `def`, at key path `path`.
[[noreturn]] void throw_prefix_error(const PrefixError& err, const std::string& spec,
                                     const TreeDef& tree, const std::string& path,
                                     const TreeDef& def, size_t n_prefix, int depth);

// Returns one value per leaf of `tree`: a leaf node's value for its whole subtree, a list
// node's children matched to the tree node's. Throws JAX's ValueError (as `err` says) when
// `node` is not a prefix of `tree`. `paths`, when given, receives each leaf's prefix key
// path (JAX's in_specs[0][1] is "[0][1]"; a spec covering the whole tree is "").
template <class Node, class LeafStr>
auto expand_prefix(const Node& node, const TreeDef& tree, const PrefixError& err, LeafStr leaf_str,
                   std::vector<std::string>* paths = nullptr) {
  std::vector<std::decay_t<decltype(*node.leaf_value())>> out;
  const auto visit = [&](const auto& self, const Node& n, const TreeDef& def,
                         const std::string& path, int depth) -> void {
    if (const auto* v = n.leaf_value()) {
      out.insert(out.end(), size_t(def.num_leaves()), *v);
      if (paths) paths->insert(paths->end(), size_t(def.num_leaves()), path);
      return;
    }
    if (def.kind == TreeDef::Kind::leaf || def.children.size() != n.children().size()) {
      throw_prefix_error(err, prefix_str(node, leaf_str), tree, path, def, n.children().size(),
                         depth);
    }
    for (size_t i = 0; i < def.children.size(); ++i) {
      self(self, n.children()[i], def.children[i], path + child_key(def, i), depth + 1);
    }
  };
  visit(visit, node, tree, "", 0);
  return out;
}

// Throws ValueError listing the mapped axes' sizes, the most common first, as JAX does
// ("vmap got inconsistent sizes for array axes to be mapped:\n  * most axes (2 of them)
// had size 8, e.g. axis 0 of argument args[1] of type float32[8,3];\n  * one axis had size 4:
// ...").
// dims[i] < 0: argument i is not mapped.
[[noreturn]] void throw_inconsistent_sizes(const std::string& fn,
                                           const std::vector<core::Aval>& avals,
                                           const std::vector<int>& dims,
                                           const std::vector<std::string>& names);

}  // namespace parax::detail
