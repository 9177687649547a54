// The sharded sweep: every primitive with operands (iota, which has none, is checked
// sharded through the padding masks and in prims/structural_test.cpp), bound on arrays laid out over the meshes (8), (4,2),
// (2,4) and (2,2,2) with a set of specs per rank, gives the single-device values; and
// elementwise primitives keep their operands' sharding.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "core/trace.h"
#include "parax/parax.h"

namespace parax {
namespace {

using core::Params;
using core::Prim;

struct Case {
  std::string name;
  Prim prim;
  std::vector<std::pair<Shape, DType>> inputs;
  Params params;
  double tolerance = 0;  // relative; 0 = exact
};

Array random_input(const Shape& shape, DType dtype, uint32_t seed) {
  std::mt19937 gen(seed);
  const int64_t n = shape_size(shape);
  if (dtype == DType::bool_) {
    std::vector<bool> v(static_cast<size_t>(n));
    for (auto&& b : v) b = gen() % 2;
    return numpy::array(v, shape);
  }
  if (is_floating(dtype)) {
    std::uniform_real_distribution<float> dist(0.1f, 0.9f);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = dist(gen);
    return numpy::array(v, shape, dtype);
  }
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int32_t& x : v) x = int32_t(gen() % 7);
  return numpy::array(v, shape, dtype);
}

Params P_(std::initializer_list<std::pair<std::string, core::ParamValue>> items) {
  return Params(items);
}
std::vector<int64_t> V(std::initializer_list<int64_t> v) { return v; }

std::vector<Case> cases() {
  const Shape m{8, 8};
  const DType f32 = DType::float32, i32 = DType::int32;
  std::vector<Case> out;
  for (Prim p : {Prim::neg, Prim::abs, Prim::sign, Prim::floor, Prim::ceil, Prim::exp,
                 Prim::exp2, Prim::log, Prim::log1p, Prim::expm1, Prim::sin, Prim::cos, Prim::tan,
                 Prim::asin, Prim::acos, Prim::atan, Prim::sinh, Prim::cosh, Prim::tanh,
                 Prim::sqrt, Prim::rsqrt, Prim::cbrt, Prim::logistic, Prim::erf, Prim::erf_inv,
                 Prim::copy, Prim::is_finite}) {
    out.push_back({std::string(core::prim_name(p)), p, {{m, f32}}, {}});
  }
  out.push_back({"round", Prim::round, {{m, f32}}, P_({{"rounding_method", int64_t(1)}})});
  out.push_back({"integer_pow", Prim::integer_pow, {{m, f32}}, P_({{"y", int64_t(3)}})});
  out.push_back({"not", Prim::not_, {{m, i32}}, {}});
  for (Prim p : {Prim::add, Prim::sub, Prim::mul, Prim::div, Prim::max, Prim::min, Prim::pow,
                 Prim::atan2, Prim::nextafter, Prim::eq, Prim::ne, Prim::lt, Prim::le, Prim::gt,
                 Prim::ge}) {
    out.push_back({std::string(core::prim_name(p)), p, {{m, f32}, {m, f32}}, {}});
  }
  for (Prim p : {Prim::rem, Prim::and_, Prim::or_, Prim::xor_, Prim::shift_left,
                 Prim::shift_right_logical, Prim::shift_right_arithmetic}) {
    out.push_back({std::string(core::prim_name(p)), p, {{m, i32}, {m, i32}}, {}});
  }
  out.push_back({"select_n", Prim::select_n, {{m, DType::bool_}, {m, f32}, {m, f32}}, {}});
  out.push_back({"clamp", Prim::clamp, {{{}, f32}, {m, f32}, {{}, f32}}, {}});
  out.push_back({"convert", Prim::convert_element_type, {{m, f32}},
                 P_({{"new_dtype", DType::int32}, {"weak_type", false}})});
  out.push_back({"broadcast_in_dim", Prim::broadcast_in_dim, {{{8}, f32}},
                 P_({{"shape", V({8, 8})}, {"broadcast_dimensions", V({0})}})});
  out.push_back({"reshape_merge", Prim::reshape, {{m, f32}}, P_({{"new_sizes", V({64})}})});
  out.push_back({"reshape_split", Prim::reshape, {{m, f32}}, P_({{"new_sizes", V({2, 4, 8})}})});
  out.push_back({"transpose", Prim::transpose, {{m, f32}}, P_({{"permutation", V({1, 0})}})});
  out.push_back({"squeeze", Prim::squeeze, {{{8, 1, 8}, f32}}, P_({{"dimensions", V({1})}})});
  out.push_back({"expand_dims", Prim::expand_dims, {{m, f32}}, P_({{"dimensions", V({1})}})});
  out.push_back({"slice", Prim::slice, {{m, f32}},
                 P_({{"start_indices", V({2, 0})}, {"limit_indices", V({6, 8})}, {"strides", V({})}})});
  out.push_back({"dynamic_slice", Prim::dynamic_slice, {{m, f32}, {{}, i32}, {{}, i32}},
                 P_({{"slice_sizes", V({4, 8})}})});
  out.push_back({"dynamic_update_slice", Prim::dynamic_update_slice,
                 {{m, f32}, {{2, 8}, f32}, {{}, i32}, {{}, i32}}, {}});
  out.push_back({"concatenate", Prim::concatenate, {{m, f32}, {m, f32}},
                 P_({{"dimension", int64_t(0)}})});
  out.push_back({"pad", Prim::pad, {{m, f32}, {{}, f32}},
                 P_({{"padding_config", V({1, 2, 0, 0, 0, 1})}})});
  out.push_back({"rev", Prim::rev, {{m, f32}}, P_({{"dimensions", V({0})}})});
  auto dot = [&](std::vector<int64_t> lc, std::vector<int64_t> rc, std::vector<int64_t> lb,
                 std::vector<int64_t> rb) {
    return P_({{"lhs_contracting_dimensions", lc}, {"rhs_contracting_dimensions", rc},
               {"lhs_batch_dimensions", lb}, {"rhs_batch_dimensions", rb},
               {"preferred_element_type", DType::float32}});
  };
  out.push_back({"matmul", Prim::dot_general, {{m, f32}, {m, f32}}, dot({1}, {0}, {}, {}), 1e-5});
  out.push_back({"batched_matmul", Prim::dot_general, {{{2, 8, 8}, f32}, {{2, 8, 8}, f32}},
                 dot({2}, {1}, {0}, {0}), 1e-5});
  for (auto axes : {V({0}), V({1}), V({0, 1})}) {
    for (Prim p : {Prim::reduce_sum, Prim::reduce_max, Prim::reduce_min, Prim::reduce_prod}) {
      out.push_back({std::string(core::prim_name(p)), p, {{m, f32}}, P_({{"axes", axes}}), 1e-5});
    }
  }
  out.push_back({"reduce_or", Prim::reduce_or, {{m, DType::bool_}}, P_({{"axes", V({1})}})});
  out.push_back({"reduce_and", Prim::reduce_and, {{m, DType::bool_}}, P_({{"axes", V({0})}})});
  out.push_back({"argmin", Prim::argmin, {{m, f32}},
                 P_({{"axes", V({0})}, {"index_dtype", DType::int32}})});
  out.push_back({"argmax", Prim::argmax, {{m, f32}},
                 P_({{"axes", V({1})}, {"index_dtype", DType::int32}})});
  out.push_back({"cumsum", Prim::cumsum, {{m, f32}},
                 P_({{"axis", int64_t(0)}, {"reverse", false}}), 1e-5});
  out.push_back({"sort", Prim::sort, {{m, f32}},
                 P_({{"dimension", int64_t(1)}, {"is_stable", true}, {"num_keys", int64_t(1)}})});
  return out;
}

// The specs tried for an array of `rank` on `mesh`: replicated, each axis on each
// dimension, and all axes on the first dimension.
std::vector<PartitionSpec> specs_for(const Mesh& mesh, size_t rank) {
  std::vector<PartitionSpec> out{P()};
  if (rank == 0) return out;
  const auto& names = mesh.axis_names();
  for (size_t d = 0; d < rank && d < 2; ++d) {
    for (const std::string& a : names) {
      std::vector<SpecEntry> e(d + 1, SpecEntry(None));
      e[d] = SpecEntry(a);
      out.push_back(PartitionSpec::from_entries(e));
    }
  }
  if (names.size() >= 2) {
    out.push_back(P(std::vector<std::string>(names.begin(), names.end())));
    if (rank >= 2) out.push_back(P(names[1], names[0]));
  }
  return out;
}

bool divides(const Mesh& mesh, const PartitionSpec& spec, const Shape& shape) {
  for (size_t d = 0; d < spec.size(); ++d) {
    int64_t n = 1;
    for (const auto& a : spec[d].axes()) n *= mesh.axis_size(a);
    if (d >= shape.size() || shape[d] % n != 0) return false;
  }
  return true;
}

void expect_close(const Array& got, const Array& want, double tol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  auto g = got.to_vector<double>();
  auto w = want.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i])) {
      EXPECT_TRUE(std::isnan(g[i])) << what << " at " << i;
    } else if (tol == 0) {
      ASSERT_EQ(g[i], w[i]) << what << " at " << i;
    } else {
      ASSERT_NEAR(g[i], w[i], tol * (1 + std::abs(w[i]))) << what << " at " << i;
    }
  }
}

TEST(ShardedSweep, EveryPrimitiveMatchesSingleDeviceOnEveryMesh) {
  std::vector<Mesh> meshes{make_mesh({8}, {"x"}), make_mesh({4, 2}, {"a", "b"}),
                           make_mesh({2, 4}, {"a", "b"}), make_mesh({2, 2, 2}, {"a", "b", "c"})};
  int runs = 0;
  for (const Case& c : cases()) {
    std::vector<Array> host;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      host.push_back(random_input(c.inputs[i].first, c.inputs[i].second, uint32_t(i + 1)));
    }
    if (c.prim == Prim::dynamic_slice || c.prim == Prim::dynamic_update_slice) {
      host[host.size() - 2] = numpy::array(int32_t(2));  // start indices
      host[host.size() - 1] = numpy::array(int32_t(0));
    }
    std::vector<Array> want = core::bind(c.prim, host, c.params);
    for (const Mesh& mesh : meshes) {
      // The first operand takes each spec; the others are replicated or take the same.
      const Shape& shape0 = c.inputs[0].first;
      for (const PartitionSpec& spec : specs_for(mesh, shape0.size())) {
        if (!divides(mesh, spec, shape0)) continue;
        for (bool same : {true, false}) {
          std::vector<Array> in;
          for (size_t i = 0; i < host.size(); ++i) {
            const Shape& s = c.inputs[i].first;
            PartitionSpec si = (i == 0 || (same && s == shape0)) ? spec : P();
            in.push_back(device_put(host[i], NamedSharding(mesh, si)));
          }
          const std::string what = c.name + " on " + mesh.to_string() + " with " +
                                   spec.to_string() + (same ? " (all)" : " (first)");
          std::vector<Array> got;
          try {
            got = core::bind(c.prim, in, c.params);
          } catch (const Error& e) {
            ADD_FAILURE() << what << ": " << e.what();
            continue;
          }
          ASSERT_EQ(got.size(), want.size()) << what;
          for (size_t r = 0; r < got.size(); ++r) {
            expect_close(got[r], want[r], c.tolerance, what);
            EXPECT_TRUE(got[r].is_committed()) << what;
          }
          if (core::has_trait(c.prim, core::kElementwise) && same &&
              c.inputs[0].first == got[0].shape()) {
            EXPECT_TRUE(got[0].sharding().is_equivalent_to(in[0].sharding(), got[0].ndim()))
                << what << ": got " << got[0].sharding();
          }
          ++runs;
        }
      }
    }
  }
  EXPECT_GT(runs, 500);
}

}  // namespace
}  // namespace parax
