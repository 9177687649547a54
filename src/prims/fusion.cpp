// fusion: a chain of elementwise equations (param `jaxpr`) run tile by tile, so its
// intermediates live in cache-sized scratch instead of whole arrays in memory. Every
// non-scalar value of the chain has the fusion's element count; rank-0 inputs and literals
// broadcast. Each equation runs its own primitive's kernel on the tile.
#include <algorithm>

#include "base/dtype_dispatch.h"
#include "prims/prim_util.h"

namespace parax::prims {
namespace {

// Elements per tile: a few 4-byte values of every intermediate stay within L1/L2.
constexpr int64_t kTile = 4096;

std::vector<Aval> shape_rule(std::span<const Aval> in, const Params& params) {
  const auto& p = *params.get<std::shared_ptr<const core::Program>>("jaxpr");
  PARAX_CHECK(in.size() == p.invars.size(), "fusion arity");
  std::vector<Aval> out;
  for (const core::Atom& a : p.outvars) out.push_back(p.aval_of(a));
  return out;
}

// A literal's value stored as its dtype, for kernels that read operands from memory.
struct ScalarBytes {
  alignas(8) unsigned char bytes[8];
};

ScalarBytes literal_bytes(const core::Literal& l) {
  ScalarBytes s{};
  dispatch_dtype(l.aval.dtype, [&](auto tag) {
    using T = decltype(tag);
    *reinterpret_cast<T*>(s.bytes) = scalar_cast<T>(l.value);
  });
  return s;
}

void kernel(const KernelCall& c) {
  const auto& p = *c.params.get<std::shared_ptr<const core::Program>>("jaxpr");
  const int64_t n = c.out_avals[0].size();
  // Where each variable of the chain lives: an input/output buffer (offset by the tile's
  // start unless rank 0) or a scratch tile.
  std::vector<const void*> base(p.avals.size(), nullptr);
  std::vector<bool> whole(p.avals.size(), false);  // rank 0: the same for every tile
  for (size_t i = 0; i < p.invars.size(); ++i) {
    base[size_t(p.invars[i])] = c.inputs[i];
    whole[size_t(p.invars[i])] = c.in_avals[i].shape.empty();
  }
  std::vector<int> output_of(p.avals.size(), -1);
  for (size_t o = 0; o < p.outvars.size(); ++o) output_of[size_t(p.outvars[o].var)] = int(o);
  std::vector<std::vector<ScalarBytes>> literals(p.eqns.size());
  for (size_t e = 0; e < p.eqns.size(); ++e) {
    for (const core::Atom& a : p.eqns[e].inputs) {
      literals[e].push_back(a.is_literal() ? literal_bytes(*a.literal) : ScalarBytes{});
    }
  }
  parallel_chunks(n, kTile, [&](int64_t begin, int64_t end) {
    // Scratch for the intermediates, allocated once per chunk.
    std::vector<std::vector<unsigned char>> scratch(p.avals.size());
    for (const core::Eqn& e : p.eqns) {
      for (int v : e.outputs) {
        if (output_of[size_t(v)] < 0) {
          scratch[size_t(v)].resize(size_t(kTile * dtype_itemsize(p.avals[size_t(v)].dtype)));
        }
      }
    }
    std::vector<const void*> ins;
    std::vector<void*> outs;
    std::vector<Aval> in_avals, out_avals;
    for (int64_t t = begin; t < end; t += kTile) {
      const int64_t len = std::min(kTile, end - t);
      auto pointer = [&](int v) -> void* {
        const size_t item = size_t(dtype_itemsize(p.avals[size_t(v)].dtype));
        if (output_of[size_t(v)] >= 0) {
          return static_cast<unsigned char*>(c.outputs[size_t(output_of[size_t(v)])]) + t * item;
        }
        if (base[size_t(v)] != nullptr) {
          const auto* b = static_cast<const unsigned char*>(base[size_t(v)]);
          return const_cast<unsigned char*>(whole[size_t(v)] ? b : b + t * item);
        }
        return scratch[size_t(v)].data();
      };
      for (size_t e = 0; e < p.eqns.size(); ++e) {
        const core::Eqn& eqn = p.eqns[e];
        ins.clear();
        outs.clear();
        in_avals.clear();
        out_avals.clear();
        for (size_t i = 0; i < eqn.inputs.size(); ++i) {
          const core::Atom& a = eqn.inputs[i];
          const Aval& aval = p.aval_of(a);
          const bool scalar = a.is_literal() || whole[size_t(a.var)];
          ins.push_back(a.is_literal() ? literals[e][i].bytes : pointer(a.var));
          in_avals.push_back(Aval{scalar ? Shape{} : Shape{len}, aval.dtype, aval.weak_type});
        }
        for (int v : eqn.outputs) {
          outs.push_back(pointer(v));
          const Aval& aval = p.avals[size_t(v)];
          out_avals.push_back(Aval{Shape{len}, aval.dtype, aval.weak_type});
        }
        core::rules(eqn.prim).kernel(
            KernelCall{ins, in_avals, outs, out_avals, eqn.params, c.device});
      }
    }
  });
}

}  // namespace

extern const PrimRules fusion_rules = {.abstract_eval = shape_rule, .kernel = kernel};

}  // namespace parax::prims
