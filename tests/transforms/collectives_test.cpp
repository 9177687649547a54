// The collective sweep. Every named-axis collective (psum, pmean, pmax, pmin, all_gather,
// psum_scatter, ppermute, all_to_all, axis_index, axis_size), over one axis name and over
// several at once, run under pmap (1-D, nested 2-D and 3-D), vmap with axis names (nested,
// and mixed with pmap in both orders) and shard_map over meshes (8), (4,2) and (2,2,2) with
// several in/out specs, against a host reference of plain loops. Then gradients through the
// collectives (grad inside the mapped function, and grad of the mapped function) against
// host finite differences, vmap against pmap, result shardings, and JAX's errors
// (reference/jax-arrays.md sections 6 and 7).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "parax/parax.h"
#include "support/errors.h"

namespace parax {
namespace {

namespace jnp = numpy;
using lax::AxisNames;
using Names = std::vector<std::string>;

// ---------------------------------------------------------------------------------------
// Host arrays: a shape and its values in row-major order, in double.

struct Host {
  Shape shape;
  std::vector<double> v;
};

int64_t numel(const Shape& s) {
  return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>());
}

Host zeros(const Shape& s) { return Host{s, std::vector<double>(size_t(numel(s)), 0.0)}; }

// Distinct values (multiples of 1/8, so sums of a few are exact in float32).
Host values(const Shape& s, int64_t seed = 0) {
  Host h = zeros(s);
  for (size_t i = 0; i < h.v.size(); ++i) {
    h.v[i] = double((int64_t(i) * 389 + 17 + seed * 101) % 1009 - 504) / 8.0;
  }
  return h;
}

Array to_array(const Host& h) {
  std::vector<float> f(h.v.begin(), h.v.end());
  return jnp::array(f, h.shape);
}

Host to_host(const Array& a) { return Host{a.shape(), a.to_vector<double>()}; }

// A shape seen around dimension `dim`: the elements before it, its size, the ones after.
struct Around {
  int64_t outer = 1, mid = 1, inner = 1;
};

Around around(const Shape& s, size_t dim) {
  Around r;
  r.mid = s[dim];
  for (size_t d = 0; d < dim; ++d) r.outer *= s[d];
  for (size_t d = dim + 1; d < s.size(); ++d) r.inner *= s[d];
  return r;
}

// Returns block k of n along dim.
Host block(const Host& a, size_t dim, int64_t k, int64_t n) {
  const Around s = around(a.shape, dim);
  const int64_t b = s.mid / n;
  Host out{a.shape, {}};
  out.shape[dim] = b;
  for (int64_t o = 0; o < s.outer; ++o) {
    const auto first = a.v.begin() + (o * s.mid + k * b) * s.inner;
    out.v.insert(out.v.end(), first, first + b * s.inner);
  }
  return out;
}

Host concat(const std::vector<Host>& parts, size_t dim) {
  Host out{parts[0].shape, {}};
  out.shape[dim] = 0;
  for (const Host& p : parts) out.shape[dim] += p.shape[dim];
  const Around s = around(parts[0].shape, dim);
  for (int64_t o = 0; o < s.outer; ++o) {
    for (const Host& p : parts) {
      const int64_t chunk = p.shape[dim] * s.inner;
      out.v.insert(out.v.end(), p.v.begin() + o * chunk, p.v.begin() + (o + 1) * chunk);
    }
  }
  return out;
}

Host expand(Host a, size_t dim) {
  a.shape.insert(a.shape.begin() + long(dim), 1);
  return a;
}

Host squeeze(Host a, size_t dim) {
  a.shape.erase(a.shape.begin() + long(dim));
  return a;
}

Host stack(std::vector<Host> parts, size_t dim) {
  for (Host& p : parts) p = expand(std::move(p), dim);
  return concat(parts, dim);
}

// Stacks equal-shaped parts along new leading dimensions `lead`.
Host stack_leading(const std::vector<Host>& parts, const Shape& lead) {
  Host out{lead, {}};
  out.shape.insert(out.shape.end(), parts[0].shape.begin(), parts[0].shape.end());
  for (const Host& p : parts) out.v.insert(out.v.end(), p.v.begin(), p.v.end());
  return out;
}

std::string str(const Shape& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + (s.size() == 1 ? ",)" : ")");
}

std::string str(const Names& names) {
  std::string r = "{";
  for (size_t i = 0; i < names.size(); ++i) r += (i ? "," : "") + names[i];
  return r + "}";
}

// Expects `got` to hold `want`, reporting the first few differences under `what`.
void expect_host(const Host& got, const Host& want, const std::string& what, double tol = 1e-5) {
  ASSERT_EQ(str(got.shape), str(want.shape)) << what;
  int bad = 0;
  for (size_t i = 0; i < want.v.size() && bad < 4; ++i) {
    if (std::abs(got.v[i] - want.v[i]) > tol * (1 + std::abs(want.v[i]))) {
      ADD_FAILURE() << what << ": element " << i << " is " << got.v[i] << ", expected "
                    << want.v[i];
      ++bad;
    }
  }
}

void expect_array(const Array& got, const Host& want, const std::string& what, double tol = 1e-5) {
  expect_host(to_host(got), want, what, tol);
}

// ---------------------------------------------------------------------------------------
// Instances and groups. A World is the grid of instances the enclosing maps make (named
// axes, sizes), numbered row-major. A collective over some of its names acts within each
// group of instances that share the coordinates of the other names; members are ordered
// row-major over the collective's names as written (the first major).

struct World {
  Names names;
  Shape sizes;

  int64_t count() const { return numel(sizes); }
  size_t pos(const std::string& name) const {
    return size_t(std::find(names.begin(), names.end(), name) - names.begin());
  }
  int64_t size_of(const Names& axes) const {
    int64_t n = 1;
    for (const std::string& a : axes) n *= sizes[pos(a)];
    return n;
  }
  Shape coords(int64_t w) const {
    Shape c(sizes.size());
    for (size_t a = sizes.size(); a-- > 0;) {
      c[a] = w % sizes[a];
      w /= sizes[a];
    }
    return c;
  }
  int64_t flat(const Shape& c) const {
    int64_t w = 0;
    for (size_t a = 0; a < sizes.size(); ++a) w = w * sizes[a] + c[a];
    return w;
  }
};

struct Group {
  std::vector<int64_t> members;
  int64_t me = 0;
};

Group group_of(const World& world, const Names& axes, int64_t w) {
  Group g;
  const Shape mine = world.coords(w);
  for (int64_t k = 0; k < world.size_of(axes); ++k) {
    Shape c = mine;
    int64_t rest = k;
    for (size_t a = axes.size(); a-- > 0;) {
      const size_t p = world.pos(axes[a]);
      c[p] = rest % world.sizes[p];
      rest /= world.sizes[p];
    }
    g.members.push_back(world.flat(c));
  }
  for (const std::string& a : axes) g.me = g.me * world.sizes[world.pos(a)] + mine[world.pos(a)];
  return g;
}

// A collective's reference: the group's inputs in member order, and this member's index.
using Ref = std::function<Host(const std::vector<Host>& group, int64_t me)>;

std::vector<Host> apply_ref(const World& world, const Names& axes, const std::vector<Host>& xs,
                            const Ref& ref) {
  std::vector<Host> out;
  for (int64_t w = 0; w < world.count(); ++w) {
    const Group g = group_of(world, axes, w);
    std::vector<Host> in;
    for (int64_t m : g.members) in.push_back(xs[size_t(m)]);
    out.push_back(ref(in, g.me));
  }
  return out;
}

Host reduce(const std::vector<Host>& xs, double (*op)(double, double)) {
  Host r = xs[0];
  for (size_t k = 1; k < xs.size(); ++k) {
    for (size_t i = 0; i < r.v.size(); ++i) r.v[i] = op(r.v[i], xs[k].v[i]);
  }
  return r;
}

double add(double a, double b) { return a + b; }
double max(double a, double b) { return std::max(a, b); }
double min(double a, double b) { return std::min(a, b); }

Host ref_psum(const std::vector<Host>& xs, int64_t) { return reduce(xs, add); }

Host ref_pmean(const std::vector<Host>& xs, int64_t me) {
  Host s = ref_psum(xs, me);
  for (double& x : s.v) x /= double(xs.size());
  return s;
}

Ref ref_all_gather(int64_t axis, bool tiled) {
  return [=](const std::vector<Host>& xs, int64_t) {
    const int64_t rank = int64_t(xs[0].shape.size()) + (tiled ? 0 : 1);
    const size_t d = size_t(axis < 0 ? axis + rank : axis);
    return tiled ? concat(xs, d) : stack(xs, d);
  };
}

Ref ref_psum_scatter(size_t dim, bool tiled) {
  return [=](const std::vector<Host>& xs, int64_t me) {
    Host b = block(reduce(xs, add), dim, me, int64_t(xs.size()));
    return tiled ? b : squeeze(b, dim);
  };
}

using Perm = std::vector<std::pair<int64_t, int64_t>>;

Ref ref_ppermute(std::function<Perm(int64_t)> perm) {
  return [=](const std::vector<Host>& xs, int64_t me) {
    for (const auto& [s, d] : perm(int64_t(xs.size()))) {
      if (d == me) return xs[size_t(s)];
    }
    return zeros(xs[0].shape);
  };
}

// Instance b sends block `me` of its split axis to this instance, which concatenates what
// it receives along the concat axis in order of b (untiled: each block loses the split
// axis, and the blocks stack along a new axis at concat_axis).
Ref ref_all_to_all(size_t split, size_t concat_axis, bool tiled) {
  return [=](const std::vector<Host>& xs, int64_t me) {
    const int64_t n = int64_t(xs.size());
    std::vector<Host> parts;
    for (const Host& x : xs) {
      Host b = block(x, split, me, n);
      parts.push_back(tiled ? b : squeeze(b, split));
    }
    return tiled ? concat(parts, concat_axis) : stack(parts, concat_axis);
  };
}

Host ref_axis_index(const std::vector<Host>&, int64_t me) { return Host{{}, {double(me)}}; }

// A ring shift, and a partial permutation after which some instances get zeros.
Perm ring(int64_t n) {
  Perm p;
  for (int64_t k = 0; k < n; ++k) p.push_back({k, (k + 1) % n});
  return p;
}

Perm partial(int64_t n) {
  Perm p;
  for (int64_t k = 0; k < n / 2; ++k) p.push_back({k, n - 1 - k});
  if (n >= 4) p.push_back({n - 1, 0});
  return p;
}

// ---------------------------------------------------------------------------------------
// The cases: a collective applied to each instance's input, and its reference.

using Op = std::function<Array(const Array&, const AxisNames&)>;

struct Case {
  std::string name;
  // Each instance's input shape, for a group of n instances.
  std::function<Shape(int64_t n)> local;
  Op op;
  Ref ref;
  // Differentiable (and without ties between instances on the sweep's inputs).
  bool grad = false;
};

std::vector<Case> cases() {
  auto fixed = [](Shape s) { return [s](int64_t) { return s; }; };
  std::vector<Case> c;
  c.push_back({"psum", fixed({3, 2}),
               [](const Array& x, const AxisNames& a) { return lax::psum(x, a); }, ref_psum, true});
  c.push_back({"pmean", fixed({3, 2}),
               [](const Array& x, const AxisNames& a) { return lax::pmean(x, a); }, ref_pmean,
               true});
  c.push_back({"pmax", fixed({3, 2}),
               [](const Array& x, const AxisNames& a) { return lax::pmax(x, a); },
               [](const std::vector<Host>& xs, int64_t) { return reduce(xs, max); }, true});
  c.push_back({"pmin", fixed({3, 2}),
               [](const Array& x, const AxisNames& a) { return lax::pmin(x, a); },
               [](const std::vector<Host>& xs, int64_t) { return reduce(xs, min); }, true});
  c.push_back({"psum_bool_counts", fixed({3, 2}),
               [](const Array& x, const AxisNames& a) { return lax::psum(x > 0.0f, a); },
               [](const std::vector<Host>& xs, int64_t) {
                 Host r = zeros(xs[0].shape);
                 for (const Host& x : xs) {
                   for (size_t i = 0; i < r.v.size(); ++i) r.v[i] += x.v[i] > 0 ? 1 : 0;
                 }
                 return r;
               }});
  c.push_back(
      {"pmax_int32", fixed({3, 2}),
       [](const Array& x, const AxisNames& a) { return lax::pmax(x.astype(DType::int32), a); },
       [](const std::vector<Host>& xs, int64_t) {
         Host r = reduce(xs, max);
         for (double& v : r.v) v = std::trunc(v);
         return r;
       }});
  for (int64_t axis : {0, 1, 2, -1}) {
    c.push_back({"all_gather_axis" + std::string(axis < 0 ? "m1" : std::to_string(axis)),
                 fixed({3, 2}),
                 [axis](const Array& x, const AxisNames& a) { return lax::all_gather(x, a, axis); },
                 ref_all_gather(axis, false), axis == 1});
  }
  for (int64_t axis : {0, 1, -1}) {
    c.push_back(
        {"all_gather_tiled_axis" + std::string(axis < 0 ? "m1" : std::to_string(axis)),
         fixed({3, 2}),
         [axis](const Array& x, const AxisNames& a) { return lax::all_gather(x, a, axis, true); },
         ref_all_gather(axis, true), axis == 0});
  }
  c.push_back({"psum_scatter_dim0",
               [](int64_t n) {
                 return Shape{n, 3};
               },
               [](const Array& x, const AxisNames& a) { return lax::psum_scatter(x, a, 0); },
               ref_psum_scatter(0, false), true});
  c.push_back({"psum_scatter_dim1",
               [](int64_t n) {
                 return Shape{3, n};
               },
               [](const Array& x, const AxisNames& a) { return lax::psum_scatter(x, a, 1); },
               ref_psum_scatter(1, false)});
  c.push_back({"psum_scatter_tiled_dim0",
               [](int64_t n) {
                 return Shape{2 * n, 3};
               },
               [](const Array& x, const AxisNames& a) { return lax::psum_scatter(x, a, 0, true); },
               ref_psum_scatter(0, true)});
  c.push_back({"psum_scatter_tiled_dim1",
               [](int64_t n) {
                 return Shape{3, 2 * n};
               },
               [](const Array& x, const AxisNames& a) { return lax::psum_scatter(x, a, -1, true); },
               ref_psum_scatter(1, true), true});
  c.push_back({"ppermute_ring", fixed({3, 2}),
               [](const Array& x, const AxisNames& a) {
                 return lax::ppermute(x, a, ring(lax::axis_size(a)));
               },
               ref_ppermute(ring), true});
  c.push_back({"ppermute_partial", fixed({3, 2}),
               [](const Array& x, const AxisNames& a) {
                 return lax::ppermute(x, a, partial(lax::axis_size(a)));
               },
               ref_ppermute(partial), true});
  struct A2a {
    int64_t split, concat;
    bool tiled;
    bool grad;
  };
  for (A2a t : {A2a{0, 0, false, false}, A2a{0, 1, false, true}, A2a{1, 0, false, false},
                A2a{1, 1, false, false}, A2a{0, 1, true, false}, A2a{1, 0, true, true},
                A2a{0, 0, true, false}, A2a{1, 2, true, false}, A2a{2, 0, false, false}}) {
    const bool three_d = t.split == 2 || t.concat == 2;
    c.push_back({"all_to_all_split" + std::to_string(t.split) + "_concat" +
                     std::to_string(t.concat) + (t.tiled ? "_tiled" : ""),
                 [t, three_d](int64_t n) {
                   Shape s = three_d ? Shape{2, 3, 2} : Shape{3, 2};
                   s[size_t(t.split)] = t.tiled ? 2 * n : n;
                   return s;
                 },
                 [t](const Array& x, const AxisNames& a) {
                   return lax::all_to_all(x, a, t.split, t.concat, t.tiled);
                 },
                 ref_all_to_all(size_t(t.split), size_t(t.concat), t.tiled), t.grad});
  }
  c.push_back({"axis_index", fixed({2}),
               [](const Array&, const AxisNames& a) { return lax::axis_index(a); },
               ref_axis_index});
  c.push_back({"axis_size", fixed({2}),
               [](const Array& x, const AxisNames& a) {
                 // psum of a constant is the idiom for the size, without communication.
                 Array n = lax::psum(1, a);
                 return jnp::zeros_like(x) + float(lax::axis_size(a)) + n.astype(DType::float32);
               },
               [](const std::vector<Host>& xs, int64_t) {
                 Host r = zeros(xs[0].shape);
                 for (double& v : r.v) v = 2.0 * double(xs.size());
                 return r;
               }});
  return c;
}

const std::vector<Case>& all_cases() {
  static const std::vector<Case> c = cases();
  return c;
}

std::vector<size_t> case_indices(bool grad_only) {
  std::vector<size_t> out;
  for (size_t i = 0; i < all_cases().size(); ++i) {
    if (!grad_only || all_cases()[i].grad) out.push_back(i);
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// Runs one combination; an exception fails only that one, so the rest of the test still runs.

template <class F>
void run_one(const std::string& harness, const Case& c, const Names& axes, F body) {
  try {
    body();
  } catch (const std::exception& e) {
    ADD_FAILURE() << c.name << " over " << str(axes) << " in " << harness << " threw: " << e.what();
  }
}

// ---------------------------------------------------------------------------------------
// Stacked maps: pmap and vmap (nested, and mixed) over the leading dimensions of one input,
// one instance per index of those dimensions.

using Fn = std::function<Array(const Array&)>;

struct Stacked {
  std::string id;
  World world;                // the leading dimensions, outermost map first
  std::function<Fn(Fn)> map;  // maps a per-instance function over them
  std::vector<Names> axes;    // the name sets to run each collective over
  // The sharding of the result, when a pmap places it (empty: not checked).
  std::function<std::string()> sharding;
};

// NamedSharding(spec) over a mesh of the first devices with these axes, printed.
std::string sharding_str(const World& w, const PartitionSpec& spec) {
  const std::vector<Device> all = local_devices();
  std::vector<Device> first(all.begin(), all.begin() + w.count());
  return NamedSharding(Mesh(DeviceGrid(first, w.sizes), w.names), spec).to_string();
}

Fn pmap_over(const std::string& name, Fn f) {
  PmapOptions options;
  options.axis_name = name;
  return pmap(std::move(f), options);
}

Fn vmap_over(const std::string& name, Fn f) {
  VmapOptions options;
  options.axis_name = name;
  return vmap(std::move(f), options);
}

Stacked pmap_1d() {
  return {"pmap_1d",
          {{"i"}, {8}},
          [](Fn f) { return pmap_over("i", f); },
          {{"i"}},
          [] {
            return sharding_str({{"i"}, {8}}, P("i"));
          }};
}

std::vector<Names> names_2d() { return {{"i"}, {"j"}, {"i", "j"}, {"j", "i"}}; }

Stacked pmap_2d() {
  return {"pmap_2d",
          {{"i", "j"}, {4, 2}},
          [](Fn f) { return pmap_over("i", pmap_over("j", f)); },
          names_2d(),
          [] {
            return sharding_str({{"i", "j"}, {4, 2}}, P("i", "j"));
          }};
}

Stacked pmap_3d() {
  return {"pmap_3d",
          {{"i", "j", "k"}, {2, 2, 2}},
          [](Fn f) { return pmap_over("i", pmap_over("j", pmap_over("k", f))); },
          {{"k"}, {"i", "k"}, {"k", "j", "i"}},
          [] {
            return sharding_str({{"i", "j", "k"}, {2, 2, 2}}, P("i", "j", "k"));
          }};
}

// pmap called inside jit: the region is part of the enclosing program.
Stacked pmap_in_jit() {
  return {"pmap_in_jit",
          {{"i"}, {8}},
          [](Fn f) { return Fn(jit(pmap_over("i", f))); },
          {{"i"}},
          [] {
            return sharding_str({{"i"}, {8}}, P("i"));
          }};
}

Stacked vmap_1d() {
  return {"vmap_1d", {{"i"}, {8}}, [](Fn f) { return vmap_over("i", f); }, {{"i"}}, {}};
}

Stacked vmap_2d() {
  return {"vmap_2d",
          {{"i", "j"}, {4, 2}},
          [](Fn f) { return vmap_over("i", vmap_over("j", f)); },
          names_2d(),
          {}};
}

Stacked vmap_in_pmap() {
  return {"vmap_in_pmap",
          {{"i", "j"}, {4, 2}},
          [](Fn f) { return pmap_over("i", vmap_over("j", f)); },
          names_2d(),
          [] {
            return sharding_str({{"i"}, {4}}, P("i"));
          }};
}

Stacked pmap_in_vmap() {
  // The batch is not split: each device maps its own slice of it.
  return {"pmap_in_vmap",
          {{"j", "i"}, {2, 4}},
          [](Fn f) { return vmap_over("j", pmap_over("i", f)); },
          names_2d(),
          [] {
            return sharding_str({{"i"}, {4}}, P(None, "i"));
          }};
}

void run_stacked(const Case& c, const Stacked& h) {
  for (const Names& axes : h.axes) {
    run_one(h.id, c, axes, [&] {
      const std::string what = c.name + " over " + str(axes) + " in " + h.id;
      Shape global = h.world.sizes;
      const Shape local = c.local(h.world.size_of(axes));
      global.insert(global.end(), local.begin(), local.end());
      const Host x = values(global);
      std::vector<Host> xs;
      for (int64_t w = 0; w < h.world.count(); ++w) {
        const auto first = x.v.begin() + w * numel(local);
        xs.push_back(Host{local, std::vector<double>(first, first + numel(local))});
      }
      const Host want = stack_leading(apply_ref(h.world, axes, xs, c.ref), h.world.sizes);
      const Op& op = c.op;
      Fn f = [&op, axes](const Array& a) { return op(a, AxisNames(axes)); };
      Array got = h.map(f)(to_array(x));
      expect_array(got, want, what);
      if (!h.sharding) return;
      EXPECT_EQ(got.sharding().to_string(), h.sharding()) << what;
    });
  }
}

// ---------------------------------------------------------------------------------------
// shard_map: the input is a global array split into blocks by the in_spec; the output is
// assembled from each device's block by the out_spec.

std::vector<Names> spec_axes(const PartitionSpec& spec) {
  std::vector<Names> out;
  for (size_t d = 0; d < spec.size(); ++d) out.push_back(spec[d].axes());
  return out;
}

// Device w's block of `x` under `spec` (mesh axes not in the spec: the same block).
Host device_block(const World& mesh, const Host& x, const PartitionSpec& spec, int64_t w) {
  Host b = x;
  const Shape c = mesh.coords(w);
  const auto axes = spec_axes(spec);
  for (size_t d = 0; d < axes.size(); ++d) {
    int64_t k = 0;
    for (const std::string& a : axes[d]) k = k * mesh.sizes[mesh.pos(a)] + c[mesh.pos(a)];
    b = block(b, d, k, mesh.size_of(axes[d]));
  }
  return b;
}

// The global array whose blocks under `spec` are `blocks` (one per device; for mesh axes
// the spec leaves out, the block of the device at coordinate 0 along them).
Host assemble(const World& mesh, const std::vector<Host>& blocks, const PartitionSpec& spec) {
  const auto axes = spec_axes(spec);
  const Shape bshape = blocks[0].shape;
  Shape gshape = bshape;
  for (size_t d = 0; d < axes.size(); ++d) gshape[d] *= mesh.size_of(axes[d]);
  Host g = zeros(gshape);
  Names mentioned;
  for (const Names& a : axes) mentioned.insert(mentioned.end(), a.begin(), a.end());
  for (int64_t w = 0; w < mesh.count(); ++w) {
    const Shape c = mesh.coords(w);
    bool first = true;
    for (size_t a = 0; a < mesh.names.size(); ++a) {
      if (std::count(mentioned.begin(), mentioned.end(), mesh.names[a]) == 0 && c[a] != 0) {
        first = false;
      }
    }
    if (!first) continue;
    Shape offset(bshape.size(), 0);
    for (size_t d = 0; d < axes.size(); ++d) {
      int64_t k = 0;
      for (const std::string& a : axes[d]) k = k * mesh.sizes[mesh.pos(a)] + c[mesh.pos(a)];
      offset[d] = k * bshape[d];
    }
    for (int64_t i = 0; i < numel(bshape); ++i) {
      int64_t rest = i, gi = 0, stride = 1;
      for (size_t d = bshape.size(); d-- > 0;) {
        gi += (rest % bshape[d] + offset[d]) * stride;
        rest /= bshape[d];
        stride *= gshape[d];
      }
      g.v[size_t(gi)] = blocks[size_t(w)].v[size_t(i)];
    }
  }
  return g;
}

// The spec as JAX reports it on shard_map's results: a group of one name is that name.
PartitionSpec unpacked(const PartitionSpec& spec) {
  std::vector<SpecEntry> entries;
  for (const SpecEntry& e : spec.entries()) {
    if (e.axes().size() == 1) {
      entries.push_back(SpecEntry(e.axes()[0]));
    } else if (e.axes().empty()) {
      entries.push_back(SpecEntry(None));
    } else {
      entries.push_back(e);
    }
  }
  return PartitionSpec::from_entries(std::move(entries));
}

struct MeshCase {
  std::string id;
  World mesh;
  std::vector<PartitionSpec> in_specs;
  std::vector<Names> axes;
};

Mesh mesh_of(const World& w) { return make_mesh(w.sizes, w.names); }

PartitionSpec grouped(Names names) {
  return PartitionSpec::from_entries({SpecEntry(std::move(names))});
}

// The out_spec variant k for a result block of rank `rank` (a unit dimension in front).
PartitionSpec out_spec_variant(const World& mesh, size_t k, size_t rank) {
  Names all = mesh.names;
  Names reversed(all.rbegin(), all.rend());
  if (k % 3 == 1) return grouped(reversed);
  if (k % 3 == 2 && rank >= 2) {
    if (all.size() == 1) return P(None, all[0]);
    return PartitionSpec::from_entries(
        {SpecEntry(all[0]), SpecEntry(Names(all.begin() + 1, all.end()))});
  }
  return grouped(all);
}

MeshCase mesh_8() { return {"mesh_8", {{"i"}, {8}}, {P("i"), P(None, "i"), P({"i"})}, {{"i"}}}; }

MeshCase mesh_4x2() {
  return {"mesh_4x2",
          {{"i", "j"}, {4, 2}},
          {P("i", "j"), P("j", "i"), P({"i", "j"}), P(None, {"j", "i"}), P("i")},
          names_2d()};
}

MeshCase mesh_2x2x2() {
  return {"mesh_2x2x2",
          {{"i", "j", "k"}, {2, 2, 2}},
          {P({"i", "j"}, "k"), P("k", {"j", "i"}), P(None, "j"), P({"k", "i", "j"})},
          {{"j"}, {"i", "k"}, {"k", "j", "i"}, {"i", "j", "k"}}};
}

void run_shard_map(const Case& c, const MeshCase& m) {
  const Mesh mesh = mesh_of(m.mesh);
  size_t variant = 0;
  for (const PartitionSpec& in_spec : m.in_specs) {
    for (const Names& axes : m.axes) {
      if (in_spec.size() > c.local(m.mesh.size_of(axes)).size()) continue;
      ++variant;
      run_one(m.id, c, axes, [&] {
        const std::string what =
            c.name + " over " + str(axes) + " in " + m.id + " " + in_spec.to_string();
        const Shape local = c.local(m.mesh.size_of(axes));
        Shape global = local;
        const auto spec = spec_axes(in_spec);
        for (size_t d = 0; d < spec.size(); ++d) global[d] *= m.mesh.size_of(spec[d]);
        const Host x = values(global);
        std::vector<Host> xs;
        for (int64_t w = 0; w < m.mesh.count(); ++w) {
          xs.push_back(device_block(m.mesh, x, in_spec, w));
        }
        std::vector<Host> ys = apply_ref(m.mesh, axes, xs, c.ref);
        for (Host& y : ys) y = expand(std::move(y), 0);
        const PartitionSpec out_spec = out_spec_variant(m.mesh, variant, ys[0].shape.size());
        const Host want = assemble(m.mesh, ys, out_spec);
        const Op& op = c.op;
        auto f = shard_map(
            [&op, axes](const Array& a) { return jnp::expand_dims(op(a, AxisNames(axes)), {0}); },
            mesh, in_spec, out_spec);
        // Alternately an uncommitted input and one already laid out as the in_spec says.
        Array in = to_array(x);
        if (variant % 2 == 1) in = device_put(in, NamedSharding(mesh, in_spec));
        Array got = f(in);
        expect_array(got, want, what + " -> " + out_spec.to_string());
        EXPECT_EQ(got.sharding().to_string(), NamedSharding(mesh, unpacked(out_spec)).to_string())
            << what;
      });
    }
  }
}

// ---------------------------------------------------------------------------------------
// The sweep, one test per case and way of mapping.

class CollectiveSweep : public testing::TestWithParam<size_t> {
 protected:
  const Case& c() const { return all_cases()[GetParam()]; }
  void stacked(const Stacked& h) { run_stacked(c(), h); }
  void sharded(const MeshCase& m) { run_shard_map(c(), m); }
};

TEST_P(CollectiveSweep, Pmap) { stacked(pmap_1d()); }
TEST_P(CollectiveSweep, PmapInPmap) { stacked(pmap_2d()); }
TEST_P(CollectiveSweep, PmapInPmapInPmap) { stacked(pmap_3d()); }
TEST_P(CollectiveSweep, PmapInJit) { stacked(pmap_in_jit()); }
TEST_P(CollectiveSweep, Vmap) { stacked(vmap_1d()); }
TEST_P(CollectiveSweep, VmapInVmap) { stacked(vmap_2d()); }
TEST_P(CollectiveSweep, VmapInPmap) { stacked(vmap_in_pmap()); }
TEST_P(CollectiveSweep, PmapInVmap) { stacked(pmap_in_vmap()); }
TEST_P(CollectiveSweep, ShardMap8) { sharded(mesh_8()); }
TEST_P(CollectiveSweep, ShardMap4x2) { sharded(mesh_4x2()); }
TEST_P(CollectiveSweep, ShardMap2x2x2) { sharded(mesh_2x2x2()); }

std::string case_name(const testing::TestParamInfo<size_t>& info) {
  return all_cases()[info.param].name;
}

INSTANTIATE_TEST_SUITE_P(Collectives, CollectiveSweep, testing::ValuesIn(case_indices(false)),
                         case_name);

// ---------------------------------------------------------------------------------------
// Gradients. Instance w's loss is weight_w * sum(cos(collective(y))), weight_w = 1 + w/4
// (w from axis_index over all the map's names, so the loss differs per instance). The
// gradient taken inside the mapped function, and the gradient of the sum of the mapped
// losses, are both the derivative of the total loss by each instance's input (the
// transpose of a collective carries every instance's cotangent), computed on the host by
// central differences.

Array instance_loss(const Case& c, const Array& y, const AxisNames& axes, const Names& world) {
  Array weight = lax::axis_index(world).astype(DType::float32) * 0.25f + 1.0f;
  return jnp::sum(jnp::cos(c.op(y, axes))) * weight;
}

double total_loss(const Case& c, const World& world, const Names& axes,
                  const std::vector<Host>& xs) {
  std::vector<Host> ys = apply_ref(world, axes, xs, c.ref);
  double t = 0;
  for (size_t w = 0; w < ys.size(); ++w) {
    for (double v : ys[w].v) t += (1 + 0.25 * double(w)) * std::cos(v);
  }
  return t;
}

std::vector<Host> host_grad(const Case& c, const World& world, const Names& axes,
                            std::vector<Host> xs) {
  std::vector<Host> g;
  const double h = 1e-5;
  for (size_t w = 0; w < xs.size(); ++w) {
    g.push_back(zeros(xs[w].shape));
    for (size_t i = 0; i < xs[w].v.size(); ++i) {
      const double x0 = xs[w].v[i];
      xs[w].v[i] = x0 + h;
      const double up = total_loss(c, world, axes, xs);
      xs[w].v[i] = x0 - h;
      const double down = total_loss(c, world, axes, xs);
      xs[w].v[i] = x0;
      g.back().v[i] = (up - down) / (2 * h);
    }
  }
  return g;
}

// Inputs scaled down so that cos stays away from flat spots and differences are tame.
Host grad_values(const Shape& s) {
  Host x = values(s);
  for (double& v : x.v) v /= 16.0;
  return x;
}

void run_grad_stacked(const Case& c, const Stacked& h, bool inside) {
  for (const Names& axes : h.axes) {
    run_one(h.id, c, axes, [&] {
      const std::string what =
          c.name + " over " + str(axes) + " in " + h.id + (inside ? " (inside)" : " (outside)");
      Shape global = h.world.sizes;
      const Shape local = c.local(h.world.size_of(axes));
      global.insert(global.end(), local.begin(), local.end());
      const Host x = grad_values(global);
      std::vector<Host> xs;
      for (int64_t w = 0; w < h.world.count(); ++w) {
        const auto first = x.v.begin() + w * numel(local);
        xs.push_back(Host{local, std::vector<double>(first, first + numel(local))});
      }
      const Host want = stack_leading(host_grad(c, h.world, axes, xs), h.world.sizes);
      const Names world = h.world.names;
      auto loss = [&c, axes, world](const Array& y) {
        return instance_loss(c, y, AxisNames(axes), world);
      };
      Array got;
      if (inside) {
        got = h.map([loss](const Array& y) { return grad(loss)(y); })(to_array(x));
      } else {
        Fn mapped = h.map(loss);
        got = grad([mapped](const Array& all) { return jnp::sum(mapped(all)); })(to_array(x));
      }
      expect_array(got, want, what, 2e-4);
    });
  }
}

void run_grad_shard_map(const Case& c, const MeshCase& m, bool inside) {
  const Mesh mesh = mesh_of(m.mesh);
  // A spec that splits over every mesh axis, so each instance's block is its own (no ties).
  const PartitionSpec& in_spec = m.in_specs[0];
  for (const Names& axes : m.axes) {
    run_one(m.id, c, axes, [&] {
      const std::string what =
          c.name + " over " + str(axes) + " in " + m.id + (inside ? " (inside)" : " (outside)");
      const Shape local = c.local(m.mesh.size_of(axes));
      Shape global = local;
      const auto spec = spec_axes(in_spec);
      for (size_t d = 0; d < spec.size(); ++d) global[d] *= m.mesh.size_of(spec[d]);
      const Host x = grad_values(global);
      std::vector<Host> xs;
      for (int64_t w = 0; w < m.mesh.count(); ++w) {
        xs.push_back(device_block(m.mesh, x, in_spec, w));
      }
      const Host want = assemble(m.mesh, host_grad(c, m.mesh, axes, xs), in_spec);
      const Names world = m.mesh.names;
      auto loss = [&c, axes, world](const Array& y) {
        return instance_loss(c, y, AxisNames(axes), world);
      };
      Array got;
      if (inside) {
        got = shard_map([loss](const Array& y) { return grad(loss)(y); }, mesh, in_spec,
                        in_spec)(to_array(x));
      } else {
        auto mapped = shard_map([loss](const Array& y) { return jnp::expand_dims(loss(y), {0}); },
                                mesh, in_spec, grouped(world));
        got = grad([mapped](const Array& all) { return jnp::sum(mapped(all)); })(to_array(x));
      }
      expect_array(got, want, what, 2e-4);
    });
  }
}

class CollectiveGrad : public testing::TestWithParam<size_t> {
 protected:
  const Case& c() const { return all_cases()[GetParam()]; }
  void stacked(const Stacked& h, bool inside) { run_grad_stacked(c(), h, inside); }
  void sharded(const MeshCase& m, bool inside) { run_grad_shard_map(c(), m, inside); }
};

TEST_P(CollectiveGrad, InsidePmap) { stacked(pmap_1d(), true); }
TEST_P(CollectiveGrad, InsidePmapInPmap) { stacked(pmap_2d(), true); }
TEST_P(CollectiveGrad, InsideVmap) { stacked(vmap_1d(), true); }
TEST_P(CollectiveGrad, InsideVmapInVmap) { stacked(vmap_2d(), true); }
TEST_P(CollectiveGrad, InsideVmapInPmap) { stacked(vmap_in_pmap(), true); }
TEST_P(CollectiveGrad, InsideShardMap4x2) { sharded(mesh_4x2(), true); }
TEST_P(CollectiveGrad, InsideShardMap2x2x2) { sharded(mesh_2x2x2(), true); }
TEST_P(CollectiveGrad, OfPmap) { stacked(pmap_1d(), false); }
TEST_P(CollectiveGrad, OfPmapInPmap) { stacked(pmap_2d(), false); }
TEST_P(CollectiveGrad, OfVmap) { stacked(vmap_1d(), false); }
TEST_P(CollectiveGrad, OfVmapInVmap) { stacked(vmap_2d(), false); }
TEST_P(CollectiveGrad, OfShardMap4x2) { sharded(mesh_4x2(), false); }

INSTANTIATE_TEST_SUITE_P(Collectives, CollectiveGrad, testing::ValuesIn(case_indices(true)),
                         case_name);

// ---------------------------------------------------------------------------------------
// vmap and pmap agree: a function mixing several collectives gives the same values, and
// the same gradients, either way.

Array mixed(const Array& x) {
  Array idx = lax::axis_index("i").astype(DType::float32);
  Array normalized = x / lax::psum(jnp::abs(x), "i");
  Array neighbour = lax::ppermute(normalized, "i", ring(lax::axis_size("i")));
  Array gathered = jnp::sum(lax::all_gather(neighbour * idx, "i"), 0);
  return gathered + lax::pmax(x, "i") - lax::pmean(x, "i") +
         jnp::sum(lax::psum_scatter(lax::all_to_all(x.reshape({8, 1}), "i", 0, 1), "i", 1, true));
}

TEST(VmapAndPmap, AgreeOnAMixOfCollectives) {
  Array x = to_array(values({8, 8}));
  Array by_vmap = vmap(mixed, {.axis_name = "i"})(x);
  Array by_pmap = pmap(mixed, {.axis_name = "i"})(x);
  expect_array(by_vmap, to_host(by_pmap), "values");
  auto loss = [](const Array& v) { return jnp::sum(jnp::sin(mixed(v))); };
  Array g_vmap = vmap([&](const Array& v) { return grad(loss)(v); }, {.axis_name = "i"})(x);
  Array g_pmap = pmap([&](const Array& v) { return grad(loss)(v); }, {.axis_name = "i"})(x);
  expect_array(g_vmap, to_host(g_pmap), "gradients", 1e-4);
  // The pmap seed's example: vmap with an axis name is pmap's stand-in on one device.
  Mesh mesh = make_mesh({8}, {"i"});
  Array by_shard_map =
      shard_map([](const Array& b) { return jnp::expand_dims(mixed(b.reshape({8})), {0}); }, mesh,
                P("i"), P("i"))(x);
  expect_array(by_shard_map, to_host(by_pmap), "shard_map");
}

// ---------------------------------------------------------------------------------------
// The tutorial's data-parallel step: value_and_grad inside the map, gradients averaged with
// pmean, parameters broadcast. Equal to the full-batch gradient of the mean squared error.

struct Fit {
  double loss = 0;
  std::vector<double> gw;
  double gb = 0;
};

Fit host_fit(const Host& x, const Host& y, const std::vector<double>& w, double b) {
  const int64_t n = x.shape[0], k = x.shape[1];
  Fit f;
  f.gw.assign(size_t(k), 0.0);
  for (int64_t r = 0; r < n; ++r) {
    double e = b - y.v[size_t(r)];
    for (int64_t c = 0; c < k; ++c) e += x.v[size_t(r * k + c)] * w[size_t(c)];
    f.loss += e * e / double(n);
    for (int64_t c = 0; c < k; ++c) f.gw[size_t(c)] += 2 * e * x.v[size_t(r * k + c)] / double(n);
    f.gb += 2 * e / double(n);
  }
  return f;
}

using Params = std::pair<Array, Array>;  // (w, b)

Array mse(const Params& p, const Array& x, const Array& y) {
  Array e = jnp::dot(x, p.first) + p.second - y;
  return jnp::mean(e * e);
}

// One device's step: the loss and gradient averaged over the axis.
std::pair<Array, Params> step(const Params& p, const Array& x, const Array& y) {
  auto [loss, g] = value_and_grad(mse)(p, x, y);
  return {lax::pmean(loss, "batch"), lax::pmean(g, "batch")};
}

void expect_fit(const std::pair<Array, Params>& got, const Fit& want, const std::string& what) {
  EXPECT_NEAR(got.first.reshape({-1}).to_vector<double>()[0], want.loss, 1e-4 * want.loss) << what;
  expect_host(Host{{3}, got.second.first.reshape({-1}).to_vector<double>()},
              Host{{3}, {want.gw.begin(), want.gw.begin() + 3}}, what + " dw", 1e-4);
  EXPECT_NEAR(got.second.second.reshape({-1}).to_vector<double>()[0], want.gb, 1e-4) << what;
}

TEST(DataParallel, ValueAndGradInsidePmapVmapAndShardMapEqualTheFullBatchGradient) {
  const Host xh = values({32, 3}, 1), yh = values({32}, 2);
  const std::vector<double> w{0.5, -0.25, 0.125};
  const double b = 0.75;
  Host scaled_x = xh;
  for (double& v : scaled_x.v) v /= 32.0;
  const Fit want = host_fit(scaled_x, yh, w, b);
  Params p{jnp::array(std::vector<float>{0.5f, -0.25f, 0.125f}), jnp::array(0.75f)};
  Array x = to_array(scaled_x), y = to_array(yh);
  // pmap: the batch split over 8 devices, the parameters broadcast (in_axes None).
  auto pstep = pmap(step, {.axis_name = "batch", .in_axes = {None, 0, 0}, .out_axes = None});
  expect_fit(pstep(p, x.reshape({8, 4, 3}), y.reshape({8, 4})), want, "pmap");
  // vmap with the same axis name.
  auto vstep = vmap(step, {.in_axes = {None, 0, 0}, .out_axes = None, .axis_name = "batch"});
  expect_fit(vstep(p, x.reshape({8, 4, 3}), y.reshape({8, 4})), want, "vmap");
  // shard_map: parameters replicated (P()), data split by rows; results replicated.
  Mesh mesh = make_mesh({8}, {"batch"});
  auto sstep = shard_map(step, mesh, {P(), P("batch"), P("batch")}, P());
  auto got = sstep(p, x, y);
  expect_fit(got, want, "shard_map");
  EXPECT_EQ(got.second.first.sharding().to_string(), NamedSharding(mesh, P()).to_string());
}

// ---------------------------------------------------------------------------------------
// Result shardings, axis placement and data staying in place.

TEST(Pmap, ResultsAreShardedOverAMeshOfTheFirstNDevices) {
  Array x = to_array(values({4, 3}));
  Array y = pmap([](const Array& v) { return lax::psum(v, "i"); }, {.axis_name = "i"})(x);
  const std::vector<Device> all = local_devices();
  std::vector<Device> first4(all.begin(), all.begin() + 4);
  Mesh mesh(first4, "i");
  EXPECT_EQ(y.sharding().to_string(), NamedSharding(mesh, P("i")).to_string());
  EXPECT_EQ(y.sharding().to_string(), "NamedSharding(mesh=Mesh('i': 4), spec=PartitionSpec('i',))");
  ASSERT_EQ(y.addressable_shards().size(), 4u);
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(y.addressable_shards()[k].device, first4[k]);
    EXPECT_EQ(y.addressable_shards()[k].data.shape(), (Shape{1, 3}));
  }
  // out_axes None: one value, replicated over the mesh.
  Array r = pmap([](const Array& v) { return lax::psum(v, "i"); },
                 {.axis_name = "i", .out_axes = None})(x);
  EXPECT_EQ(r.shape(), (Shape{3}));
  EXPECT_EQ(r.sharding().to_string(), NamedSharding(mesh, P()).to_string());
  expect_array(r, to_host(y[0]), "out_axes None");
  // Without a name the axis is JAX's internal one.
  Array z = pmap([](const Array& v) { return v * 2.0f; })(x);
  EXPECT_EQ(z.sharding().to_string(),
            "NamedSharding(mesh=Mesh('_internal_pmap_axis_name': 4), "
            "spec=PartitionSpec('_internal_pmap_axis_name',))");
}

TEST(Pmap, ExplicitDevicesHoldTheInstancesInTheirOrder) {
  const std::vector<Device> all = local_devices();
  std::vector<Device> reversed(all.rbegin(), all.rend());
  const Host xh = values({8, 2});
  Array y = pmap([](const Array& v) { return lax::ppermute(v, "i", ring(8)); },
                 {.axis_name = "i", .devices = reversed})(to_array(xh));
  Host want = zeros({8, 2});
  for (int64_t k = 0; k < 8; ++k) {
    for (int64_t c = 0; c < 2; ++c) want.v[size_t(k * 2 + c)] = xh.v[size_t(((k + 7) % 8) * 2 + c)];
  }
  expect_array(y, want, "ring over reversed devices");
  EXPECT_EQ(y.sharding().to_string(), NamedSharding(Mesh(reversed, "i"), P("i")).to_string());
  ASSERT_EQ(y.addressable_shards().size(), 8u);
  for (const Shard& s : y.addressable_shards()) {
    // Instance k (rows k:k+1) lives on device 7 - k.
    EXPECT_EQ(s.device.id(), 7 - s.index[0].start.value_or(0)) << s;
  }
}

TEST(Pmap, InAxesAndOutAxesPlaceTheMappedAxis) {
  // x[:, k] is instance k's row; all_gather returns them stacked at axis 0 everywhere.
  const Host xh = values({3, 8});
  Array x = to_array(xh);
  Array g = pmap([](const Array& v) { return lax::all_gather(v, "i"); },
                 {.axis_name = "i", .in_axes = 1, .out_axes = 2})(x);
  Array v = vmap([](const Array& v) { return lax::all_gather(v, "i"); },
                 {.in_axes = 1, .out_axes = 2, .axis_name = "i"})(x);
  ASSERT_EQ(g.shape(), (Shape{8, 3, 8}));
  // g[s, r, k] = x[r, s] for every instance k.
  Host want = zeros({8, 3, 8});
  for (int64_t s = 0; s < 8; ++s) {
    for (int64_t r = 0; r < 3; ++r) {
      for (int64_t k = 0; k < 8; ++k) want.v[size_t((s * 3 + r) * 8 + k)] = xh.v[size_t(r * 8 + s)];
    }
  }
  expect_array(g, want, "pmap");
  expect_array(v, want, "vmap");
}

TEST(Pmap, OutputFeedsTheNextPmapWithOnlyItsOwnCollectives) {
  auto sum = pmap([](const Array& v) { return lax::psum(v, "i"); }, {.axis_name = "i"});
  auto gather =
      pmap([](const Array& v) { return lax::all_gather(v, "i", 0, true); }, {.axis_name = "i"});
  Array y = sum(to_array(values({8, 2})));
  Array z = gather(y);
  EXPECT_EQ(z.sharding().to_string(), y.sharding().to_string());
  // The program for the second pmap, given the first's output: one all-gather, nothing
  // else moves.
  CostAnalysis cost =
      jit([&](const Array& v) { return gather(v); }).lower(y).compile().cost_analysis();
  EXPECT_EQ(cost.collectives, (std::map<std::string, int>{{"all-gather", 1}})) << cost.str();
}

TEST(ShardMap, InvariantResultsMayOmitAxesFromOutSpecs) {
  Mesh mesh = make_mesh({4, 2}, {"i", "j"});
  const Host xh = values({8, 4});
  Array x = to_array(xh);
  // psum over both axes: every device holds the same (2, 2) block.
  Array total = shard_map(
      [](const Array& b) {
        return lax::psum(b, {"i", "j"});
      },
      mesh, P("i", "j"), P())(x);
  Host want = zeros({2, 2});
  for (int64_t r = 0; r < 8; ++r) {
    for (int64_t c = 0; c < 4; ++c) want.v[size_t((r % 2) * 2 + c % 2)] += xh.v[size_t(r * 4 + c)];
  }
  expect_array(total, want, "psum over i, j with P()");
  EXPECT_EQ(total.sharding().to_string(), NamedSharding(mesh, P()).to_string());
  // all_gather over 'j' (tiled): invariant over j, so P('i') is enough; that is x itself.
  Array rows = shard_map([](const Array& b) { return lax::all_gather(b, "j", 1, true); }, mesh,
                         P("i", "j"), P("i"))(x);
  expect_array(rows, xh, "all_gather over j with P('i')");
  EXPECT_EQ(rows.sharding().to_string(), NamedSharding(mesh, P("i")).to_string());
  // pmax over 'i' of a block split over i and j: invariant over i.
  Array top = shard_map([](const Array& b) { return lax::pmax(b, "i"); }, mesh, P("i", "j"),
                        P(None, "j"))(x);
  Host want_top = zeros({2, 4});
  for (size_t i = 0; i < want_top.v.size(); ++i) want_top.v[i] = -1e9;
  for (int64_t r = 0; r < 8; ++r) {
    for (int64_t c = 0; c < 4; ++c) {
      double& t = want_top.v[size_t((r % 2) * 4 + c)];
      t = std::max(t, xh.v[size_t(r * 4 + c)]);
    }
  }
  expect_array(top, want_top, "pmax over i with P(None, 'j')");
  // check_vma=False takes the block of the devices at coordinate 0 of the omitted axes.
  Array first = shard_map([](const Array& b) { return b + 0.0f; }, mesh, P("i", "j"), P("i"),
                          {.check_vma = false})(x);
  Host want_first = zeros({8, 2});
  for (int64_t r = 0; r < 8; ++r) {
    for (int64_t c = 0; c < 2; ++c) want_first.v[size_t(r * 2 + c)] = xh.v[size_t(r * 4 + c)];
  }
  expect_array(first, want_first, "check_vma=False");
}

TEST(ShardMap, JittedCollectivesInsideKeepResultsInvariant) {
  // A psum inside a jitted function called in the region is still a psum for check_vma.
  Mesh mesh = make_mesh({8}, {"i"});
  const Host xh = values({8});
  auto total = jit([](const Array& v) { return lax::psum(v * 2.0f, "i"); });
  Array got =
      shard_map([total](const Array& v) { return total(v); }, mesh, P("i"), P())(to_array(xh));
  double sum = 0;
  for (double v : xh.v) sum += 2 * v;
  expect_array(got, Host{{1}, {sum}}, "psum in jit");
}

// ---------------------------------------------------------------------------------------
// Errors, with JAX's texts.

const char* kUnbound =
    "The following axis names (e.g. defined by pmap) are available to "
    "collective operations: ";

TEST(CollectiveErrors, UnboundAxisNameListsTheBoundOnes) {
  Array x = jnp::ones({8, 2});
  EXPECT_THROW_MSG(pmap([](const Array& v) { return lax::psum(v, "j"); }, {.axis_name = "i"})(x),
                   NameError, std::string("unbound axis name: j. ") + kUnbound + "['i']");
  EXPECT_THROW_MSG(
      vmap([](const Array& v) { return lax::all_gather(v, "j"); }, {.axis_name = "i"})(x),
      NameError, std::string("unbound axis name: j. ") + kUnbound + "['i']");
  auto nested = pmap(
      [](const Array& row) {
        return pmap([](const Array& v) { return lax::axis_index("k"); }, {.axis_name = "j"})(row);
      },
      {.axis_name = "i"});
  EXPECT_THROW_MSG(nested(jnp::ones({4, 2})), NameError,
                   std::string("unbound axis name: k. ") + kUnbound + "['i', 'j']");
  Mesh mesh = make_mesh({4, 2}, {"i", "j"});
  EXPECT_THROW_MSG(shard_map(
                       [](const Array& b) {
                         return lax::pmax(b, {"i", "x"});
                       },
                       mesh, P("i", "j"), P("i", "j"))(x),
                   NameError, std::string("unbound axis name: x. ") + kUnbound + "['i', 'j']");
  EXPECT_THROW_MSG(lax::axis_index("i"), NameError,
                   std::string("unbound axis name: i. ") + kUnbound + "[]");
  EXPECT_THROW_MSG(lax::axis_size("i"), NameError,
                   std::string("unbound axis name: i. ") + kUnbound + "[]");
  EXPECT_THROW_MSG(lax::ppermute(x, "i", {{0, 1}}), NameError,
                   std::string("unbound axis name: i. ") + kUnbound + "[]");
}

TEST(CollectiveErrors, ShapesThatDoNotFitTheAxis) {
  auto under_pmap = [](auto f) { return pmap(f, {.axis_name = "i"})(jnp::ones({4, 6, 3})); };
  EXPECT_THROW_MSG(under_pmap([](const Array& v) { return lax::psum_scatter(v, "i"); }), ValueError,
                   "reduce_scatter operand scatter dimension size 6 must match shard count 4");
  EXPECT_THROW_MSG(
      under_pmap([](const Array& v) { return lax::psum_scatter(v, "i", 0, true); }), ValueError,
      "tiled reduce_scatter operand scatter dimension size 6 must be divisible by shard_count 4");
  EXPECT_THROW_MSG(under_pmap([](const Array& v) { return lax::all_to_all(v, "i", 1, 0); }),
                   ValueError,
                   "all_to_all requires the size of the mapped axis axis_name to equal "
                   "x.shape[split_axis], but they are 4 and 3 respectively.");
  EXPECT_THROW_MSG(
      under_pmap([](const Array& v) { return lax::all_to_all(v, "i", 0, 1, true); }), ValueError,
      "The size of all_to_all split_axis (6) has to be divisible by the size of the named axis "
      "i (4)");
  EXPECT_THROW_MSG(under_pmap([](const Array& v) {
                     return lax::ppermute(v, "i", {{0, 1}, {0, 2}});
                   }),
                   ValueError,
                   "ppermute sources and destinations must be unique, got [(0, 1), (0, 2)].");
  EXPECT_THROW_MSG(under_pmap([](const Array& v) {
                     return lax::ppermute(v, "i", {{0, 1}, {2, 1}});
                   }),
                   ValueError,
                   "ppermute sources and destinations must be unique, got [(0, 1), (2, 1)].");
}

TEST(CollectiveErrors, PmapSizes) {
  auto two = [](const Array& a, const Array& b) { return a + b; };
  EXPECT_THROW_MSG(pmap(two)(jnp::ones({8, 3}), jnp::ones({4, 3})), ValueError,
                   "pmap got inconsistent sizes for array axes to be mapped:\n"
                   "  * one axis had size 8: axis 0 of argument args[0] of type float32[8,3];\n"
                   "  * one axis had size 4: axis 0 of argument args[1] of type float32[4,3]");
  EXPECT_THROW_MSG(pmap([](const Array& v) { return v; })(jnp::ones({9, 2})), ValueError,
                   "compiling computation that requires 9 logical devices, but only 8 XLA "
                   "devices are available (num_replicas=9)");
  // Nested pmaps multiply: 4 x 4 needs 16.
  auto nested = pmap([](const Array& row) { return pmap([](const Array& v) { return v; })(row); });
  EXPECT_THROW_MSG(nested(jnp::ones({4, 4})), ValueError,
                   "compiling computation that requires 16 logical devices, but only 8 XLA "
                   "devices are available (num_replicas=16)");
  EXPECT_THROW_MSG(pmap([](const Array& v) { return v; }, {.in_axes = 2})(jnp::ones({8})),
                   ValueError,
                   "pmap was requested to map its argument along axis 2, which implies that its "
                   "rank should be at least 3, but is only 1 (its shape is (8,))");
  EXPECT_THROW_MSG(pmap([](const Array& v) { return v; }, {.in_axes = None})(jnp::ones({8})),
                   ValueError, "pmap must have at least one non-None value in in_axes");
  EXPECT_THROW_MSG(pmap([](const Array& v) { return v; },
                        {.axis_name = "i", .devices = local_devices()})(jnp::ones({4})),
                   ValueError,
                   "Leading axis size of input to pmapped function must equal the number of "
                   "local devices passed to pmap. Got axis_size=4, num_local_devices=8.");
}

TEST(CollectiveErrors, PmapSizesWhenMostAgree) {
  // JAX lists each size once, the most common first, with an example argument.
  auto three = [](const Array& a, const Array& b, const Array& c) { return a + b + c; };
  EXPECT_THROW_MSG(pmap(three)(jnp::ones({4, 3}), jnp::ones({8, 3}), jnp::ones({8, 3})), ValueError,
                   "pmap got inconsistent sizes for array axes to be mapped:\n"
                   "  * most axes (2 of them) had size 8, e.g. axis 0 of argument args[1] of type "
                   "float32[8,3];\n"
                   "  * one axis had size 4: axis 0 of argument args[0] of type float32[4,3]");
  EXPECT_THROW_MSG(vmap(three)(jnp::ones({4, 3}), jnp::ones({8, 3}), jnp::ones({8, 3})), ValueError,
                   "vmap got inconsistent sizes for array axes to be mapped:\n"
                   "  * most axes (2 of them) had size 8, e.g. axis 0 of argument args[1] of type "
                   "float32[8,3];\n"
                   "  * one axis had size 4: axis 0 of argument args[0] of type float32[4,3]");
}

TEST(CollectiveErrors, ShardMapSpecs) {
  Mesh mesh = make_mesh({4, 2}, {"i", "j"});
  auto id = [](const Array& b) { return b; };
  EXPECT_THROW_MSG(
      shard_map(id, mesh, P("i", "j"), P("i"))(jnp::ones({8})), ValueError,
      "shard_map applied to the function 'f' was given an in_specs entry which is too long to "
      "be compatible with the corresponding input value from the function:\n\n"
      "in_specs is PartitionSpec('i', 'j') which has length 2, but args[0] has shape "
      "float32[8], which has rank 1 (and 1 < 2)\n\n"
      "Entries in in_specs must be of length no greater than the number of axes in the "
      "corresponding input value.\n\n"
      "Either revise the spec to be shorter, or modify 'f' so that its inputs have sufficient "
      "rank.");
  EXPECT_THROW_MSG(shard_map(id, mesh, P("k"), P("i"))(jnp::ones({8})), ValueError,
                   "shard_map in_specs argument must refer to an axis marked as manual "
                   "({i, j}), but:\n\n  in_specs refers to 'k'\n\nCheck the in_specs values "
                   "passed to shard_map.");
  EXPECT_THROW_MSG(shard_map(id, mesh, P("i"), P(None, "k"))(jnp::ones({8, 2})), ValueError,
                   "shard_map out_specs argument must refer to an axis marked as manual "
                   "({i, j}), but:\n\n  out_specs refers to 'k'\n\nCheck the out_specs "
                   "values passed to shard_map.");
}

TEST(CollectiveErrors, ShardMapOutSpecsTooLong) {
  Mesh mesh = make_mesh({4, 2}, {"i", "j"});
  const std::string rank_error =
      "shard_map applied to the function 'f' was given an out_specs entry which is too long to "
      "be compatible with the corresponding output value from the function:\n\n"
      "out_specs is PartitionSpec('i', 'j') which has length 2, but f(*args) has shape "
      "float32[2], "
      "which has rank 1 (and 1 < 2)\n\n"
      "Entries in out_specs must be of length no greater than the number of axes in the "
      "corresponding output value.\n\n"
      "Either revise the spec to be shorter, or modify 'f' so that its outputs have sufficient "
      "rank.";
  // One result (not a tuple): JAX names it out_specs and f(*args), without an index.
  EXPECT_THROW_MSG(shard_map([](const Array& b) { return jnp::sum(b, 1); }, mesh, P("i", None),
                             P("i", "j"))(jnp::ones({8, 3})),
                   ValueError, rank_error);
}

TEST(CollectiveErrors, ShardMapDivisibility) {
  Mesh mesh = make_mesh({4, 2}, {"i", "j"});
  auto id = [](const Array& b) { return b; };
  const std::string head =
      "shard_map applied to the function 'f' was given argument arrays with axis sizes that "
      "are not evenly divisible by the corresponding mesh axis sizes:\n\n"
      "The mesh given has shape (4, 2) with corresponding axis names ('i', 'j').\n\n";
  const std::string tail =
      "\n\nArray arguments' axis sizes must be evenly divisible by the mesh axis or axes "
      "indicated by the corresponding elements of the argument's in_specs entry. Consider "
      "checking that in_specs are correct, and if so consider changing the mesh axis sizes or "
      "else padding the input and adapting 'f' appropriately.";
  EXPECT_THROW_MSG(shard_map(id, mesh, P("i"), P("i"))(jnp::ones({10})), ValueError,
                   head +
                       "args[0] of shape float32[10] corresponds to in_specs of "
                       "value PartitionSpec('i',), which maps array axis 0 (of size 10) to "
                       "mesh axis 'i' "
                       "(of size 4), but 4 does not evenly divide 10" +
                       tail);
  EXPECT_THROW_MSG(
      shard_map(id, mesh, P(None, {"i", "j"}), P(None, {"i", "j"}))(jnp::ones({3, 12})), ValueError,
      head +
          "args[0] of shape float32[3,12] corresponds to in_specs of "
          "value PartitionSpec(None, ('i', 'j')), which maps array axis 1 (of size 12) to mesh "
          "axes ('i', 'j') (of total size 8), but 8 does not evenly divide 12" +
          tail);
}

TEST(CollectiveErrors, ShardMapCheckVma) {
  Mesh mesh = make_mesh({4, 2}, {"i", "j"});
  const std::string head =
      "shard_map applied to the function 'f' was given out_specs which require replication "
      "which can't be statically inferred given the mesh:\n\n"
      "The mesh given has shape (4, 2) with corresponding axis names ('i', 'j').\n\n";
  const std::string tail =
      "\n\nCheck if these output values are meant to be replicated over those mesh axes. If "
      "not, consider revising the corresponding out_specs entries. If so, consider disabling "
      "the check by passing the check_vma=False argument to `jax.shard_map`.";
  // Varies over j (its input does), but P('i') promises it does not.
  EXPECT_THROW_MSG(shard_map([](const Array& b) { return b * 2.0f; }, mesh, P("i", "j"),
                             P("i"))(jnp::ones({8, 4})),
                   ValueError,
                   head +
                       "out_specs is PartitionSpec('i',) which implies that the corresponding "
                       "output value is replicated across mesh axis 'j', but could not infer "
                       "replication "
                       "over any axes" +
                       tail);
  // A collective that leaves the value varying (ppermute, axis_index) is no psum.
  EXPECT_THROW(shard_map(
                   [](const Array& b) {
                     return lax::ppermute(b, "j", {{0, 1}, {1, 0}});
                   },
                   mesh, P("i", None), P("i"))(jnp::ones({8, 4})),
               ValueError);
  EXPECT_THROW(
      shard_map([](const Array& b) { return b + lax::axis_index("j").astype(DType::float32); },
                mesh, P("i"), P("i"))(jnp::ones({8, 4})),
      ValueError);
  // Over (2, 2, 2), P('i') promises replication over j and k; psum over j gives only j.
  Mesh cube = make_mesh({2, 2, 2}, {"i", "j", "k"});
  EXPECT_THROW_MSG(
      shard_map([](const Array& b) { return lax::psum(b, "j"); }, cube, P("i", {"j", "k"}),
                P("i"))(jnp::ones({4, 8})),
      ValueError,
      "shard_map applied to the function 'f' was given out_specs which require replication "
      "which can't be statically inferred given the mesh:\n\n"
      "The mesh given has shape (2, 2, 2) with corresponding axis names ('i', 'j', 'k').\n\n"
      "out_specs is PartitionSpec('i',) which implies that the corresponding output value is "
      "replicated "
      "across mesh axes {j,k}, but could only infer replication over {j}, which is missing "
      "the required axes k" +
          tail);
}

}  // namespace
}  // namespace parax
