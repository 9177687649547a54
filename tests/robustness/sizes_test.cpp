// Sizes too large to count or to hold. Shapes whose element or byte count overflows 64 bits
// raise a ValueError naming the shape, eagerly and under jit and vmap, and huge strides,
// interiors and empty dimensions do not overflow or loop; sizes that fit in 64 bits but not
// in memory raise ResourceExhaustedError naming the bytes, fast, before anything is
// filled.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "parax/parax.h"
#include "support/errors.h"

namespace parax {
namespace {

namespace jnp = parax::numpy;

constexpr int64_t k31 = int64_t(1) << 31;

// ---------------------------------------------------------------------------------------
// 1. Sizes that overflow 64 bits: ValueError naming the shape, eager and under jit.

TEST(SizesOverflow, IotaOfTwoToThe62Int32) {
  EXPECT_THROW_HAS(lax::iota(DType::int32, int64_t(1) << 62), ValueError,
                   "[iota] array is too big: shape (4611686018427387904,) of int32");
}

TEST(SizesOverflow, BroadcastToOverflowsBytes) {
  EXPECT_THROW_HAS(jnp::broadcast_to(jnp::array(1.0f), {k31, k31}), ValueError,
                   "array is too big: shape (2147483648, 2147483648) of float32");
}

TEST(SizesOverflow, RandomUniformOverflows) {
  EXPECT_THROW_HAS(random::uniform(random::key(0), {k31, k31}), ValueError,
                   "array is too big: shape (2147483648, 2147483648)");
  EXPECT_THROW_HAS(random::normal(random::key(0), {k31, k31, 4}), ValueError, "array is too big");
  EXPECT_THROW_HAS(random::split(random::key(0), {int64_t(1) << 62}), ValueError,
                   "array is too big");
}

TEST(SizesOverflow, ZerosElementCountOverflows) {
  EXPECT_THROW_HAS(jnp::zeros({int64_t(1) << 40, int64_t(1) << 30}), ValueError,
                   "[zeros] array is too big: shape (1099511627776, 1073741824) of float32");
  // numpy's rule: a zero dimension does not excuse the others (their strides overflow).
  EXPECT_THROW_HAS(jnp::zeros({0, int64_t(1) << 40, int64_t(1) << 30}), ValueError,
                   "array is too big: shape (0, 1099511627776, 1073741824)");
  EXPECT_THROW_HAS(jnp::ones({int64_t(1) << 62, 4}, DType::int8), ValueError, "[ones]");
  EXPECT_THROW_HAS(jnp::full({int64_t(1) << 62, 4}, 2.5), ValueError, "[full]");
  EXPECT_THROW_HAS(shape_size({int64_t(1) << 40, int64_t(1) << 30}), ValueError,
                   "[shape_size] the number of elements of shape (1099511627776, 1073741824) "
                   "overflows a 64-bit size");
  EXPECT_EQ(shape_size({0, int64_t(1) << 40, int64_t(1) << 30}), 0);
  EXPECT_EQ(shape_size({int64_t(1) << 31, int64_t(1) << 31}), int64_t(1) << 62);
}

TEST(SizesOverflow, PadTileRepeatBroadcastedIota) {
  const Array x = jnp::zeros({2, 2});
  const Array zero = jnp::array(0.0f);
  EXPECT_THROW_HAS(lax::pad(x, zero, {{k31 * k31, 0, 0}, {k31 * k31, 0, 0}}), ValueError,
                   "[pad] array is too big: shape (4611686018427387906, 4611686018427387906)");
  EXPECT_THROW_HAS(lax::pad(x, zero, {{std::numeric_limits<int64_t>::max(), 1, 0}, {0, 0, 0}}),
                   ValueError, "[pad] the padded size of dimension 0 overflows a 64-bit size");
  EXPECT_THROW_HAS(lax::pad(x, zero, {{0, 0, std::numeric_limits<int64_t>::max()}, {0, 0, 0}}),
                   ValueError, "[pad] the padded size of dimension 0 overflows");
  EXPECT_THROW_HAS(jnp::tile(x, {int64_t(1) << 40, int64_t(1) << 40}), ValueError,
                   "array is too big");
  EXPECT_THROW_HAS(jnp::tile(x, {std::numeric_limits<int64_t>::max(), 1}), ValueError,
                   "[tile] array is too big: tiling shape (2, 2) by reps "
                   "(9223372036854775807, 1) overflows a 64-bit size");
  EXPECT_THROW_HAS(jnp::repeat(x, std::numeric_limits<int64_t>::max(), 0), ValueError,
                   "[repeat] array is too big: repeating axis 0 of shape (2, 2) "
                   "9223372036854775807 times overflows a 64-bit size");
  EXPECT_THROW_HAS(jnp::repeat(x, int64_t(1) << 61), ValueError, "array is too big");
  EXPECT_THROW_HAS(lax::broadcasted_iota(DType::float32, {k31, k31}, 1), ValueError,
                   "array is too big: shape (2147483648, 2147483648) of float32");
  EXPECT_THROW_HAS(jnp::reshape(jnp::zeros({4}), {int64_t(1) << 32, int64_t(1) << 32, -1}),
                   TypeError, "because the product of specified axis sizes overflows");
  EXPECT_THROW_HAS(jnp::reshape(jnp::zeros({4}), {int64_t(1) << 32, int64_t(1) << 32, 4}),
                   TypeError, "(size beyond 2^63 - 1)");
  EXPECT_THROW_HAS(jnp::linspace(0, 1, std::numeric_limits<int64_t>::max()), ValueError,
                   "[linspace] array is too big");
  EXPECT_THROW_HAS(jnp::arange(0.0, 1e300), ValueError, "[arange] array is too big");
  EXPECT_THROW_HAS(jnp::eye(int64_t(1) << 40, int64_t(1) << 40), ValueError,
                   "[eye] array is too big");
}

TEST(SizesOverflow, UnderJit) {
  auto bcast = jit([](Array a) { return jnp::broadcast_to(a, {k31, k31}); });
  EXPECT_THROW_HAS(bcast(jnp::array(1.0f)), ValueError,
                   "array is too big: shape (2147483648, 2147483648) of float32");
  auto tiled = jit([](Array a) { return jnp::tile(a, {int64_t(1) << 40, int64_t(1) << 40}); });
  EXPECT_THROW_HAS(tiled(jnp::zeros({2, 2})), ValueError, "array is too big");
  auto padded = jit([](Array a) {
    return lax::pad(a, jnp::array(0.0f), {{k31 * k31, 0, 0}, {k31 * k31, 0, 0}});
  });
  EXPECT_THROW_HAS(padded(jnp::zeros({2, 2})), ValueError, "[pad] array is too big");
  auto iota = jit([](Array a) { return a + lax::iota(DType::int32, int64_t(1) << 62); });
  EXPECT_THROW_HAS(iota(jnp::array(1)), ValueError, "[iota] array is too big");
  // vmap adds a batch dimension to an already large shape.
  auto big = vmap([](Array a) { return jnp::broadcast_to(a, {k31, k31 / 8}); });
  EXPECT_THROW_HAS(big(jnp::zeros({8})), ValueError,
                   "array is too big: shape (8, 2147483648, 268435456) of float32");
}

// Empty arrays may have huge dimensions; making them must not loop over those (found by
// the fuzz test: both ran for hours).
// A stride as large as int64 allows picks one element (found by the fuzzer under UBSan: the
// count was computed as (len + stride - 1) / stride), eagerly, under jit and in grad.
TEST(SizesOverflow, HugeSliceStride) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  const Array x = jnp::array(std::vector<float>{1, 2, 3});
  auto f = [](const Array& v) { return lax::slice(v, {1}, {3}, {kMax}); };
  EXPECT_EQ(f(x).to_vector<float>(), (std::vector<float>{2}));
  EXPECT_EQ(jit(f)(x).to_vector<float>(), (std::vector<float>{2}));
  auto g = grad([&](const Array& v) { return jnp::sum(f(v)); })(x);
  EXPECT_EQ(g.to_vector<float>(), (std::vector<float>{0, 1, 0}));
  // In a later dimension the stride multiplies the row length.
  const Array m = jnp::reshape(jnp::arange(28 * 3), {28, 3});
  EXPECT_EQ(lax::slice(m, {2, 0}, {28, 3}, {kMax / 2 + 1, 1}).to_vector<int32_t>(),
            (std::vector<int32_t>{6, 7, 8}));
}

// The transpose of pad strides over the interior: an interior as large as int64 allows (one
// element, so nothing lands between) must not overflow that stride (found under UBSan).
TEST(SizesOverflow, GradOfPadWithHugeInterior) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  auto f = [](const Array& v) {
    return jnp::sum(lax::pad(v, jnp::array(0.0f), {{1, 1, kMax}}) * 2.0f);
  };
  const Array x = jnp::array(std::vector<float>{3});
  EXPECT_EQ(grad(f)(x).to_vector<float>(), (std::vector<float>{2}));
  EXPECT_EQ(jit(grad(f))(x).to_vector<float>(), (std::vector<float>{2}));
}

TEST(SizesOverflow, EmptyArraysWithHugeDimensionsAreCheap) {
  const auto start = std::chrono::steady_clock::now();
  const int64_t k45 = int64_t(1) << 45;
  EXPECT_EQ(jnp::eye(k45, 0).shape(), (Shape{k45, 0}));
  EXPECT_EQ(jnp::eye(2, 3, std::numeric_limits<int64_t>::min()).shape(), (Shape{2, 3}));
  EXPECT_EQ(jnp::eye(2, 3, 1).astype(DType::int32).to_vector<int32_t>(),
            (std::vector<int32_t>{0, 1, 0, 0, 0, 1}));
  EXPECT_EQ(lax::broadcasted_iota(DType::int32, {2, int64_t(1) << 40, 0}, 0).shape(),
            (Shape{2, int64_t(1) << 40, 0}));
  EXPECT_EQ(lax::broadcasted_iota(DType::int32, {2, 3}, 1).to_vector<int32_t>(),
            (std::vector<int32_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5);
  // A count mismatch is reported as such, not as memory the shape would need.
  EXPECT_THROW_HAS(jnp::array(std::vector<float>{1, 2, 3}, Shape{int64_t(1) << 40}), ValueError,
                   "[array] cannot reshape 3 values into shape (1099511627776,)");
  EXPECT_THROW_HAS(jnp::arange(0.0, std::nan(""), 1.0), ValueError,
                   "[arange] cannot compute length");
}

// ---------------------------------------------------------------------------------------
// 2. Absurd sizes that fit in 64 bits but not in memory: ResourceExhaustedError naming
// the bytes, raised before anything is filled.

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

TEST(SizesMemory, ResourceExhaustedIsARuntimeError) {
  static_assert(std::is_base_of_v<RuntimeError, ResourceExhaustedError>);
  static_assert(std::is_base_of_v<Error, ResourceExhaustedError>);
}

TEST(SizesMemory, HugeArraysFailFast) {
  const auto start = std::chrono::steady_clock::now();
  const int64_t k38 = int64_t(1) << 38;
  EXPECT_THROW_HAS(jnp::zeros({k38}), ResourceExhaustedError,
                   "RESOURCE_EXHAUSTED: [zeros] Out of memory while trying to allocate "
                   "3298534883328 bytes (3.0 TiB)");
  EXPECT_THROW_HAS(jnp::eye(int64_t(1) << 32, 3), ResourceExhaustedError,
                   "RESOURCE_EXHAUSTED: [eye] Out of memory while trying to allocate");
  EXPECT_THROW_HAS(jnp::linspace(0, 1, k38), ResourceExhaustedError, "[linspace] Out of memory");
  EXPECT_THROW_HAS(jnp::arange(k38), ResourceExhaustedError, "[arange] Out of memory");
  EXPECT_THROW_HAS(jnp::full({k38, 4}, 1.5f), ResourceExhaustedError, "[full] Out of memory");
  // Device buffers: the allocator refuses what memory and swap cannot back.
  EXPECT_THROW_HAS(jnp::broadcast_to(jnp::array(1.0f), {k38}), ResourceExhaustedError,
                   "Out of memory while trying to allocate 1099511627776 bytes (1.0 TiB)");
  EXPECT_THROW_HAS(jnp::tile(jnp::zeros({2}), {k38}), ResourceExhaustedError,
                   "Out of memory while trying to allocate 2199023255552 bytes");
  EXPECT_THROW_HAS(lax::pad(jnp::zeros({2}), jnp::array(0.0f), {{k38, 0, 0}}),
                   ResourceExhaustedError, "Out of memory");
  EXPECT_THROW_HAS(random::uniform(random::key(0), {k38}), ResourceExhaustedError, "Out of memory");
  EXPECT_THROW_HAS(jit([](Array a) { return jnp::broadcast_to(a, {k38}) * 2; })(jnp::array(1.f)),
                   ResourceExhaustedError, "Out of memory");
  auto m = make_mesh({8}, {"x"});
  EXPECT_THROW_HAS(device_put(jnp::broadcast_to(jnp::array(1.0f), {k38}), NamedSharding(m, P("x"))),
                   ResourceExhaustedError, "Out of memory");
  EXPECT_LT(seconds_since(start), 10.0);
  // Nothing leaked: ordinary work goes on.
  EXPECT_EQ(jnp::sum(jnp::ones({1000})).item<float>(), 1000.0f);
}

TEST(SizesMemory, VisualizeHugeScale) {
  const Array x = device_put(jnp::zeros({8, 8}), NamedSharding(make_mesh({8}, {"x"}), P("x")));
  std::ostringstream os;
  debug::VisualizeOptions big;
  big.use_color = false;
  big.scale = 1e15;
  EXPECT_THROW_HAS(debug::visualize_array_sharding(x, os, big), ResourceExhaustedError,
                   "RESOURCE_EXHAUSTED: [visualize_sharding] Out of memory");
  big.scale = std::numeric_limits<double>::infinity();
  EXPECT_THROW_HAS(debug::visualize_array_sharding(x, os, big), ValueError,
                   "`visualize_sharding`: scale must be a finite number");
  big.scale = std::nan("");
  EXPECT_THROW_HAS(debug::visualize_array_sharding(x, os, big), ValueError,
                   "scale must be a finite number");
  // A sane scale still renders.
  debug::VisualizeOptions plain;
  plain.use_color = false;
  plain.scale = 0.5;
  std::ostringstream text;
  debug::visualize_array_sharding(x, text, plain);
  EXPECT_NE(text.str().find("CPU 7"), std::string::npos) << text.str();
}

}  // namespace
}  // namespace parax
