// Kernels of dot_general (the values leg of the sweep's dot_general rows in
// prims/prim_table.cpp), the reductions over every axes combination, argmax/argmin, cumsum
// and sort against naive references (double or wrapping 64-bit accumulation), plus their
// sharding rules and errors.
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
  HostBuffer b{Aval{shape, dtype, false}, std::vector<uint8_t>(values.size() *
                                                               size_t(dtype_itemsize(dtype)))};
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
double wrap_to(DType dtype, uint64_t v) {
  return dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      return double(static_cast<T>(v));
    } else {
      return double(v != 0);
    }
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
    case DType::float64: return 1e-12;
    case DType::float32: return 2e-6;
    case DType::float16: return 2e-3;
    case DType::bfloat16: return 1.6e-2;
    default: return 0;
  }
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want,
                  const std::vector<double>& scale, DType dtype, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i]) || std::isinf(want[i])) {
      EXPECT_TRUE(std::isnan(want[i]) ? std::isnan(got[i]) : got[i] == want[i])
          << what << " at " << i << ": " << got[i] << " vs " << want[i];
      continue;
    }
    EXPECT_LE(std::abs(got[i] - want[i]), tolerance(dtype) * scale[i])
        << what << " at " << i << ": " << got[i] << " vs " << want[i];
  }
}

std::vector<int64_t> strides(const Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
}

// Calls f(multi_index) for every index of `shape`, in row-major order.
template <class F>
void for_each_index(const Shape& shape, F&& f) {
  if (shape_size(shape) == 0) return;
  Ints idx(shape.size(), 0);
  while (true) {
    f(idx);
    size_t d = shape.size();
    while (d > 0 && ++idx[d - 1] == shape[d - 1]) idx[--d] = 0;
    if (d == 0) return;
  }
}

// ---------------------------------------------------------------------------------------
// dot_general

// The values leg of the sweep for dot_general: each row of prims/prim_table.cpp with a
// naive reference, on random operands (integers in [-2, 2], floats uniform there).
TEST(ContractionDot, KernelMatchesNaiveReference) {
  int checked = 0;
  for (const prim_table::Case& c : prim_table::cases()) {
    if (!c.has(prim_table::kValues) || c.ref.naive == nullptr) continue;
    SCOPED_TRACE(c.name);
    std::vector<HostBuffer> in;
    std::vector<std::vector<double>> values;
    for (size_t i = 0; i < c.operands.size(); ++i) {
      const prim_table::Operand& o = c.operands[i];
      in.push_back(make(o.dtype, o.shape,
                        random_values(o.dtype, shape_size(o.shape), unsigned(i + 1))));
      values.push_back(doubles(in.back()));
    }
    const HostBuffer out = run_kernel(c.prim, in, c.params)[0];
    const DType out_dtype = c.params.has("preferred_element_type")
                                ? c.params.get<DType>("preferred_element_type")
                                : c.operands[0].dtype;
    ASSERT_EQ(out.aval.dtype, out_dtype);
    std::vector<double> scale;
    const std::vector<double> want = c.ref.naive(c, values, out.aval, scale);
    if (is_floating(out_dtype)) {
      expect_close(doubles(out), want, scale, out_dtype, c.name);
    } else {
      EXPECT_EQ(doubles(out), want);
    }
    ++checked;
  }
  EXPECT_GT(checked, 30);
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

// Naive reduction: doubles for floats and comparisons, wrapping uint64 for integer
// arithmetic and bitwise ops.
std::vector<double> reduce_reference(Prim prim, const HostBuffer& x, const Ints& axes,
                                     std::vector<double>* scale) {
  const DType dt = x.aval.dtype;
  Shape out_shape;
  for (size_t d = 0; d < x.aval.shape.size(); ++d) {
    if (!std::count(axes.begin(), axes.end(), int64_t(d))) out_shape.push_back(x.aval.shape[d]);
  }
  const size_t n = size_t(shape_size(out_shape));
  const bool arith = prim == Prim::reduce_sum || prim == Prim::reduce_prod;
  const bool bits = prim == Prim::reduce_and || prim == Prim::reduce_or;
  double init = 0;
  if (prim == Prim::reduce_prod) init = 1;
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_arithmetic_v<T>) {
      if (prim == Prim::reduce_max) init = double(std::numeric_limits<T>::lowest());
      if (prim == Prim::reduce_min) init = double(std::numeric_limits<T>::max());
    }
  });
  if (is_floating(dt) && prim == Prim::reduce_max) init = -kInf;
  if (is_floating(dt) && prim == Prim::reduce_min) init = kInf;
  std::vector<double> acc(n, init), mag(n, prim == Prim::reduce_prod ? 1 : 0);
  std::vector<uint64_t> wrapped(n, prim == Prim::reduce_prod ? 1 : 0);
  if (prim == Prim::reduce_and) std::fill(wrapped.begin(), wrapped.end(), ~uint64_t(0));
  const std::vector<double> v = doubles(x);
  size_t i = 0;
  for_each_index(x.aval.shape, [&](const Ints& idx) {
    size_t o = 0;
    for (size_t d = 0; d < idx.size(); ++d) {
      if (!std::count(axes.begin(), axes.end(), int64_t(d))) {
        o = o * size_t(x.aval.shape[d]) + size_t(idx[d]);
      }
    }
    const double e = v[i++];
    const uint64_t u = uint64_t(int64_t(e));
    switch (prim) {
      case Prim::reduce_sum: acc[o] += e, mag[o] += std::abs(e), wrapped[o] += u; break;
      case Prim::reduce_prod: acc[o] *= e, mag[o] *= std::abs(e), wrapped[o] *= u; break;
      case Prim::reduce_max:
        acc[o] = (std::isnan(acc[o]) || e <= acc[o]) && !std::isnan(e) ? acc[o] : e;
        break;
      case Prim::reduce_min:
        acc[o] = (std::isnan(acc[o]) || e >= acc[o]) && !std::isnan(e) ? acc[o] : e;
        break;
      case Prim::reduce_and: wrapped[o] &= u; break;
      default: wrapped[o] |= u; break;
    }
  });
  for (size_t o = 0; o < n; ++o) {
    if ((arith || bits) && !is_floating(dt)) acc[o] = wrap_to(dt, wrapped[o]);
  }
  if (scale) *scale = mag;
  return acc;
}

void check_reduce(Prim prim, DType dtype, const Shape& shape, const Ints& axes,
                  const std::vector<double>& values) {
  const HostBuffer x = make(dtype, shape, values);
  const HostBuffer out = run_kernel(prim, {x}, Params{{"axes", axes}})[0];
  std::vector<double> scale;
  const std::vector<double> want = reduce_reference(prim, x, axes, &scale);
  const std::string what = std::string(core::prim_name(prim)) + " " +
                           std::string(dtype_name(dtype)) + " axes " +
                           ::testing::PrintToString(axes) + " of " +
                           ::testing::PrintToString(shape);
  ASSERT_EQ(out.aval.dtype, dtype) << what;
  if (!is_floating(dtype)) {
    EXPECT_EQ(doubles(out), want) << what;
    return;
  }
  // Sums compare relative to the sum of magnitudes; other ops are exact up to the
  // result's rounding, and products relative to the product of magnitudes.
  for (double& s : scale) s = std::max(s, 1e-30);
  if (prim == Prim::reduce_max || prim == Prim::reduce_min) {
    std::vector<double> rounded = want;
    for (double& w : rounded) w = round_to(dtype, w);
    EXPECT_EQ(::testing::PrintToString(doubles(out)), ::testing::PrintToString(rounded)) << what;
    return;
  }
  expect_close(doubles(out), want, scale, dtype, what);
}

TEST(ContractionReduce, EveryAxesComboMatchesReference) {
  const std::vector<Ints> combos = {{}, {0}, {1}, {2}, {0, 1}, {0, 2}, {1, 2}, {0, 1, 2}};
  const Shape shape = {3, 4, 5};
  const struct {
    Prim prim;
    std::vector<DType> dtypes;
    double lo, hi;
  } ops[] = {
      {Prim::reduce_sum, {DType::float32, DType::float64, DType::float16, DType::int32,
                          DType::uint8, DType::int8}, -50, 100},
      {Prim::reduce_prod, {DType::float32, DType::float64, DType::int32, DType::uint8}, 1, 3},
      {Prim::reduce_max, {DType::float32, DType::bfloat16, DType::int16, DType::uint32,
                          DType::bool_}, -50, 50},
      {Prim::reduce_min, {DType::float64, DType::float16, DType::int64, DType::uint8,
                          DType::bool_}, -50, 50},
      {Prim::reduce_and, {DType::bool_, DType::int32, DType::uint8}, -128, 127},
      {Prim::reduce_or, {DType::bool_, DType::int16, DType::uint64}, -128, 127},
  };
  unsigned seed = 0;
  for (const auto& op : ops) {
    for (DType dt : op.dtypes) {
      // Float products stay near 1 so that float16 cannot overflow.
      const bool float_prod = op.prim == Prim::reduce_prod && is_floating(dt);
      const std::vector<double> v = random_values(dt, shape_size(shape), ++seed,
                                                  float_prod ? 0.9 : op.lo,
                                                  float_prod ? 1.1 : op.hi);
      for (const Ints& axes : combos) check_reduce(op.prim, dt, shape, axes, v);
    }
  }
}

TEST(ContractionReduce, OddShapes) {
  const struct {
    Shape shape;
    Ints axes;
  } cases[] = {
      {{}, {}},                  // rank 0
      {{2, 1, 3, 1}, {1, 2}},    // size-1 dims merge away
      {{6, 5, 4, 3}, {0, 2}},    // two passes
      {{2, 3, 4, 5, 6}, {0, 2, 4}},
      {{3, 0, 2}, {1}},          // empty reduction: identity
      {{3, 0, 2}, {0}},          // empty result
      {{0}, {0}},
      {{7, 300}, {0}},           // more columns than one block
      {{3, 1000}, {1}},
  };
  for (const auto& c : cases) {
    for (Prim prim : {Prim::reduce_sum, Prim::reduce_max, Prim::reduce_min, Prim::reduce_prod}) {
      const DType dt = prim == Prim::reduce_prod ? DType::float64 : DType::float32;
      const double lo = prim == Prim::reduce_prod ? 0.99 : -5;
      const double hi = prim == Prim::reduce_prod ? 1.01 : 5;
      check_reduce(prim, dt, c.shape, c.axes, random_values(dt, shape_size(c.shape), 7, lo, hi));
    }
    check_reduce(Prim::reduce_and, DType::int8, c.shape, c.axes,
                 random_values(DType::int8, shape_size(c.shape), 8, -128, 127));
    check_reduce(Prim::reduce_sum, DType::float16, c.shape, c.axes,
                 random_values(DType::float16, shape_size(c.shape), 9));
  }
}

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
    const std::vector<float> rows = run_kernel(prim, {x}, Params{{"axes", Ints{1}}})[0]
                                        .values<float>();
    EXPECT_TRUE(std::isnan(rows[0]) && std::isnan(rows[1]));
    const std::vector<float> cols = run_kernel(prim, {x}, Params{{"axes", Ints{0}}})[0]
                                        .values<float>();
    EXPECT_EQ(cols[0], prim == Prim::reduce_max ? 1.0f : -INFINITY);
    EXPECT_TRUE(std::isnan(cols[1]) && std::isnan(cols[2]));
  }
}

TEST(ContractionReduce, LongFloat32SumsStayAccurate) {
  // A serial float32 sum of 2^22 copies of 0.1 is off by ~6%; the pairwise tree is not.
  const int64_t n = int64_t(1) << 22;
  const HostBuffer x = HostBuffer::of<float>({n}, std::vector<float>(size_t(n), 0.1f));
  const double exact = double(0.1f) * double(n);
  const float all = run_kernel(Prim::reduce_sum, {x}, Params{{"axes", Ints{0}}})[0]
                        .values<float>()[0];
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

// Naive argmax/argmin with NaN as the extreme and ties to the first index.
std::vector<double> arg_reference(bool is_max, const HostBuffer& x, int64_t axis) {
  const std::vector<double> v = doubles(x);
  const Shape& s = x.aval.shape;
  int64_t p = 1, i = 1;
  for (int64_t d = 0; d < axis; ++d) p *= s[size_t(d)];
  for (size_t d = size_t(axis) + 1; d < s.size(); ++d) i *= s[d];
  const int64_t r = s[size_t(axis)];
  std::vector<double> out;
  for (int64_t a = 0; a < p; ++a) {
    for (int64_t c = 0; c < i; ++c) {
      int64_t best = 0;
      for (int64_t k = 1; k < r; ++k) {
        const double cur = v[size_t((a * r + best) * i + c)], e = v[size_t((a * r + k) * i + c)];
        if (std::isnan(cur)) break;
        if (std::isnan(e) || (is_max ? e > cur : e < cur)) best = k;
      }
      out.push_back(double(best));
    }
  }
  return out;
}

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

TEST(ContractionArg, MatchesReferenceOnEveryAxis) {
  const Shape shape = {4, 5, 300};
  for (DType dt : {DType::float32, DType::float16, DType::int32, DType::uint8, DType::bool_}) {
    // Few distinct values, so ties are common; some NaNs for floats.
    std::vector<double> v = random_values(dt, shape_size(shape), 11, 0, 4);
    if (is_floating(dt)) {
      for (double& e : v) e = std::round(e);
      for (size_t i = 0; i < v.size(); i += 37) v[i] = kNaN;
    }
    const HostBuffer x = make(dt, shape, v);
    for (int64_t axis = 0; axis < 3; ++axis) {
      for (DType index : {DType::int32, DType::uint16}) {
        const Params p{{"axes", Ints{axis}}, {"index_dtype", index}};
        for (bool is_max : {true, false}) {
          const HostBuffer out = run_kernel(is_max ? Prim::argmax : Prim::argmin, {x}, p)[0];
          EXPECT_EQ(out.aval.dtype, index);
          EXPECT_EQ(doubles(out), arg_reference(is_max, x, axis))
              << dtype_name(dt) << " axis " << axis << (is_max ? " argmax" : " argmin");
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------
// cumsum

TEST(ContractionCumsum, MatchesReferenceOnEveryAxisBothDirections) {
  const Shape shape = {3, 4, 300};
  for (DType dt : {DType::float32, DType::float64, DType::float16, DType::int32, DType::uint8}) {
    const HostBuffer x = make(dt, shape, random_values(dt, shape_size(shape), 5, -3, 100));
    const std::vector<double> v = doubles(x);
    for (int64_t axis = 0; axis < 3; ++axis) {
      for (bool reverse : {false, true}) {
        const Params p{{"axis", axis}, {"reverse", reverse}};
        const HostBuffer out = run_kernel(Prim::cumsum, {x}, p)[0];
        // Kernel and reference both accumulate exactly (double / wrapping) and round once.
        std::vector<double> want(v.size());
        const Ints st = strides(shape);
        for_each_index(shape, [&](const Ints& idx) {
          int64_t base = 0;
          for (size_t d = 0; d < 3; ++d) base += (int64_t(d) == axis ? 0 : idx[d]) * st[d];
          double sum = 0;
          uint64_t wrapped = 0;
          const int64_t n = shape[size_t(axis)], at = idx[size_t(axis)];
          const int64_t first = reverse ? at : 0, last = reverse ? n - 1 : at;
          for (int64_t step = 0; step <= last - first; ++step) {
            const int64_t k = reverse ? last - step : first + step;
            sum += v[size_t(base + k * st[size_t(axis)])];
            wrapped += uint64_t(int64_t(v[size_t(base + k * st[size_t(axis)])]));
          }
          want[size_t(base + at * st[size_t(axis)])] =
              is_floating(dt) ? round_to(dt, sum) : wrap_to(dt, wrapped);
        });
        EXPECT_EQ(doubles(out), want) << dtype_name(dt) << " axis " << axis << " " << reverse;
      }
    }
  }
}

TEST(ContractionCumsum, EmptyAndRankOne) {
  const HostBuffer e = make(DType::float32, {0, 3}, {});
  EXPECT_EQ(run_kernel(Prim::cumsum, {e}, Params{{"axis", int64_t{0}}, {"reverse", false}})[0]
                .aval.shape,
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

TEST(ContractionSort, MatchesStableSortOnEveryDimension) {
  const Shape shape = {6, 40};
  for (DType dt : {DType::int8, DType::uint16, DType::float32, DType::bfloat16, DType::bool_,
                   DType::int64, DType::float64}) {
    const HostBuffer keys = make(dt, shape, random_values(dt, shape_size(shape), 3, -9, 9));
    std::vector<double> iota(size_t(shape_size(shape)));
    std::iota(iota.begin(), iota.end(), 0.0);
    const HostBuffer vals = make(DType::int32, shape, iota);
    const std::vector<double> k = doubles(keys);
    for (int64_t dim = 0; dim < 2; ++dim) {
      const std::vector<HostBuffer> out = run_kernel(Prim::sort, {keys, vals}, sort_params(dim, 1));
      std::vector<double> want_k(k.size()), want_v(k.size());
      const int64_t lines = shape[size_t(1 - dim)], n = shape[size_t(dim)];
      const int64_t step = dim == 0 ? shape[1] : 1, line_step = dim == 0 ? 1 : shape[1];
      for (int64_t l = 0; l < lines; ++l) {
        std::vector<int64_t> order(static_cast<size_t>(n));
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
          return k[size_t(l * line_step + a * step)] < k[size_t(l * line_step + b * step)];
        });
        for (int64_t j = 0; j < n; ++j) {
          const size_t to = size_t(l * line_step + j * step);
          const size_t from = size_t(l * line_step + order[size_t(j)] * step);
          want_k[to] = k[from];
          want_v[to] = iota[from];
        }
      }
      EXPECT_EQ(doubles(out[0]), want_k) << dtype_name(dt) << " dim " << dim;
      EXPECT_EQ(doubles(out[1]), want_v) << dtype_name(dt) << " dim " << dim;
    }
  }
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
  EXPECT_EQ(rule_str(Prim::dot_general, {m, n}, outer),
            "([i, j], [k, l]) -> ([i, j, k, l])");

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
                          "(integral, integral), (integral, floating), (floating, floating).");

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
