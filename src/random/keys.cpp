// parax::random's keys and bits: typed and raw keys, split, fold_in, threefry_2x32 and
// bits, over the random_bits primitive. Only random_bits is a primitive (so that big draws
// are computed shard-locally); fold_in and threefry_2x32 hash a few counters with threefry
// written in lax's uint32 ops, jitted once so that eager calls run one program. Formulas
// and test vectors: reference/jax-random.md.
#include <cstring>
#include <limits>

#include "base/promotion.h"
#include "base/sizes.h"
#include "core/trace.h"
#include "lax/promote.h"
#include "parax/config.h"
#include "parax/jit.h"
#include "parax/lax.h"
#include "parax/numpy.h"
#include "parax/random.h"
#include "random/random_internal.h"

namespace parax::random {

namespace detail {

bool partitionable() { return config::read("jax_threefry_partitionable"); }

// Binds random_bits: the flag is a param, so it is part of every program and cache key.
Array random_bits(const Array& key, int64_t bit_width, const Shape& shape, bool partitionable) {
  return core::bind1(
      core::Prim::random_bits, {key},
      {{"bit_width", bit_width}, {"shape", shape}, {"partitionable", partitionable}});
}

// The key words of one key, checked: random functions take single keys so far.
const Array& single_key(const Key& key, const char* fun) {
  if (key.ndim() != 0) {
    // JAX's _check_prng_key text (a ValueError there too).
    throw ValueError(std::string(fun) +
                     " accepts a single key, but was given a key array of "
                     "shape " +
                     shape_str(key.shape()) + " != (). Use jax.vmap for batching.");
  }
  return key.data();
}

}  // namespace detail

namespace {

using detail::partitionable;
using detail::random_bits;
using detail::single_key;

JitOptions named(const char* name) {
  JitOptions options;
  options.name = name;
  return options;
}

Array u32(uint32_t v) { return frontend::scalar_int(int64_t(v), DType::uint32); }

Array rotl(const Array& x, int r) {
  return lax::bitwise_or(lax::shift_left(x, u32(uint32_t(r))),
                         lax::shift_right_logical(x, u32(uint32_t(32 - r))));
}

// Threefry-2x32, 20 rounds, on uint32 arrays of one shape (JAX's _threefry2x32_lowering
// written with lax ops; the random_bits kernel has the same function in C++).
std::pair<Array, Array> threefry2x32(const Array& k0, const Array& k1, Array x0, Array x1) {
  static constexpr int kRot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  const Array ks[3] = {k0, k1, lax::bitwise_xor(lax::bitwise_xor(k0, k1), u32(0x1BD11BDAu))};
  x0 = lax::add(x0, ks[0]);
  x1 = lax::add(x1, ks[1]);
  for (int g = 0; g < 5; ++g) {
    for (int r : kRot[g % 2]) {
      x0 = lax::add(x0, x1);
      x1 = lax::bitwise_xor(rotl(x1, r), x0);
    }
    x0 = lax::add(x0, ks[(g + 1) % 3]);
    x1 = lax::add(x1, lax::add(ks[(g + 2) % 3], u32(uint32_t(g + 1))));
  }
  return {x0, x1};
}

// H(key, count) of §4: pad the flat counters to even length, hash the first half
// against the second, and concatenate the two output words' halves.
Array threefry_2x32_impl(const Array& keypair, const Array& count) {
  const int64_t n = count.size();
  Array flat = lax::reshape(count, {n});
  if (n % 2 == 1) flat = lax::concatenate({flat, lax::reshape(u32(0), {1})}, 0);
  const int64_t h = (n + 1) / 2;
  const Array k0 = lax::reshape(lax::slice(keypair, {0}, {1}), {});
  const Array k1 = lax::reshape(lax::slice(keypair, {1}, {2}), {});
  auto [p, q] = threefry2x32(k0, k1, lax::slice(flat, {0}, {h}), lax::slice(flat, {h}, {2 * h}));
  Array out = lax::concatenate({p, q}, 0);
  if (n % 2 == 1) out = lax::slice(out, {0}, {n});
  return lax::reshape(out, count.shape());
}

// Stacks two equal-shape uint32 arrays as the last dimension: key data from words.
Array stack_words(const Array& a, const Array& b) {
  Shape s = a.shape();
  s.push_back(1);
  return lax::concatenate({lax::reshape(a, s), lax::reshape(b, s)}, int64_t(s.size()) - 1);
}

Array key_words(int64_t seed) {
  const bool x64 = config::read("jax_enable_x64");
  const uint64_t s = uint64_t(seed);
  // Without x64 the seed is an int32 first, so its high word is a logical shift by 32: 0.
  const uint32_t k0 = x64 ? uint32_t(s >> 32) : 0u;
  return numpy::array(std::vector<uint32_t>{k0, uint32_t(s)}, std::nullopt, DType::uint32);
}

}  // namespace

Key::Key(const Array& data) : data_(data) {
  const Shape& s = data.shape();
  if (data.dtype() != DType::uint32 || s.empty() || s.back() != 2) {
    throw TypeError(
        "[random] JAX encountered invalid PRNG key data: expected key_data of dtype "
        "uint32 and shape (..., 2); got " +
        core::aval_of(data).str() + ".");
  }
}

Shape Key::shape() const {
  Shape s = data_.shape();
  s.pop_back();
  return s;
}

Key Key::operator[](int64_t i) const {
  if (ndim() == 0) {
    throw IndexError("Too many indices for array: array is 0-dimensional, but 1 were indexed");
  }
  return Key(data_[i]);
}

std::string Key::to_string() const {
  return "Array(" + shape_str(shape()) + ", dtype=key<fry>) overlaying:\n" + data_.str();
}

std::ostream& operator<<(std::ostream& os, const Key& k) { return os << k.to_string(); }

Key key(int64_t seed) { return Key(key_words(seed)); }
Array PRNGKey(int64_t seed) { return key_words(seed); }
Array key_data(const Key& keys) { return keys.data(); }
Key wrap_key_data(const Array& data) { return Key(data); }

Key split(const Key& key, int64_t num) { return split(key, Shape{num}); }

Key split(const Key& key, const Shape& shape) {
  const Array& k = single_key(key, "split");
  const int64_t n = shape_size(shape);
  Shape data_shape = shape;
  data_shape.push_back(2);
  if (!partitionable()) {
    // H(key, iota(2n)) taken in consecutive pairs.
    const int64_t words =
        base::checked_mul(n, 2, "split", "the key count of shape " + shape_str(shape));
    return Key(lax::reshape(random_bits(k, 32, {words}, false), data_shape));
  }
  // Key i is TF(key; hi(i), lo(i)), which is random_bits' 64-bit value (a << 32) | b.
  const Array b = random_bits(k, 64, shape, true);
  const Array hi = lax::convert_element_type(
      lax::shift_right_logical(b, frontend::scalar_int(32, DType::uint64)), DType::uint32);
  const Array lo = lax::convert_element_type(b, DType::uint32);
  return Key(stack_words(hi, lo));
}

Key fold_in(const Key& key, const ArrayLike& data) {
  const Array& k = single_key(key, "fold_in");
  const Array& given = data.array();
  if (given.ndim() != 0) {
    throw TypeError("fold_in accepts a scalar, but was given an array ofshape " +
                    shape_str(given.shape()) + " != (). Use jax.vmap for batching.");
  }
  // JAX converts with jnp.uint32(data): a C++ integer must lie in uint32's range (2^32 - 2
  // is valid data), and one outside it is numpy's OverflowError, not a silent wrap.
  Array d;
  if (frontend::is_literal(given) && is_integer(given.dtype())) {
    const int64_t v = given.item<int64_t>();
    if (v < 0 || v > int64_t(std::numeric_limits<uint32_t>::max())) {
      // JAX raises OverflowError; parax has no such kind, and ValueError is closest.
      throw ValueError("Python integer " + std::to_string(v) + " out of bounds for uint32");
    }
    d = frontend::scalar_int(v, DType::uint32);
  } else {
    d = frontend::convert(given, DType::uint32, false);
  }
  // TF(key; 0, data), i.e. H(key, [0, data]).
  static const auto jitted = jit(
      [](const Array& kw, const Array& x) {
        return threefry_2x32_impl(kw, stack_words(lax::reshape(u32(0), {}), x));
      },
      named("fold_in"));
  return Key(jitted(k, d));
}

Array threefry_2x32(const Array& keypair, const Array& count) {
  if (keypair.dtype() != DType::uint32 || keypair.shape() != Shape{2} ||
      count.dtype() != DType::uint32) {
    throw TypeError("[random.threefry_2x32] expected a uint32[2] keypair and uint32 counts; got " +
                    core::aval_of(keypair).str() + " and " + core::aval_of(count).str() + ".");
  }
  if (count.size() == 0) return count;
  static const auto jitted = jit(threefry_2x32_impl, named("threefry_2x32"));
  return jitted(keypair, count);
}

Array bits(const Key& key, const Shape& shape, std::optional<DType> dtype) {
  // A given dtype is honoured with x64 off too (README, "dtypes"); the default follows x64.
  const DType t = dtype.value_or(base::default_uint_dtype());
  if (!is_unsigned_integer(t)) {
    throw ValueError("dtype argument to `bits` must be an unsigned int dtype, got " +
                     std::string(dtype_name(t)));
  }
  return random_bits(single_key(key, "bits"), dtype_itemsize(t) * 8, shape, partitionable());
}

}  // namespace parax::random
