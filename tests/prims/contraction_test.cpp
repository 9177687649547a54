// The values leg of every row of prims/prim_table.cpp with a naive reference (dot_general,
// the reductions, argmax/argmin, cumsum, sort, and the elementwise primitives that fit no
// simpler reference), over the dtypes each row lists; the corner cases of the reductions,
// argmax/argmin, cumsum and sort; their sharding rules and errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <random>

#include "base/dtype_dispatch.h"
#include "core/rules.h"
#include "parax/errors.h"
#include "prims/prim_table.h"
#include "support/kernel_harness.h"

namespace parax {
namespace {

using core::Aval;
using core::Params;
using core::Prim;
using testing::HostBuffer;
using testing::run_kernel;
using Ints = std::vector<int64_t>;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Returns a buffer of `dtype` holding `values` converted as numpy's astype does.
HostBuffer make(DType dtype, const Shape& shape, const std::vector<double>& values) {
  HostBuffer b{Aval{shape, dtype, false},
               std::vector<uint8_t>(values.size() * size_t(dtype_itemsize(dtype)))};
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = reinterpret_cast<T*>(b.bytes.data());
    for (size_t i = 0; i < values.size(); ++i) p[i] = scalar_cast<T>(values[i]);
  });
  return b;
}

std::vector<double> doubles(const HostBuffer& b) {
  std::vector<double> out(size_t(b.aval.size()));
  dispatch_dtype(b.aval.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* p = reinterpret_cast<const T*>(b.bytes.data());
    for (size_t i = 0; i < out.size(); ++i) out[i] = scalar_cast<double>(p[i]);
  });
  return out;
}

// Returns `v` rounded to `dtype` (integers wrap), as a double.
double round_to(DType dtype, double v) {
  return dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    return scalar_cast<double>(scalar_cast<T>(v));
  });
}

// Small values exact in every dtype: integers in [lo, hi], or uniform floats in [lo, hi].
std::vector<double> random_values(DType dtype, int64_t n, unsigned seed, double lo = -2,
                                  double hi = 2) {
  std::mt19937 gen(seed);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) {
    if (dtype == DType::bool_) {
      x = double(gen() % 2);
    } else if (is_floating(dtype)) {
      x = std::uniform_real_distribution<double>(lo, hi)(gen);
    } else {
      const double l = is_unsigned_integer(dtype) ? std::max(0.0, lo) : lo;
      x = double(std::uniform_int_distribution<int64_t>(int64_t(l), int64_t(hi))(gen));
    }
  }
  return v;
}

// Relative tolerance of a float result against a double reference, per unit of the
// reference's sum of magnitudes.
double tolerance(DType dtype) {
  switch (dtype) {
    case DType::float64:
      return 1e-12;
    case DType::float32:
      return 2e-6;
    case DType::float16:
      return 2e-3;
    case DType::bfloat16:
      return 1.6e-2;
    default:
      return 0;
  }
}

// Returns c's operands with `dtype` in place of the first operand's (in every operand of
// that dtype).
std::vector<prim_table::Operand> with_dtype(const prim_table::Case& c, DType dtype) {
  std::vector<prim_table::Operand> ops = c.operands;
  for (prim_table::Operand& o : ops) {
    if (o.dtype == c.operands[0].dtype) o.dtype = dtype;
  }
  return ops;
}

// Floats within the reference's tolerance, or exactly the reference rounded where its scale
// is 0; integers exactly.
void expect_matches(const std::vector<HostBuffer>& outs, const std::vector<double>& want,
                    const std::vector<double>& scale) {
  std::vector<double> got;
  std::vector<DType> dtypes;
  for (const HostBuffer& out : outs) {
    const std::vector<double> v = doubles(out);
    got.insert(got.end(), v.begin(), v.end());
    dtypes.insert(dtypes.end(), v.size(), out.aval.dtype);
  }
  ASSERT_EQ(got.size(), want.size());
  ASSERT_EQ(scale.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const double w =
        scale[i] == 0 || !is_floating(dtypes[i]) ? round_to(dtypes[i], want[i]) : want[i];
    if (scale[i] == 0 || std::isnan(w) || std::isinf(w)) {
      EXPECT_TRUE(std::isnan(w) ? std::isnan(got[i]) : got[i] == w)
          << "at " << i << ": " << got[i] << " vs " << w;
      continue;
    }
    EXPECT_LE(std::abs(got[i] - w), tolerance(dtypes[i]) * scale[i])
        << "at " << i << ": " << got[i] << " vs " << w;
  }
}

// The values leg for each row of prims/prim_table.cpp with a naive reference, in its own
// dtypes and then in each of the row's other dtypes, on random operands in the rows' ranges.
TEST(NaiveReference, KernelsMatch) {
  int checked = 0;
  for (const prim_table::Case& c : prim_table::cases()) {
    if (!c.has(prim_table::kValues) || c.ref.naive == nullptr) continue;
    std::vector<DType> dtypes = {c.operands.empty() ? DType::float32 : c.operands[0].dtype};
    dtypes.insert(dtypes.end(), c.ref.dtypes.begin(), c.ref.dtypes.end());
    for (DType dtype : dtypes) {
      SCOPED_TRACE(c.name + " in " + std::string(dtype_name(dtype)));
      std::vector<HostBuffer> in;
      std::vector<std::vector<double>> values;
      std::vector<Aval> avals;
      const std::vector<prim_table::Operand> ops = with_dtype(c, dtype);
      for (size_t i = 0; i < ops.size(); ++i) {
        const prim_table::Operand& o = ops[i];
        in.push_back(make(o.dtype, o.shape,
                          o.values.empty() ? random_values(o.dtype, shape_size(o.shape),
                                                           unsigned(i + 1), o.lo, o.hi)
                                           : o.values));
        values.push_back(doubles(in.back()));
        avals.push_back(in.back().aval);
      }
      const std::vector<HostBuffer> outs = run_kernel(c.prim, in, c.params);
      std::vector<Aval> out_avals;
      for (const HostBuffer& out : outs) out_avals.push_back(out.aval);
      ASSERT_EQ(out_avals, core::abstract_eval(c.prim, avals, c.params));
      std::vector<double> scale;
      const std::vector<double> want = c.ref.naive(c, values, out_avals, scale);
      expect_matches(outs, want, scale);
      ++checked;
    }
  }
  EXPECT_GT(checked, 400);
}

TEST(ContractionDot, IntegerOverflowWrapsAround) {
  // 2^20 * 2^20 * 4 overflows int32 several times over.
  const HostBuffer a = make(DType::int32, {1, 4}, {1 << 20, 1 << 20, 1 << 20, 3});
  const HostBuffer b = make(DType::int32, {4, 1}, {1 << 20, 1 << 20, 1 << 20, 5});
  const Params p{{"lhs_contracting_dimensions", Ints{1}},
                 {"rhs_contracting_dimensions", Ints{0}},
                 {"lhs_batch_dimensions", Ints{}},
                 {"rhs_batch_dimensions", Ints{}}};
  EXPECT_EQ(run_kernel(Prim::dot_general, {a, b}, p)[0].values<int32_t>(),
            std::vector<int32_t>{int32_t(uint32_t(3ull * (1ull << 40) + 15))});
}

// ---------------------------------------------------------------------------------------
// Reductions

TEST(ContractionReduce, EmptyReductionsGiveIdentities) {
  const HostBuffer f = make(DType::float32, {2, 0}, {});
  const HostBuffer i = make(DType::int8, {2, 0}, {});
  const Params p{{"axes", Ints{1}}};
  EXPECT_EQ(run_kernel(Prim::reduce_sum, {f}, p)[0].values<float>(), (std::vector<float>{0, 0}));
  EXPECT_EQ(run_kernel(Prim::reduce_prod, {f}, p)[0].values<float>(), (std::vector<float>{1, 1}));
  EXPECT_EQ(run_kernel(Prim::reduce_max, {f}, p)[0].values<float>()[0], -INFINITY);
  EXPECT_EQ(run_kernel(Prim::reduce_min, {f}, p)[0].values<float>()[0], INFINITY);
  EXPECT_EQ(run_kernel(Prim::reduce_max, {i}, p)[0].values<int8_t>()[0], -128);
  EXPECT_EQ(run_kernel(Prim::reduce_min, {i}, p)[0].values<int8_t>()[0], 127);
  EXPECT_EQ(run_kernel(Prim::reduce_and, {i}, p)[0].values<int8_t>()[0], -1);
  EXPECT_EQ(run_kernel(Prim::reduce_or, {i}, p)[0].values<int8_t>()[0], 0);
}

TEST(ContractionReduce, MaxAndMinPropagateNaN) {
  const HostBuffer x = make(DType::float32, {2, 3}, {1, kNaN, 3, -kInf, 2, kNaN});
  for (Prim prim : {Prim::reduce_max, Prim::reduce_min}) {
    const std::vector<float> rows =
        run_kernel(prim, {x}, Params{{"axes", Ints{1}}})[0].values<float>();
    EXPECT_TRUE(std::isnan(rows[0]) && std::isnan(rows[1]));
    const std::vector<float> cols =
        run_kernel(prim, {x}, Params{{"axes", Ints{0}}})[0].values<float>();
    EXPECT_EQ(cols[0], prim == Prim::reduce_max ? 1.0f : -INFINITY);
    EXPECT_TRUE(std::isnan(cols[1]) && std::isnan(cols[2]));
  }
}

TEST(ContractionReduce, LongFloat32SumsStayAccurate) {
  // A serial float32 sum of 2^22 copies of 0.1 is off by ~6%; the pairwise tree is not.
  const int64_t n = int64_t(1) << 22;
  const HostBuffer x = HostBuffer::of<float>({n}, std::vector<float>(size_t(n), 0.1f));
  const double exact = double(0.1f) * double(n);
  const float all =
      run_kernel(Prim::reduce_sum, {x}, Params{{"axes", Ints{0}}})[0].values<float>()[0];
  EXPECT_NEAR(all, exact, exact * 1e-6);
  // Column sums of [4096, 64] go through the row-pairwise path.
  const HostBuffer m = HostBuffer::of<float>({4096, 64}, std::vector<float>(4096 * 64, 0.1f));
  const HostBuffer cols = run_kernel(Prim::reduce_sum, {m}, Params{{"axes", Ints{0}}})[0];
  for (float col : cols.values<float>()) {
    EXPECT_NEAR(col, double(0.1f) * 4096, 4096 * 0.1 * 1e-6);
  }
}

// ---------------------------------------------------------------------------------------
// argmax / argmin

TEST(ContractionArg, TiesGoFirstAndNaNWins) {
  const HostBuffer x = make(DType::float32, {2, 4}, {1, 3, 3, 2, 1, kNaN, 5, kNaN});
  const Params rows{{"axes", Ints{1}}, {"index_dtype", DType::int32}};
  EXPECT_EQ(run_kernel(Prim::argmax, {x}, rows)[0].values<int32_t>(), (std::vector<int32_t>{1, 1}));
  EXPECT_EQ(run_kernel(Prim::argmin, {x}, rows)[0].values<int32_t>(), (std::vector<int32_t>{0, 1}));
  const Params cols{{"axes", Ints{0}}, {"index_dtype", DType::int64}};
  EXPECT_EQ(run_kernel(Prim::argmax, {x}, cols)[0].values<int64_t>(),
            (std::vector<int64_t>{0, 1, 1, 1}));
  EXPECT_EQ(run_kernel(Prim::argmin, {x}, cols)[0].values<int64_t>(),
            (std::vector<int64_t>{0, 1, 0, 1}));
  // -0.0 and 0.0 tie.
  const HostBuffer zeros = make(DType::float32, {2, 2}, {-0.0, 0.0, 0.0, -0.0});
  EXPECT_EQ(run_kernel(Prim::argmax, {zeros}, rows)[0].values<int32_t>(),
            (std::vector<int32_t>{0, 0}));
  EXPECT_EQ(run_kernel(Prim::argmin, {zeros}, rows)[0].values<int32_t>(),
            (std::vector<int32_t>{0, 0}));
}

// ---------------------------------------------------------------------------------------
// cumsum

TEST(ContractionCumsum, EmptyAndRankOne) {
  const HostBuffer e = make(DType::float32, {0, 3}, {});
  EXPECT_EQ(
      run_kernel(Prim::cumsum, {e}, Params{{"axis", int64_t{0}}, {"reverse", false}})[0].aval.shape,
      (Shape{0, 3}));
  const HostBuffer x = make(DType::int32, {4}, {1, 2, 3, 4});
  EXPECT_EQ(run_kernel(Prim::cumsum, {x}, Params{{"axis", int64_t{0}}, {"reverse", true}})[0]
                .values<int32_t>(),
            (std::vector<int32_t>{10, 9, 7, 4}));
}

// ---------------------------------------------------------------------------------------
// sort

Params sort_params(int64_t dimension, int64_t num_keys, bool stable = true) {
  return Params{{"dimension", dimension}, {"is_stable", stable}, {"num_keys", num_keys}};
}

TEST(ContractionSort, StableWithNaNLastAndSignedZerosEqual) {
  const HostBuffer keys = make(DType::float32, {9}, {3, kNaN, 1, 3, 0.0, -0.0, -kInf, -kNaN, 1});
  const HostBuffer vals = make(DType::int32, {9}, {0, 1, 2, 3, 4, 5, 6, 7, 8});
  const std::vector<HostBuffer> out = run_kernel(Prim::sort, {keys, vals}, sort_params(0, 1));
  EXPECT_EQ(out[1].values<int32_t>(), (std::vector<int32_t>{6, 4, 5, 2, 8, 0, 3, 1, 7}));
  const std::vector<float> k = out[0].values<float>();
  EXPECT_FALSE(std::signbit(k[1]));
  EXPECT_TRUE(std::signbit(k[2]) && k[2] == 0);
  EXPECT_TRUE(std::isnan(k[7]) && std::isnan(k[8]));
}

TEST(ContractionSort, TwoKeysSortLexicographically) {
  const HostBuffer k0 = make(DType::int32, {5}, {2, 1, 2, 1, 2});
  const HostBuffer k1 = make(DType::float16, {5}, {5, 4, 3, 2, 1});
  const HostBuffer v = make(DType::uint8, {5}, {0, 1, 2, 3, 4});
  const std::vector<HostBuffer> out = run_kernel(Prim::sort, {k0, k1, v}, sort_params(0, 2));
  EXPECT_EQ(doubles(out[0]), (std::vector<double>{1, 1, 2, 2, 2}));
  EXPECT_EQ(doubles(out[1]), (std::vector<double>{2, 4, 1, 3, 5}));
  EXPECT_EQ(doubles(out[2]), (std::vector<double>{3, 1, 4, 2, 0}));
}

TEST(ContractionSort, UnstableSortStillSorts) {
  const HostBuffer keys = make(DType::float64, {100}, random_values(DType::float64, 100, 4));
  const HostBuffer out = run_kernel(Prim::sort, {keys}, sort_params(0, 1, false))[0];
  const std::vector<double> got = doubles(out);
  std::vector<double> want = doubles(keys);
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want);
}

// ---------------------------------------------------------------------------------------
// Sharding rules

std::string rule_str(Prim p, std::vector<Aval> in, const Params& params) {
  const std::vector<Aval> out = core::abstract_eval(p, in, params);
  return core::sharding_rule(p, in, out, params).str();
}

TEST(ContractionShardingRule, Strings) {
  const Aval m{{4, 8}, DType::float32, false};
  const Aval n{{8, 2}, DType::float32, false};
  const Params matmul{{"lhs_contracting_dimensions", Ints{1}},
                      {"rhs_contracting_dimensions", Ints{0}},
                      {"lhs_batch_dimensions", Ints{}},
                      {"rhs_batch_dimensions", Ints{}}};
  EXPECT_EQ(rule_str(Prim::dot_general, {m, n}, matmul), "([i, k], [k, j]) -> ([i, j]) {sum}");
  const Params batched{{"lhs_contracting_dimensions", Ints{2}},
                       {"rhs_contracting_dimensions", Ints{1}},
                       {"lhs_batch_dimensions", Ints{0}},
                       {"rhs_batch_dimensions", Ints{0}}};
  const Aval a{{3, 4, 8}, DType::float32, false}, b{{3, 8, 2}, DType::float32, false};
  EXPECT_EQ(rule_str(Prim::dot_general, {a, b}, batched),
            "([i, j, l], [i, l, k]) -> ([i, j, k]) {sum}");
  const Aval bits{{4, 8}, DType::bool_, false}, bits2{{8, 2}, DType::bool_, false};
  EXPECT_EQ(rule_str(Prim::dot_general, {bits, bits2}, matmul),
            "([i, k], [k, j]) -> ([i, j]) {or}");
  const Params outer{{"lhs_contracting_dimensions", Ints{}},
                     {"rhs_contracting_dimensions", Ints{}},
                     {"lhs_batch_dimensions", Ints{}},
                     {"rhs_batch_dimensions", Ints{}}};
  EXPECT_EQ(rule_str(Prim::dot_general, {m, n}, outer), "([i, j], [k, l]) -> ([i, j, k, l])");

  const Aval x{{4, 8, 2}, DType::float32, false};
  EXPECT_EQ(rule_str(Prim::reduce_sum, {x}, Params{{"axes", Ints{1}}}),
            "([i, j, k]) -> ([i, k]) {sum}");
  EXPECT_EQ(rule_str(Prim::reduce_max, {x}, Params{{"axes", Ints{0, 2}}}),
            "([i, j, k]) -> ([j]) {max}");
  EXPECT_EQ(rule_str(Prim::reduce_or, {bits}, Params{{"axes", Ints{}}}), "([i, j]) -> ([i, j])");
  EXPECT_EQ(rule_str(Prim::argmax, {x}, Params{{"axes", Ints{1}}, {"index_dtype", DType::int32}}),
            "([i, _, j]) -> ([i, j])");
  EXPECT_EQ(rule_str(Prim::cumsum, {x}, Params{{"axis", int64_t{0}}, {"reverse", false}}),
            "([_, i, j]) -> ([_, i, j])");
  EXPECT_EQ(rule_str(Prim::sort, {m, m}, sort_params(1, 1)),
            "([i, _], [i, _]) -> ([i, _], [i, _])");
}

// ---------------------------------------------------------------------------------------
// Shape and dtype rules

TEST(ContractionAbstractEval, ResultTypes) {
  const Params batched{{"lhs_contracting_dimensions", Ints{1}},
                       {"rhs_contracting_dimensions", Ints{2}},
                       {"lhs_batch_dimensions", Ints{2}},
                       {"rhs_batch_dimensions", Ints{0}}};
  const Aval lhs{{5, 3, 2}, DType::bfloat16, false}, rhs{{2, 7, 3}, DType::bfloat16, false};
  EXPECT_EQ(core::abstract_eval(Prim::dot_general, std::vector{lhs, rhs}, batched)[0].str(),
            "bfloat16[2,5,7]");
  const Aval weak{{3, 4}, DType::float32, true};
  const Aval r = core::abstract_eval(Prim::reduce_sum, std::vector{weak}, {{"axes", Ints{0}}})[0];
  EXPECT_EQ(r, (Aval{{4}, DType::float32, true}));
  const Aval i = core::abstract_eval(Prim::argmin, std::vector{weak},
                                     {{"axes", Ints{1}}, {"index_dtype", DType::int64}})[0];
  EXPECT_EQ(i, (Aval{{3}, DType::int64, false}));
}

template <class E>
void expect_error(Prim p, std::vector<Aval> in, const Params& params, const std::string& text) {
  try {
    core::abstract_eval(p, in, params);
    ADD_FAILURE() << "no error; expected: " << text;
  } catch (const E& e) {
    EXPECT_EQ(std::string(e.what()), text);
  }
}

TEST(ContractionAbstractEval, Errors) {
  const Aval f{{2, 3}, DType::float32, false}, i{{3, 4}, DType::int32, false};
  const Aval g{{4, 5}, DType::float32, false};
  const Aval bits{{3}, DType::bool_, false};
  auto dot = [](Ints lc, Ints rc, Ints lb = {}, Ints rb = {}) {
    return Params{{"lhs_contracting_dimensions", lc},
                  {"rhs_contracting_dimensions", rc},
                  {"lhs_batch_dimensions", lb},
                  {"rhs_batch_dimensions", rb}};
  };
  expect_error<TypeError>(Prim::dot_general, {f, i}, dot({1}, {0}),
                          "dot_general requires arguments to have the same dtypes, got float32, "
                          "int32.");
  expect_error<TypeError>(Prim::dot_general, {f, g}, dot({1}, {0}),
                          "dot_general requires contracting dimensions to have the same shape, "
                          "got (3,) and (4,).");
  expect_error<TypeError>(Prim::dot_general, {f, g}, dot({2}, {0}),
                          "dot_general requires lhs dimension numbers to be nonnegative and less "
                          "than the number of axes of the lhs value, got lhs_batch of () and "
                          "lhs_contracting of (2,) for lhs of rank 2");
  expect_error<TypeError>(Prim::dot_general, {f, g}, dot({}, {}, {0}, {0}),
                          "dot_general requires lhs batch dimensions and rhs batch dimensions to "
                          "have the same shape, got (2,) and (4,).");
  expect_error<TypeError>(Prim::dot_general, {f, g}, dot({}, {}, {0}, {}),
                          "dot_general requires equal numbers of lhs_batch and rhs_batch "
                          "dimensions, got lhs_batch (0,) and rhs_batch ().");
  expect_error<TypeError>(Prim::dot_general, {f, f}, dot({0}, {0}, {0}, {1}),
                          "dot_general requires lhs batch dimensions to be disjoint from "
                          "contracting dimensions, got lhs_batch (0,) and lhs_contracting (0,).");
  Params to_int = dot({1}, {0});
  to_int.set("preferred_element_type", DType::int32);
  expect_error<TypeError>(Prim::dot_general, {f, Aval{{3, 2}, DType::float32, false}}, to_int,
                          "Input type is incompatible with `preferred_element_type`. The "
                          "compatible combinations of (input_type, preferred_element_type) are "
                          "(integral, integral), (integral, floating), (floating, floating), "
                          "(complex, complex.");

  expect_error<TypeError>(Prim::reduce_sum, {bits}, {{"axes", Ints{0}}},
                          "reduce_sum does not accept dtype bool. Accepted dtypes are subtypes "
                          "of number.");
  expect_error<ValueError>(Prim::reduce_max, {f}, {{"axes", Ints{0, 0}}},
                           "duplicate value in 'axes' of reduction: (0, 0)");
  expect_error<ValueError>(Prim::reduce_min, {f}, {{"axes", Ints{2}}},
                           "reduction axes (2,) contains out-of-bounds indices for float32[2,3].");
  expect_error<TypeError>(Prim::reduce_and, {f}, {{"axes", Ints{0}}},
                          "logical reduction requires operand dtype bool or int, got float32.");
  expect_error<ValueError>(Prim::argmax, {Aval{{3, 0}, DType::float32, false}},
                           {{"axes", Ints{1}}, {"index_dtype", DType::int32}},
                           "argmin and argmax require non-empty reduced dimension. "
                           "operand.shape=(3, 0) axis=1");
  expect_error<TypeError>(Prim::argmin, {f}, {{"axes", Ints{1}}, {"index_dtype", DType::float32}},
                          "index_dtype must be an integer type, but got float32");
  expect_error<ValueError>(Prim::argmax, {f}, {{"axes", Ints{0, 1}}, {"index_dtype", DType::int32}},
                           "[argmax] axes: got (0, 1); expected exactly one axis");
  expect_error<ValueError>(Prim::cumsum, {f}, {{"axis", int64_t{2}}, {"reverse", false}},
                           "axis 2 is out of bounds for array of shape (2, 3)");
  expect_error<TypeError>(Prim::cumsum, {bits}, {{"axis", int64_t{0}}, {"reverse", false}},
                          "cumsum does not accept dtype bool. Accepted dtypes are subtypes of "
                          "number.");
  expect_error<TypeError>(Prim::sort, {bits, Aval{{4}, DType::int32, false}}, sort_params(0, 1),
                          "Arguments to sort must have equal shapes, got: (3,) (4,)");
  expect_error<ValueError>(Prim::sort, {f, f}, sort_params(0, 3),
                           "num_keys=3 must be between 1 and len(operand)=2");
  expect_error<ValueError>(Prim::sort, {f}, sort_params(2, 1),
                           "[sort] dimension: got 2 for operands of rank 2; expected 0 <= "
                           "dimension < 2");
}

}  // namespace
}  // namespace parax
