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

template <class T>
T combine(T a, T b, const std::string& op) {
  if constexpr (std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>) {
    return T(combine(float(a), float(b), op));
  } else if constexpr (std::is_same_v<T, bool>) {
    return (op == "and" || op == "min" || op == "prod") ? (a && b) : (a || b);
  } else {
    if (op == "sum") return T(a + b);
    if (op == "prod") return T(a * b);
    if (op == "max") return (a != a || a > b) ? a : b;  // NaN propagates
    if (op == "min") return (a != a || a < b) ? a : b;
    if constexpr (std::is_integral_v<T>) {
      if (op == "and") return T(a & b);
      if (op == "or") return T(a | b);
    }
    PARAX_CHECK(false, "unknown reduction " << op);
    PARAX_UNREACHABLE();
  }
}

// out = op over members of their blocks `block` of each input (elementwise).
void reduce_into(void* out, const std::vector<const void*>& ins, int64_t n, DType dtype,
                 const std::string& op) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* o = static_cast<T*>(out);
    std::memcpy(o, ins[0], size_t(n) * sizeof(T));
    for (size_t k = 1; k < ins.size(); ++k) {
      const T* x = static_cast<const T*>(ins[k]);
      for (int64_t i = 0; i < n; ++i) o[i] = combine(o[i], x[i], op);
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
    out = in;  // devices not named as targets keep their data (their tile is unchanged)
    for (size_t k = 0; k < pairs.size(); k += 2) out[size_t(pairs[k + 1])] = in[size_t(pairs[k])];
    return out;
  }
  const Groups g = make_groups(mesh, eqn.params.get<std::vector<int64_t>>("mesh_axes"));
  const int64_t n = int64_t(g.members.empty() ? 1 : g.members[0].size());
  switch (eqn.prim) {
    case Prim::all_gather: {
      const int64_t d = eqn.params.get<int64_t>("dimension");
      base::parallel_for(int64_t(g.members.size()), [&](int64_t gi) {
        const auto& m = g.members[size_t(gi)];
        auto buf = Buffer::allocate(mesh.devices[size_t(m[0])], out_aval.nbytes());
        for (int64_t j = 0; j < n; ++j) {
          Shape off = zeros_like_shape(out_aval.shape);
          off[size_t(d)] = j * in_aval.shape[size_t(d)];
          base::copy_box(in[size_t(m[size_t(j)])]->data(), in_aval.shape,
                         zeros_like_shape(in_aval.shape), buf->data(), out_aval.shape, off,
                         in_aval.shape, item);
        }
        for (int64_t p : m) out[size_t(p)] = buf;
      });
      return out;
    }
    case Prim::all_reduce: {
      const auto& op = eqn.params.get<std::string>("op");
      base::parallel_for(int64_t(g.members.size()), [&](int64_t gi) {
        const auto& m = g.members[size_t(gi)];
        auto buf = Buffer::allocate(mesh.devices[size_t(m[0])], out_aval.nbytes());
        std::vector<const void*> ins;
        for (int64_t p : m) ins.push_back(in[size_t(p)]->data());
        reduce_into(buf->data(), ins, out_aval.size(), out_aval.dtype, op);
        for (int64_t p : m) out[size_t(p)] = buf;
      });
      return out;
    }
    case Prim::reduce_scatter: {
      const auto& op = eqn.params.get<std::string>("op");
      const int64_t d = eqn.params.get<int64_t>("dimension");
      base::parallel_for(mesh.size(), [&](int64_t p) {
        const auto& m = g.members[size_t(g.group_of[size_t(p)])];
        Shape off = zeros_like_shape(in_aval.shape);
        off[size_t(d)] = g.rank_of[size_t(p)] * out_aval.shape[size_t(d)];
        // Gather this device's block from every member, then combine.
        std::vector<std::vector<uint8_t>> blocks(m.size(), std::vector<uint8_t>(out_aval.nbytes()));
        std::vector<const void*> ins;
        for (size_t j = 0; j < m.size(); ++j) {
          base::copy_box(in[size_t(m[j])]->data(), in_aval.shape, off, blocks[j].data(),
                         out_aval.shape, zeros_like_shape(out_aval.shape), out_aval.shape, item);
          ins.push_back(blocks[j].data());
        }
        auto buf = Buffer::allocate(mesh.devices[size_t(p)], out_aval.nbytes());
        reduce_into(buf->data(), ins, out_aval.size(), out_aval.dtype, op);
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
