#include "runtime/collectives.h"

#include <cstring>
#include <map>

#include "base/box_copy.h"
#include "base/check.h"
#include "base/dtype_dispatch.h"
#include "base/thread_pool.h"

namespace parax::runtime {
namespace {

using core::Prim;

struct Groups {
  std::vector<std::vector<int64_t>> members;  // per group, ordered
  std::vector<int64_t> group_of, rank_of;     // per position
};

Groups make_groups(const MeshLayout& mesh, const std::vector<int64_t>& axes) {
  Groups g;
  g.group_of.resize(size_t(mesh.size()));
  g.rank_of.resize(size_t(mesh.size()));
  std::map<std::vector<int64_t>, size_t> index;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> ranked;
  for (int64_t p = 0; p < mesh.size(); ++p) {
    std::vector<int64_t> key = mesh.coords[size_t(p)];
    int64_t rank = 0;
    for (int64_t a : axes) {
      rank = rank * mesh.axis_sizes[size_t(a)] + key[size_t(a)];
      key[size_t(a)] = 0;
    }
    auto [it, fresh] = index.emplace(key, ranked.size());
    if (fresh) ranked.emplace_back();
    ranked[it->second].push_back({rank, p});
    g.group_of[size_t(p)] = int64_t(it->second);
    g.rank_of[size_t(p)] = rank;
  }
  for (auto& r : ranked) {
    std::sort(r.begin(), r.end());
    std::vector<int64_t> m;
    for (auto& [rank, p] : r) m.push_back(p);
    g.members.push_back(std::move(m));
  }
  return g;
}

enum class Op { sum, prod, max, min, and_, or_ };

Op op_of(const std::string& name) {
  if (name == "sum") return Op::sum;
  if (name == "prod") return Op::prod;
  if (name == "max") return Op::max;
  if (name == "min") return Op::min;
  if (name == "and") return Op::and_;
  PARAX_CHECK(name == "or", "unknown reduction " << name);
  return Op::or_;
}

template <Op kOp, class T>
T combine(T a, T b) {
  if constexpr (std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>) {
    return T(combine<kOp>(float(a), float(b)));
  } else if constexpr (std::is_same_v<T, bool>) {
    return (kOp == Op::and_ || kOp == Op::min || kOp == Op::prod) ? (a && b) : (a || b);
  } else if constexpr (kOp == Op::sum) {
    return T(a + b);
  } else if constexpr (kOp == Op::prod) {
    return T(a * b);
  } else if constexpr (kOp == Op::max) {
    return (a != a || a > b) ? a : b;  // NaN propagates
  } else if constexpr (kOp == Op::min) {
    return (a != a || a < b) ? a : b;
  } else if constexpr (std::is_integral_v<T>) {
    return kOp == Op::and_ ? T(a & b) : T(a | b);
  } else {
    PARAX_UNREACHABLE();  // the shape rules give and/or integer or bool operands only
  }
}

// o[i] = op(o[i], x[i]) for n elements: the dtype and op are chosen once, not per element.
void combine_into(void* o, const void* x, int64_t n, DType dtype, Op op) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    auto run = [&]<Op kOp>() {
      T* out = static_cast<T*>(o);
      const T* in = static_cast<const T*>(x);
      for (int64_t i = 0; i < n; ++i) out[i] = combine<kOp>(out[i], in[i]);
    };
    switch (op) {
      case Op::sum:
        return run.template operator()<Op::sum>();
      case Op::prod:
        return run.template operator()<Op::prod>();
      case Op::max:
        return run.template operator()<Op::max>();
      case Op::min:
        return run.template operator()<Op::min>();
      case Op::and_:
        return run.template operator()<Op::and_>();
      case Op::or_:
        return run.template operator()<Op::or_>();
    }
  });
}

Shape zeros_like_shape(const Shape& s) { return Shape(s.size(), 0); }

}  // namespace

MeshLayout::MeshLayout(Shape sizes, std::vector<Device> devs)
    : axis_sizes(std::move(sizes)), devices(std::move(devs)) {
  for (int64_t p = 0; p < size(); ++p) {
    std::vector<int64_t> c(axis_sizes.size());
    int64_t rest = p;
    for (size_t a = axis_sizes.size(); a-- > 0;) {
      c[a] = rest % axis_sizes[a];
      rest /= axis_sizes[a];
    }
    coords.push_back(std::move(c));
  }
}

std::vector<BufferRef> run_collective(const core::Eqn& eqn, const core::Aval& in_aval,
                                      const core::Aval& out_aval, const MeshLayout& mesh,
                                      const std::vector<BufferRef>& in) {
  const size_t item = size_t(dtype_itemsize(in_aval.dtype));
  std::vector<BufferRef> out(size_t(mesh.size()));
  if (eqn.prim == Prim::collective_permute) {
    const auto& pairs = eqn.params.get<std::vector<int64_t>>("source_target_pairs");
    // Devices named as no target keep their data (reshard: their tile is unchanged), or
    // get zeros (ppermute).
    std::vector<bool> target(in.size(), false);
    for (size_t k = 0; k < pairs.size(); k += 2) target[size_t(pairs[k + 1])] = true;
    const bool zero_rest = eqn.params.has("zero_others") && eqn.params.get<bool>("zero_others");
    out = in;
    for (size_t k = 0; k < pairs.size(); k += 2) out[size_t(pairs[k + 1])] = in[size_t(pairs[k])];
    for (size_t p = 0; p < out.size() && zero_rest; ++p) {
      if (target[p]) continue;
      auto buf = Buffer::allocate(mesh.devices[p], out_aval.nbytes());
      std::memset(buf->data(), 0, out_aval.nbytes());
      out[p] = buf;
    }
    return out;
  }
  const Groups g = make_groups(mesh, eqn.params.get<std::vector<int64_t>>("mesh_axes"));
  const int64_t n = int64_t(g.members.empty() ? 1 : g.members[0].size());
  switch (eqn.prim) {
    case Prim::all_gather: {
      const int64_t d = eqn.params.get<int64_t>("dimension");
      std::vector<BufferRef> result;
      for (const auto& m : g.members) {
        result.push_back(Buffer::allocate(mesh.devices[size_t(m[0])], out_aval.nbytes()));
      }
      // Every member's block is copied in parallel, across and within groups.
      base::parallel_for(int64_t(g.members.size()) * n, [&](int64_t t) {
        const auto& m = g.members[size_t(t / n)];
        const int64_t j = t % n;
        Shape off = zeros_like_shape(out_aval.shape);
        off[size_t(d)] = j * in_aval.shape[size_t(d)];
        base::copy_box(in[size_t(m[size_t(j)])]->data(), in_aval.shape,
                       zeros_like_shape(in_aval.shape), result[size_t(t / n)]->data(),
                       out_aval.shape, off, in_aval.shape, item);
      });
      for (size_t gi = 0; gi < g.members.size(); ++gi) {
        for (int64_t p : g.members[gi]) out[size_t(p)] = result[gi];
      }
      return out;
    }
    case Prim::all_reduce: {
      const Op op = op_of(eqn.params.get<std::string>("op"));
      // Each group's result is one buffer; the groups and chunks of each run in parallel
      // (one group over all devices would otherwise keep a single thread busy).
      std::vector<BufferRef> result;
      for (const auto& m : g.members) {
        result.push_back(Buffer::allocate(mesh.devices[size_t(m[0])], out_aval.nbytes()));
      }
      const int64_t total = out_aval.size();
      const int64_t chunk = std::max<int64_t>(1 << 14, (total + 63) / 64);
      const int64_t chunks = std::max<int64_t>(1, (total + chunk - 1) / chunk);
      base::parallel_for(int64_t(g.members.size()) * chunks, [&](int64_t t) {
        const auto& m = g.members[size_t(t / chunks)];
        const int64_t begin = (t % chunks) * chunk;
        const int64_t n_elems = std::min(total, begin + chunk) - begin;
        if (n_elems <= 0) return;
        const size_t offset = size_t(begin) * item;
        auto* dst = static_cast<uint8_t*>(result[size_t(t / chunks)]->data()) + offset;
        std::memcpy(dst, static_cast<const uint8_t*>(in[size_t(m[0])]->data()) + offset,
                    size_t(n_elems) * item);
        for (size_t j = 1; j < m.size(); ++j) {
          combine_into(dst, static_cast<const uint8_t*>(in[size_t(m[j])]->data()) + offset, n_elems,
                       out_aval.dtype, op);
        }
      });
      for (size_t gi = 0; gi < g.members.size(); ++gi) {
        for (int64_t p : g.members[gi]) out[size_t(p)] = result[gi];
      }
      return out;
    }
    case Prim::reduce_scatter: {
      const Op op = op_of(eqn.params.get<std::string>("op"));
      const int64_t d = eqn.params.get<int64_t>("dimension");
      base::parallel_for(mesh.size(), [&](int64_t p) {
        const auto& m = g.members[size_t(g.group_of[size_t(p)])];
        // This device's block of each member is `outer` contiguous runs; the first member's
        // is copied, the others' combined in place: one pass over each input, no staging.
        int64_t outer = 1, inner = 1;
        for (size_t k = 0; k < size_t(d); ++k) outer *= in_aval.shape[k];
        for (size_t k = size_t(d) + 1; k < in_aval.shape.size(); ++k) inner *= in_aval.shape[k];
        const int64_t run = out_aval.shape[size_t(d)] * inner;
        const int64_t row = in_aval.shape[size_t(d)] * inner;
        const int64_t start = g.rank_of[size_t(p)] * run;
        auto buf = Buffer::allocate(mesh.devices[size_t(p)], out_aval.nbytes());
        auto* dst = static_cast<uint8_t*>(buf->data());
        for (size_t j = 0; j < m.size(); ++j) {
          const auto* src = static_cast<const uint8_t*>(in[size_t(m[j])]->data());
          for (int64_t o = 0; o < outer; ++o) {
            uint8_t* to = dst + size_t(o * run) * item;
            const uint8_t* from = src + size_t(o * row + start) * item;
            if (j == 0) {
              std::memcpy(to, from, size_t(run) * item);
            } else {
              combine_into(to, from, run, out_aval.dtype, op);
            }
          }
        }
        out[size_t(p)] = buf;
      });
      return out;
    }
    case Prim::all_to_all: {
      const int64_t split = eqn.params.get<int64_t>("split_dimension");
      const int64_t concat = eqn.params.get<int64_t>("concat_dimension");
      base::parallel_for(mesh.size(), [&](int64_t p) {
        const auto& m = g.members[size_t(g.group_of[size_t(p)])];
        const int64_t me = g.rank_of[size_t(p)];
        auto buf = Buffer::allocate(mesh.devices[size_t(p)], out_aval.nbytes());
        Shape box = in_aval.shape;
        box[size_t(split)] = out_aval.shape[size_t(split)];
        for (int64_t j = 0; j < n; ++j) {
          // Member j sends me piece `me` of its split dimension; it lands at block j of
          // my concat dimension.
          Shape src_off = zeros_like_shape(in_aval.shape);
          src_off[size_t(split)] = me * box[size_t(split)];
          Shape dst_off = zeros_like_shape(out_aval.shape);
          dst_off[size_t(concat)] = j * in_aval.shape[size_t(concat)];
          base::copy_box(in[size_t(m[size_t(j)])]->data(), in_aval.shape, src_off, buf->data(),
                         out_aval.shape, dst_off, box, item);
        }
        out[size_t(p)] = buf;
      });
      return out;
    }
    default:
      PARAX_CHECK(false, "not a collective: " << core::prim_name(eqn.prim));
  }
  PARAX_UNREACHABLE();
}

}  // namespace parax::runtime
