// The fusion kernel: the chain of equations of param `jaxpr` run tile by tile, each
// equation by its own primitive's kernel (or tile kernel) on the tile.
#include "prims/kernels/fusion.h"

#include <algorithm>
#include <cstring>

#include "prims/kernels/simd.h"
#include "prims/prim_util.h"

namespace parax::prims::kernels {
namespace {

// Elements per tile: a few 4-byte values of every intermediate stay within L1/L2.
constexpr int64_t kTile = 4096;

// A literal's value stored as its dtype, for kernels that read operands from memory.
struct ScalarBytes {
  alignas(8) unsigned char bytes[8];
};

ScalarBytes literal_bytes(const core::Literal& l) {
  ScalarBytes s{};
  core::write_literal(l, s.bytes);
  return s;
}

// Runs the fusion on one device. The chain's values are laid out flat (row-major); a
// trailing reduction over the last axes sees them as [rows, inner].
class FusionRun {
 public:
  explicit FusionRun(const KernelCall& c)
      : c_(c), p_(*c.params.get<std::shared_ptr<const core::Program>>("jaxpr")) {
    base_.assign(p_.avals.size(), nullptr);
    whole_.assign(p_.avals.size(), false);
    output_of_.assign(p_.avals.size(), -1);
    for (size_t i = 0; i < p_.invars.size(); ++i) {
      base_[size_t(p_.invars[i])] = c.inputs[i];
      whole_[size_t(p_.invars[i])] = c.in_avals[i].shape.empty();
    }
    for (size_t o = 0; o < p_.outvars.size(); ++o) output_of_[size_t(p_.outvars[o].var)] = int(o);
    for (const core::Eqn& e : p_.eqns) {
      literals_.emplace_back();
      for (const core::Atom& a : e.inputs) {
        literals_.back().push_back(a.is_literal() ? literal_bytes(*a.literal) : ScalarBytes{});
      }
    }
    reduces_ = core::has_trait(p_.eqns.back().prim, core::kReduction);
    chain_ = p_.eqns.size() - (reduces_ ? 1 : 0);
    // Operands and results of the chain's shape stream through memory tile by tile. A
    // result too large for the caches is computed into a tile buffer and streamed out.
    const int64_t elements =
        reduces_ ? p_.aval_of(p_.eqns.back().inputs[0]).size() : c.out_avals[0].size();
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      if (c.in_avals[i].shape.empty() || c.in_avals[i].size() != elements) continue;
      prefetched_.push_back(
          {static_cast<const char*>(c.inputs[i]), int64_t(dtype_itemsize(c.in_avals[i].dtype))});
    }
    streamed_.assign(c.outputs.size(), false);
    for (size_t o = 0; o < c.outputs.size(); ++o) {
      const int64_t item = dtype_itemsize(c.out_avals[o].dtype);
      const int v = p_.outvars[o].var;
      if (c.out_avals[o].size() != elements || base_[size_t(v)] != nullptr) continue;
      streamed_[o] = elements * item >= kStreamBytes && item % 4 == 0;
      if (!streamed_[o]) prefetched_.push_back({static_cast<const char*>(c.outputs[o]), item});
    }
    // Intermediates share tile buffers: a result takes the buffer of an operand that dies
    // at its equation (elementwise kernels run in place), so a chain works in a few
    // tiles that stay in L1 instead of one tile per value.
    std::vector<size_t> last_use(p_.avals.size(), 0);
    for (size_t e = 0; e < p_.eqns.size(); ++e) {
      for (const core::Atom& a : p_.eqns[e].inputs) {
        if (!a.is_literal()) last_use[size_t(a.var)] = e;
      }
    }
    // A streamed result keeps its tile buffer until the tile is written out.
    for (size_t o = 0; o < streamed_.size(); ++o) {
      if (streamed_[o]) last_use[size_t(p_.outvars[o].var)] = p_.eqns.size();
    }
    slot_.assign(p_.avals.size(), -1);
    std::vector<int> free_slots;
    for (size_t e = 0; e < chain_; ++e) {
      const core::Eqn& eqn = p_.eqns[e];
      for (const core::Atom& a : eqn.inputs) {
        if (a.is_literal() || slot_[size_t(a.var)] < 0 || last_use[size_t(a.var)] != e) continue;
        if (std::find(free_slots.begin(), free_slots.end(), slot_[size_t(a.var)]) ==
            free_slots.end())
          free_slots.push_back(slot_[size_t(a.var)]);
      }
      for (int v : eqn.outputs) {
        if (writes_output(v)) continue;
        const size_t item = size_t(dtype_itemsize(p_.avals[size_t(v)].dtype));
        auto it = std::find_if(free_slots.begin(), free_slots.end(),
                               [&](int k) { return slot_bytes_[size_t(k)] == item * kTile; });
        if (it != free_slots.end()) {
          slot_[size_t(v)] = *it;
          free_slots.erase(it);
        } else {
          slot_[size_t(v)] = int(slot_bytes_.size());
          slot_bytes_.push_back(item * kTile);
        }
      }
    }
    // Each equation's operand and result types for a full tile, made once: a tile's call
    // then only points at its buffers (no allocation per tile and equation).
    for (size_t e = 0; e < chain_; ++e) {
      const core::Eqn& eqn = p_.eqns[e];
      PARAX_CHECK(eqn.inputs.size() <= core::kMaxFusedOperands &&
                      eqn.outputs.size() <= core::kMaxFusedOperands,
                  "fusion: too many operands for " << core::prim_name(eqn.prim));
      Types t;
      for (const core::Atom& a : eqn.inputs) {
        const Aval& aval = p_.aval_of(a);
        const bool scalar = a.is_literal() || whole_[size_t(a.var)];
        t.in.push_back(Aval{scalar ? Shape{} : Shape{kTile}, aval.dtype, aval.weak_type});
      }
      for (int v : eqn.outputs) {
        const Aval& aval = p_.avals[size_t(v)];
        t.out.push_back(Aval{Shape{kTile}, aval.dtype, aval.weak_type});
      }
      types_.push_back(std::move(t));
    }
  }

  void run() {
    if (!reduces_) {
      const int64_t n = c_.out_avals[0].size();
      parallel_chunks(n, kTile, [&](int64_t begin, int64_t end) {
        Scratch s = scratch();
        for (int64_t t = begin; t < end; t += kTile) chain(s, t, std::min(kTile, end - t));
      });
      return;
    }
    const core::Eqn& red = p_.eqns.back();
    const int v = red.inputs[0].var;
    const Shape& shape = p_.avals[size_t(v)].shape;
    const size_t reduced = red.params.get<std::vector<int64_t>>("axes").size();
    // rows from the kept dimensions themselves: with an empty reduced extent (inner == 0)
    // every row still needs the identity written.
    const int64_t rows = shape_size(Shape(shape.begin(), shape.end() - long(reduced)));
    const int64_t inner = shape_size(Shape(shape.end() - long(reduced), shape.end()));
    const DType dtype = p_.avals[size_t(v)].dtype;
    auto* out = static_cast<unsigned char*>(c_.outputs[size_t(output_of_[size_t(red.outputs[0])])]);
    const size_t item = size_t(dtype_itemsize(dtype));
    if (inner == 0 || rows == 0) {  // an empty reduction: the kernel writes the identity
      reduce(nullptr, Shape{rows, inner}, out);
      return;
    }
    if (inner <= kTile) {
      // Whole rows per tile: each tile reduces straight into its rows of the output.
      const int64_t per_tile = kTile / inner;
      parallel_chunks(rows, std::max<int64_t>(1, per_tile), [&](int64_t begin, int64_t end) {
        Scratch s = scratch();
        for (int64_t r = begin; r < end; r += per_tile) {
          const int64_t nr = std::min(per_tile, end - r);
          chain(s, r * inner, nr * inner);
          reduce(pointer(s, v, r * inner), Shape{nr, inner}, out + size_t(r) * item);
        }
      });
      return;
    }
    // Long rows: reduce each tile to a partial, then the partials of each row.
    const int64_t tiles = (inner + kTile - 1) / kTile;
    std::vector<unsigned char> partials(size_t(rows * tiles) * item);
    parallel_chunks(rows * tiles, 1, [&](int64_t begin, int64_t end) {
      Scratch s = scratch();
      for (int64_t i = begin; i < end; ++i) {
        const int64_t row = i / tiles, j = i % tiles;
        const int64_t t = row * inner + j * kTile;
        const int64_t len = std::min(kTile, inner - j * kTile);
        chain(s, t, len);
        reduce(pointer(s, v, t), Shape{1, len}, partials.data() + size_t(i) * item);
      }
    });
    reduce(partials.data(), Shape{rows, tiles}, out);
  }

 private:
  struct Types {
    std::vector<Aval> in, out;
  };
  // Per parallel chunk: tile-sized buffers for the chain's intermediates, and a copy of
  // the equations' types whose lengths the last (short) tile changes.
  struct Scratch {
    std::vector<std::vector<unsigned char>> buffers;  // per slot
    std::vector<Types> types;
    const std::vector<int>* slot;  // per variable
    unsigned char* data(size_t v) { return buffers[size_t((*slot)[v])].data(); }
  };

  Scratch scratch() const {
    Scratch s{std::vector<std::vector<unsigned char>>(slot_bytes_.size()), types_, &slot_};
    for (size_t k = 0; k < slot_bytes_.size(); ++k) s.buffers[k].resize(slot_bytes_[k]);
    return s;
  }

  // Whether the chain writes variable v straight into its output buffer.
  bool writes_output(int v) const {
    const int o = output_of_[size_t(v)];
    return o >= 0 && !streamed_[size_t(o)];
  }

  // Where variable v's elements [t, t + tile) live.
  void* pointer(Scratch& s, int v, int64_t t) const {
    const size_t item = size_t(dtype_itemsize(p_.avals[size_t(v)].dtype));
    if (writes_output(v)) {
      return static_cast<unsigned char*>(c_.outputs[size_t(output_of_[size_t(v)])]) + t * item;
    }
    if (base_[size_t(v)] != nullptr) {
      const auto* b = static_cast<const unsigned char*>(base_[size_t(v)]);
      return const_cast<unsigned char*>(whole_[size_t(v)] ? b : b + t * item);
    }
    return s.data(size_t(v));
  }

  // Runs the tile form of a primitive that joins fusions without being elementwise,
  // reading its operand where it lies (a fusion input, or a value of the chain's shape).
  void tile(Scratch& s, const core::Eqn& eqn, core::TileKernelFn kernel, int64_t t, int64_t len) {
    const core::Atom& a = eqn.inputs[0];
    const Aval& in = p_.aval_of(a);
    const Shape& shape = p_.avals[size_t(eqn.outputs[0])].shape;
    const void* operand = in.shape == shape ? pointer(s, a.var, t) : base_[size_t(a.var)];
    kernel(core::TileCall{operand, in, shape, t, len, pointer(s, eqn.outputs[0], t), eqn.params});
  }

  // Asks for the lines of the tile after [t, t + len) that live in memory: a share of them
  // before each equation (`part` of `parts`), so that the next tile's operands and results
  // arrive while this one computes. (Inline asm: a loop of __builtin_prefetch alone is a
  // loop without effects to GCC, which deletes it.)
  void prefetch_next(int64_t t, int64_t len, size_t part, size_t parts) const {
    for (const Prefetched& m : prefetched_) {
      const int64_t lines = (len * m.item + 63) / 64;
      const int64_t first = lines * int64_t(part) / int64_t(parts);
      const int64_t last = lines * int64_t(part + 1) / int64_t(parts);
      const char* next = m.base + (t + len) * m.item;
      for (int64_t l = first; l < last; ++l) asm volatile("prefetcht0 %0" : : "m"(next[l * 64]));
    }
  }

  // Writes the tile [t, t + len) of each streamed result from its tile buffer.
  void stream_out(Scratch& s, int64_t t, int64_t len) const {
    for (size_t o = 0; o < streamed_.size(); ++o) {
      if (!streamed_[o]) continue;
      const int v = p_.outvars[o].var;
      const int64_t item = dtype_itemsize(p_.avals[size_t(v)].dtype);
      auto* out = static_cast<unsigned char*>(c_.outputs[o]) + t * item;
      simd::copy_streaming(reinterpret_cast<const float*>(s.data(size_t(v))),
                           reinterpret_cast<float*>(out), len * item / 4);
    }
  }

  // Runs the elementwise chain on elements [t, t + len).
  void chain(Scratch& s, int64_t t, int64_t len) {
    const void* ins[core::kMaxFusedOperands];
    void* outs[core::kMaxFusedOperands];
    for (size_t e = 0; e < chain_; ++e) {
      prefetch_next(t, len, e, chain_);
      const core::Eqn& eqn = p_.eqns[e];
      if (const auto kernel = core::rules(eqn.prim).tile_kernel) {
        tile(s, eqn, kernel, t, len);
        continue;
      }
      Types& types = s.types[e];
      for (size_t i = 0; i < eqn.inputs.size(); ++i) {
        const core::Atom& a = eqn.inputs[i];
        ins[i] = a.is_literal() ? literals_[e][i].bytes : pointer(s, a.var, t);
        if (!types.in[i].shape.empty()) types.in[i].shape[0] = len;
      }
      for (size_t r = 0; r < eqn.outputs.size(); ++r) {
        outs[r] = pointer(s, eqn.outputs[r], t);
        types.out[r].shape[0] = len;
      }
      core::rules(eqn.prim).kernel(KernelCall{{ins, eqn.inputs.size()},
                                              types.in,
                                              {outs, eqn.outputs.size()},
                                              types.out,
                                              eqn.params,
                                              c_.device});
    }
    stream_out(s, t, len);
  }

  // Reduces a [rows, inner] block at `in` over its last axis into `out`.
  void reduce(const void* in, const Shape& shape, void* out) const {
    const core::Eqn& red = p_.eqns.back();
    const Aval& x = p_.aval_of(red.inputs[0]);
    Params params = red.params;
    params.set("axes", std::vector<int64_t>{1});
    const Aval in_aval{shape, x.dtype, x.weak_type};
    const Aval out_aval{Shape{shape[0]}, x.dtype, x.weak_type};
    const void* ins[] = {in};
    void* outs[] = {out};
    core::rules(red.prim).kernel(
        KernelCall{ins, {&in_aval, 1}, outs, {&out_aval, 1}, params, c_.device});
  }

  // An operand or result of the chain's shape in memory, prefetched tile by tile.
  struct Prefetched {
    const char* base;
    int64_t item;
  };

  const KernelCall& c_;
  const core::Program& p_;
  std::vector<Prefetched> prefetched_;
  std::vector<bool> streamed_;  // per output: computed in a tile buffer, streamed out
  std::vector<const void*> base_;
  std::vector<bool> whole_;  // rank 0: the same for every tile
  std::vector<int> output_of_;
  std::vector<std::vector<ScalarBytes>> literals_;
  std::vector<Types> types_;        // per equation of the chain, for a full tile
  std::vector<int> slot_;           // per variable: its tile buffer (-1: none)
  std::vector<size_t> slot_bytes_;  // per tile buffer
  bool reduces_ = false;
  size_t chain_ = 0;
};

}  // namespace

void fusion(const core::KernelCall& call) { FusionRun(call).run(); }

}  // namespace parax::prims::kernels
