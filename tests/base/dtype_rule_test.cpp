// The dtype rule (README, "Decisions worth knowing"). Dtypes inferred from C++
// types and the defaults of creation functions follow jax_enable_x64; an explicitly
// requested 64-bit dtype is honoured by every op family in both modes, the result being
// what JAX computes with x64 on. Each test runs with x64 off and on.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "parax/parax.h"
#include "support/errors.h"

namespace parax {
namespace {

namespace np = numpy;

constexpr int64_t kBig = (int64_t(1) << 40) + 5;  // beyond int32

class DtypeRule : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    saved_ = config::read("jax_enable_x64");
    config::update("jax_enable_x64", GetParam());
  }
  void TearDown() override { config::update("jax_enable_x64", saved_); }
  bool x64() const { return GetParam(); }
  // The default int and float: JAX's int_ and float_.
  DType int_() const { return x64() ? DType::int64 : DType::int32; }
  DType float_() const { return x64() ? DType::float64 : DType::float32; }

  Array i64() const { return np::array(std::vector<int64_t>{kBig, -kBig, 7}, std::nullopt, int64); }
  Array f64() const {
    return np::array(std::vector<double>{1e-12 + 1, 2.0, 3.0}, std::nullopt, float64);
  }

 private:
  bool saved_ = false;
};

INSTANTIATE_TEST_SUITE_P(X64, DtypeRule, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "on" : "off"; });

TEST_P(DtypeRule, CreationDefaultsFollowX64AndExplicitDtypesAreHonoured) {
  EXPECT_EQ(np::zeros({2}).dtype(), float_());
  EXPECT_EQ(np::ones({2}).dtype(), float_());
  EXPECT_EQ(np::eye(2).dtype(), float_());
  EXPECT_EQ(np::linspace(0, 1, 3).dtype(), float_());
  EXPECT_EQ(np::arange(3).dtype(), int_());
  EXPECT_EQ(np::arange(0.0, 1.0, 0.5).dtype(), float_());
  EXPECT_EQ(np::array(std::vector<int64_t>{1}).dtype(), int_());
  EXPECT_EQ(np::array(std::vector<double>{1}).dtype(), float_());
  EXPECT_EQ(np::zeros({2}, float32).dtype(), float32);
  EXPECT_EQ(np::zeros({2}, int64).dtype(), int64);
  EXPECT_EQ(np::linspace(0, 1, 3, true, float64).dtype(), float64);
  EXPECT_EQ(np::arange(int64_t(3), int64).dtype(), int64);
  EXPECT_EQ(np::eye(2, std::nullopt, 0, uint64).dtype(), uint64);
  EXPECT_EQ(i64().to_vector<int64_t>(), (std::vector<int64_t>{kBig, -kBig, 7}));
  EXPECT_EQ(np::full_like(i64(), 1).dtype(), int64);
  EXPECT_EQ(np::zeros_like(np::zeros({2}, float32), float64).dtype(), float64);
  EXPECT_EQ(lax::iota(int64, 3).dtype(), int64);
}

TEST_P(DtypeRule, BinaryOpsKeepExplicit64Bit) {
  const Array s = i64() + i64();
  EXPECT_EQ(s.dtype(), int64);
  EXPECT_EQ(s.to_vector<int64_t>(), (std::vector<int64_t>{2 * kBig, -2 * kBig, 14}));
  EXPECT_EQ((f64() + f64()).dtype(), float64);
  EXPECT_EQ((f64() * f64()).to_vector<double>()[0], (1e-12 + 1) * (1e-12 + 1));
  // A C++ scalar is weak: it takes the 64-bit operand's type, even beyond int32.
  EXPECT_EQ((i64() + 1).dtype(), int64);
  EXPECT_EQ((i64() + kBig).to_vector<int64_t>(), (std::vector<int64_t>{2 * kBig, 0, kBig + 7}));
  EXPECT_EQ((f64() * 2.0).dtype(), float64);
  // Mixed with 32-bit operands: JAX's lattice, unnarrowed.
  const Array i32 = np::array({1, 2, 3});
  EXPECT_EQ((i64() + i32).dtype(), int64);
  EXPECT_EQ((i64() + np::array({1u, 2u, 3u})).dtype(), int64);
  EXPECT_EQ((f64() + np::array({1.f, 2.f, 3.f})).dtype(), float64);
  EXPECT_EQ((i64() * np::array({1.f, 2.f, 3.f})).dtype(), float32);  // int64 < float32
  EXPECT_EQ((i64() * 1.5).dtype(), float64);                         // weak float over int64
  EXPECT_EQ((i64() / i64()).dtype(), float64);
  EXPECT_EQ(np::array(std::vector<uint64_t>{1}, std::nullopt, uint64).dtype(), uint64);
  EXPECT_EQ((np::array(std::vector<uint64_t>{1}, std::nullopt, uint64) + i32).dtype(), float64);
  EXPECT_EQ(np::maximum(i64(), 0).to_vector<int64_t>(), (std::vector<int64_t>{kBig, 0, 7}));
  EXPECT_EQ(np::power(f64(), 2).dtype(), float64);
  // Without a 64-bit operand JAX's own rule applies: int32 + uint32 is int32 with x64 off.
  EXPECT_EQ((i32 + np::array({1u, 2u, 3u})).dtype(), int_());
  EXPECT_EQ((i32 + 1.5).dtype(), float_());
  EXPECT_EQ(np::result_type(i64(), 1), int64);
  EXPECT_EQ(np::result_type(i64(), 1.5), float64);
}

TEST_P(DtypeRule, EveryPairOfDtypesComputesInItsResultType) {
  const std::vector<DType> all = {bool_,  int8,   int16,   int32,    int64,   uint8,  uint16,
                                  uint32, uint64, float16, bfloat16, float32, float64};
  for (DType a : all) {
    for (DType c : all) {
      SCOPED_TRACE(std::string(dtype_name(a)) + " with " + std::string(dtype_name(c)));
      const Array x = np::ones({2}, a), y = np::ones({2}, c);
      const DType want = np::result_type(x, y);
      // The rule: 64-bit whenever JAX with x64 gives it and an operand is 64-bit.
      const bool wide =
          a == int64 || a == uint64 || a == float64 || c == int64 || c == uint64 || c == float64;
      const bool wide_result = want == int64 || want == uint64 || want == float64;
      if (!x64() && wide_result) {
        EXPECT_TRUE(wide);
      }
      if (a != bool_ || c != bool_) {
        const Array s = x + y;
        EXPECT_EQ(s.dtype(), want);
        EXPECT_EQ(np::astype(s, float64).to_vector<double>(), (std::vector<double>{2, 2}));
      }
      EXPECT_EQ(np::maximum(x, y).dtype(), want);
      EXPECT_EQ(np::where(np::array({true, false}), x, y).dtype(), want);
      EXPECT_EQ(np::concatenate({x, y}).dtype(), want);
      EXPECT_EQ((x < y).to_vector<bool>(), (std::vector<bool>{false, false}));
    }
  }
}

TEST_P(DtypeRule, A32BitOperandCannotHoldABigCppScalar) {
  const Array i32 = np::array({1, 2, 3});
  if (x64()) {
    // JAX with x64 converts the weak int with wraparound, as lax does.
    EXPECT_EQ((i32 + kBig).dtype(), int32);
  } else {
    // JAX cannot even form the weak int32: OverflowError (ValueError in parax).
    EXPECT_THROW_MSG(i32 + kBig, ValueError,
                     "Python int 1099511627781 too large to convert to int32");
    EXPECT_THROW_MSG(np::add(kBig, 1), ValueError,
                     "Python int 1099511627781 too large to convert to int32");
  }
}

TEST_P(DtypeRule, UnaryAndComparisonOps) {
  EXPECT_EQ(np::negative(i64()).to_vector<int64_t>(), (std::vector<int64_t>{-kBig, kBig, -7}));
  EXPECT_EQ(np::abs(i64()).dtype(), int64);
  EXPECT_EQ(np::exp(f64()).dtype(), float64);
  EXPECT_EQ(np::sin(i64()).dtype(), float64);  // to_inexact(int64) is float64
  EXPECT_EQ(np::sqrt(np::array({4, 9})).dtype(), float32);
  const Array eq = i64() == (i64() + 1);
  EXPECT_EQ(eq.dtype(), bool_);
  EXPECT_EQ(eq.to_vector<bool>(), (std::vector<bool>{false, false, false}));
  // kBig and kBig + 1 differ only beyond int32: compared in int64.
  EXPECT_EQ((i64() < kBig + 1).to_vector<bool>(), (std::vector<bool>{true, true, true}));
  EXPECT_EQ((f64() > 1.0).to_vector<bool>(), (std::vector<bool>{true, true, true}));
}

TEST_P(DtypeRule, Reductions) {
  const Array s = np::sum(i64());
  EXPECT_EQ(s.dtype(), int64);
  EXPECT_EQ(s.item<int64_t>(), 7);
  EXPECT_EQ(
      np::sum(np::array(std::vector<int64_t>{kBig, kBig}, std::nullopt, int64)).item<int64_t>(),
      2 * kBig);
  EXPECT_EQ(np::prod(i64()).dtype(), int64);
  EXPECT_EQ(np::max(i64()).item<int64_t>(), kBig);
  EXPECT_EQ(np::min(i64()).item<int64_t>(), -kBig);
  EXPECT_EQ(np::sum(f64()).dtype(), float64);
  EXPECT_DOUBLE_EQ(np::sum(f64()).item<double>(), 1e-12 + 6);
  // Default accumulators follow x64, as JAX's.
  EXPECT_EQ(np::sum(np::array({1, 2})).dtype(), int_());
  EXPECT_EQ(np::sum(np::array(std::vector<int8_t>{1, 2})).dtype(), int_());
  EXPECT_EQ(np::sum(np::array({true, true})).dtype(), int_());
  EXPECT_EQ(np::sum(np::array({1, 2}), {}, false, int64).dtype(), int64);
  // mean of int64 is float64 in both modes (JAX with x64 on); of int32 float32 (JAX).
  EXPECT_EQ(np::mean(i64()).dtype(), float64);
  EXPECT_EQ(np::mean(np::array({1, 2})).dtype(), float32);
  EXPECT_EQ(np::mean(np::array({1, 2}), {}, false, float64).dtype(), float64);
  const Array big = np::array(std::vector<int64_t>{kBig, kBig + 2}, std::nullopt, int64);
  EXPECT_DOUBLE_EQ(np::mean(big).item<double>(), double(kBig + 1));
  const Array v = np::var(f64());
  EXPECT_EQ(v.dtype(), float64);
  const double m = (1e-12 + 6) / 3;
  const double d0 = 1e-12 + 1 - m;
  const double want = (d0 * d0 + (2 - m) * (2 - m) + (3 - m) * (3 - m)) / 3;
  EXPECT_NEAR(v.item<double>(), want, 1e-15);
  EXPECT_EQ(np::std(f64()).dtype(), float64);
  EXPECT_EQ(np::var(i64()).dtype(), float64);
  EXPECT_EQ(np::var(np::array({1, 2})).dtype(), float32);
  // Index outputs are the default int (JAX's int_), whatever the operand.
  EXPECT_EQ(np::argmax(i64()).dtype(), int_());
  EXPECT_EQ(np::argmax(i64()).item<int64_t>(), 0);
  EXPECT_EQ(np::argmin(f64()).item<int64_t>(), 0);
  EXPECT_EQ(lax::argmax(f64(), 0, int64).dtype(), int64);
}

TEST_P(DtypeRule, ReductionsOfEveryDtype) {
  const DType uint_ = x64() ? uint64 : uint32;
  // dtype -> (sum's dtype, mean's dtype), as JAX's with this x64 mode (a 64-bit dtype: x64).
  const std::vector<std::tuple<DType, DType, DType>> cases = {
      {bool_, int_(), float32},    {int8, int_(), float32},        {int16, int_(), float32},
      {int32, int_(), float32},    {int64, int64, float64},        {uint8, uint_, float32},
      {uint16, uint_, float32},    {uint32, uint_, float32},       {uint64, uint64, float64},
      {float16, float16, float16}, {bfloat16, bfloat16, bfloat16}, {float32, float32, float32},
      {float64, float64, float64}};
  for (const auto& [t, sum_t, mean_t] : cases) {
    SCOPED_TRACE(dtype_name(t));
    const Array x = np::ones({4}, t);
    EXPECT_EQ(np::sum(x).dtype(), sum_t);
    EXPECT_EQ(np::mean(x).dtype(), mean_t);
    EXPECT_EQ(np::argmax(x).dtype(), int_());
    EXPECT_EQ(np::max(x).dtype(), t);
    if (t != bool_) {
      EXPECT_EQ(np::astype(np::sum(x), float64).item<double>(), 4.0);
      EXPECT_EQ(np::astype(np::mean(x), float64).item<double>(), 1.0);
      EXPECT_EQ(np::cumsum(x).dtype(), t);  // cumsum widens only bool, as JAX
    }
  }
}

TEST_P(DtypeRule, Cumsum) {
  const Array c = np::cumsum(i64());
  EXPECT_EQ(c.dtype(), int64);
  EXPECT_EQ(c.to_vector<int64_t>(), (std::vector<int64_t>{kBig, 0, 7}));
  EXPECT_EQ(np::cumsum(np::array({1, 2}), std::nullopt, int64).dtype(), int64);
  EXPECT_EQ(np::cumsum(np::array({true, false})).dtype(), int_());
  EXPECT_EQ(np::cumsum(np::array(std::vector<int8_t>{1, 2})).dtype(), int8);  // as JAX
}

TEST_P(DtypeRule, DotAndMatmul) {
  const Array a = np::array(std::vector<int64_t>{kBig, 1, 2, 3}, Shape{2, 2}, int64);
  const Array e = np::eye(2, std::nullopt, 0, int64);
  const Array p = np::matmul(a, e);
  EXPECT_EQ(p.dtype(), int64);
  EXPECT_EQ(p.to_vector<int64_t>(), (std::vector<int64_t>{kBig, 1, 2, 3}));
  EXPECT_EQ(np::dot(f64(), f64()).dtype(), float64);
  EXPECT_EQ(np::matmul(a, np::eye(2, std::nullopt, 0, int32)).dtype(), int64);
  EXPECT_EQ(lax::dot(np::ones({2, 2}, float32), np::ones({2, 2}, float32), float64).dtype(),
            float64);
}

TEST_P(DtypeRule, AstypeAndConvert) {
  const Array f = np::array({1e10f});
  const Array i = np::astype(f, int64);
  EXPECT_EQ(i.dtype(), int64);
  EXPECT_EQ(i.item<int64_t>(), int64_t(1e10));
  EXPECT_EQ(lax::convert_element_type(f, float64).dtype(), float64);
  EXPECT_EQ(np::asarray(f, uint64).dtype(), uint64);
  EXPECT_EQ(np::astype(i64(), int32).dtype(), int32);  // explicit narrowing still narrows
  EXPECT_EQ(np::astype(i64(), float64).to_vector<double>()[0], double(kBig));
}

TEST_P(DtypeRule, IndexingSlicingWhereConcatenate) {
  EXPECT_EQ(i64()[0].item<int64_t>(), kBig);
  EXPECT_EQ(i64()[0].dtype(), int64);
  EXPECT_EQ(i64().slice({Slice(1, 3)}).to_vector<int64_t>(), (std::vector<int64_t>{-kBig, 7}));
  const Array w = np::where(np::array({true, false, true}), i64(), 0);
  EXPECT_EQ(w.dtype(), int64);
  EXPECT_EQ(w.to_vector<int64_t>(), (std::vector<int64_t>{kBig, 0, 7}));
  EXPECT_EQ(np::where(np::array({true, false, true}), f64(), np::zeros({3}, float32)).dtype(),
            float64);
  const Array c = np::concatenate({i64(), np::array({1, 2})});
  EXPECT_EQ(c.dtype(), int64);
  EXPECT_EQ(c.to_vector<int64_t>()[0], kBig);
  EXPECT_EQ(np::stack({f64(), f64()}).dtype(), float64);
  EXPECT_EQ(np::reshape(i64(), {3, 1}).dtype(), int64);
  EXPECT_EQ(np::clip(i64(), 0, kBig - 1).to_vector<int64_t>(),
            (std::vector<int64_t>{kBig - 1, 0, 7}));
}

TEST_P(DtypeRule, RandomDefaultsFollowX64AndGivenDtypesAreHonoured) {
  namespace rnd = random;
  const rnd::Key k = rnd::key(0);
  EXPECT_EQ(rnd::bits(k, {3}).dtype(), x64() ? uint64 : uint32);
  EXPECT_EQ(rnd::uniform(k, {3}).dtype(), float_());
  EXPECT_EQ(rnd::normal(k, {3}).dtype(), float_());
  EXPECT_EQ(rnd::randint(k, {3}, 0, 5).dtype(), int_());
  EXPECT_EQ(rnd::truncated_normal(k, -1.0, 1.0).dtype(), float_());
  // JAX 0.4.35 with x64 and jax_threefry_partitionable: bits(key(0), (3,)) and
  // uniform(key(0), (3,)), whatever the mode here.
  const bool saved = config::read("jax_threefry_partitionable");
  config::update("jax_threefry_partitionable", true);
  EXPECT_EQ(rnd::bits(k, {3}, uint64).to_vector<uint64_t>(),
            (std::vector<uint64_t>{7719171245655871230ull, 3989946895414531357ull,
                                   17807037942121513089ull}));
  EXPECT_EQ(rnd::uniform(k, {3}, float64).to_vector<double>(),
            (std::vector<double>{0.41845711171638644, 0.21629545460551136, 0.9653214611189975}));
  config::update("jax_threefry_partitionable", saved);
  EXPECT_EQ(rnd::uniform(k, {3}, float32).dtype(), float32);
}

TEST_P(DtypeRule, JitAndGradOf64BitInputs) {
  auto f = jit([](const Array& x) { return np::sum(x * x); });
  const Array y = f(f64());
  EXPECT_EQ(y.dtype(), float64);
  EXPECT_DOUBLE_EQ(y.item<double>(), (1e-12 + 1) * (1e-12 + 1) + 13);
  const Array s = jit([](const Array& x) { return x + x; })(i64());
  EXPECT_EQ(s.dtype(), int64);
  EXPECT_EQ(s.to_vector<int64_t>()[0], 2 * kBig);
  const Array g = grad([](const Array& x) { return np::sum(x * x); })(f64());
  EXPECT_EQ(g.dtype(), float64);
  EXPECT_DOUBLE_EQ(g.to_vector<double>()[0], 2 * (1e-12 + 1));
  const Array gj = jit(grad([](const Array& x) { return np::mean(np::sin(x)); }))(f64());
  EXPECT_EQ(gj.dtype(), float64);
  const Array vm = vmap([](const Array& x) { return np::sum(x); })(np::reshape(i64(), {3, 1}));
  EXPECT_EQ(vm.dtype(), int64);
  EXPECT_EQ(vm.to_vector<int64_t>()[0], kBig);
}

}  // namespace
}  // namespace parax
