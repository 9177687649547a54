// parax::random: samplers composed of lax functions over the random_bits primitive, as
// JAX's jax.random is. Only random_bits is a primitive (so that big draws are computed
// shard-locally); fold_in and threefry_2x32 hash a few counters with threefry written in
// lax's uint32 ops, jitted once so that eager calls run one program. Formulas and test
// vectors: reference/jax-random.md.
#include "parax/random.h"

#include <cmath>
#include <cstring>

#include "api/frontend.h"
#include "base/promotion.h"
#include "core/trace.h"
#include "parax/config.h"
#include "parax/jit.h"
#include "parax/lax.h"
#include "parax/numpy.h"

namespace parax::random {
namespace {

using core::Prim;

bool partitionable() { return config::read("jax_threefry_partitionable"); }

JitOptions named(const char* name) {
  JitOptions options;
  options.name = name;
  return options;
}

Array u32(uint32_t v) { return frontend::scalar_int(int64_t(v), DType::uint32); }

// Binds random_bits: the flag is a param, so it is part of every program and cache key.
Array random_bits(const Array& key, int64_t bit_width, const Shape& shape, bool partitionable) {
  return core::bind1(
      Prim::random_bits, {key},
      {{"bit_width", bit_width}, {"shape", shape}, {"partitionable", partitionable}});
}

// The key words of one key, checked: random functions take single keys so far.
const Array& single_key(const Key& key, const char* fun) {
  if (key.ndim() != 0) {
    throw NotImplementedError(std::string("[random.") + fun +
                              "] batches of keys are not supported yet: got a key array of shape " +
                              shape_str(key.shape()) + "; expected a single key (shape ()). " +
                              "hint: index the key array, keys[i].");
  }
  return key.data();
}

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

// The value of 2^e in `dtype`, exact for the mantissa widths used here.
Array pow2(int e, DType dtype) { return frontend::scalar(std::ldexp(1.0, e), dtype); }

// uniform's floats in [0, 1): the top mantissa-width bits as an integer times 2^-nmant,
// which equals JAX's bitcast((bits >> s) | one) - 1 exactly (k < 2^nmant converts exactly).
Array unit_floats(const Key& key, const Shape& shape, DType dtype) {
  int nbits = 32;
  int nmant = 23;
  switch (dtype) {
    case DType::float64:
      nbits = 64, nmant = 52;
      break;
    case DType::float16:
      nbits = 16, nmant = 10;
      break;
    case DType::bfloat16:
      nbits = 8, nmant = 7;  // JAX draws 8 bits for bfloat16 (its nmant < 8)
      break;
    default:
      break;
  }
  const Array b = random_bits(single_key(key, "uniform"), nbits, shape, partitionable());
  const DType udt = b.dtype();
  const Array k = lax::shift_right_logical(b, frontend::scalar_int(nbits - nmant, udt));
  return lax::mul(lax::convert_element_type(k, dtype), pow2(-nmant, dtype));
}

Array as_float(const ArrayLike& x, DType dtype, const Shape& shape) {
  Array a = frontend::convert(x.array(), dtype, false);
  return a.ndim() == 0 ? a : frontend::broadcast_to(a, shape);
}

// XLA's f32 erf_inv (StableHLO's erfInv32, Giles' polynomial), as XLA:CPU runs it
// (reference/jax-random.md §8.2-8.3): the Horner steps contracted to FMAs, log1p
// correctly rounded. lax has no fma, so each step is computed in float64, where p*t is
// exact and one addition rounds, then rounded to float32: the same as fma except in the
// rare case (about 2^-29 of values) where that double rounding lands on a float tie.
// lax::erf_inv is more accurate than XLA's and would differ in the last bits.
Array erf_inv_xla_f32(const Array& x) {
  static constexpr float kA[] = {2.81022636e-08f,  3.43273939e-07f, -3.5233877e-06f,
                                 -4.39150654e-06f, 0.00021858087f,  -0.00125372503f,
                                 -0.00417768164f,  0.246640727f,    1.50140941f};
  static constexpr float kB[] = {-0.000200214257f, 0.000100950558f, 0.00134934322f,
                                 -0.00367342844f,  0.00573950773f,  -0.0076224613f,
                                 0.00943887047f,   1.00167406f,     2.83297682f};
  // float64 regardless of jax_enable_x64: lax's public convert would canonicalize it away.
  auto to64 = [](const Array& v) {
    return lax::internal::convert_element_type(v, DType::float64, false);
  };
  auto to32 = [](const Array& v) {
    return lax::internal::convert_element_type(v, DType::float32, false);
  };
  auto f32 = [](double v) { return frontend::scalar(v, DType::float32); };
  auto f64 = [&](float v) { return to64(f32(double(v))); };
  auto horner = [&](const float* c, const Array& t) {
    const Array t64 = to64(t);
    Array p = f32(c[0]);  // rank 0: broadcasts against t in the first step
    for (int i = 1; i < 9; ++i) p = to32(lax::add(lax::mul(to64(p), t64), f64(c[i])));
    return p;
  };
  const Array m = lax::mul(x, lax::neg(x));
  const Array w = lax::neg(to32(lax::log1p(to64(m))));
  const Array pa = horner(kA, lax::sub(w, f32(2.5)));
  const Array pb = horner(kB, lax::sub(lax::sqrt(w), f32(3.0)));
  const Array p = lax::select(lax::lt(w, f32(5.0)), pa, pb);
  return lax::mul(p, x);
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
    return Key(lax::reshape(random_bits(k, 32, {2 * n}, false), data_shape));
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
  const Array d = frontend::convert(data.array(), DType::uint32, false);
  if (d.ndim() != 0) {
    throw NotImplementedError("[random.fold_in] data must be a scalar; got " +
                              core::aval_of(d).str() + ".");
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

Array bits(const Key& key, const Shape& shape, DType dtype) {
  const DType t = base::canonicalize_dtype(dtype);
  if (!is_unsigned_integer(t)) {
    throw TypeError("[random.bits] dtype argument of bits must be an unsigned int dtype, got " +
                    std::string(dtype_name(dtype)) + ".");
  }
  return random_bits(single_key(key, "bits"), dtype_itemsize(t) * 8, shape, partitionable());
}

Array uniform(const Key& key, const Shape& shape, DType dtype, const ArrayLike& minval,
              const ArrayLike& maxval) {
  const DType t = base::canonicalize_dtype(dtype);
  if (!is_floating(t)) {
    throw TypeError("[random.uniform] dtype argument to `uniform` must be a float dtype, got " +
                    std::string(dtype_name(dtype)) + ".");
  }
  const Array lo = as_float(minval, t, shape);
  const Array hi = as_float(maxval, t, shape);
  const Array f = unit_floats(key, shape, t);
  // JAX's max(lo, f * (hi - lo) + lo): exact for [0, 1); only a lower clamp.
  return lax::max(lo, lax::add(lax::mul(f, lax::sub(hi, lo)), lo));
}

Array normal(const Key& key, const Shape& shape, DType dtype) {
  const DType t = base::canonicalize_dtype(dtype);
  if (!is_floating(t)) {
    throw TypeError("[random.normal] dtype argument to `normal` must be a float dtype, got " +
                    std::string(dtype_name(dtype)) + ".");
  }
  // u is a multiple of 2^-24 in (-1, 1): uniform over [nextafter(-1, 0), 1).
  const float lo32 = std::nextafter(-1.0f, 0.0f);
  const double lo = t == DType::float64 ? std::nextafter(-1.0, 0.0) : double(lo32);
  const Array lo_arr = t == DType::float32 || t == DType::float64
                           ? frontend::scalar(lo, t)
                           : lax::nextafter(frontend::scalar(-1.0, t), frontend::scalar(0.0, t));
  const Array u = uniform(key, shape, t, lo_arr, frontend::scalar(1.0, t));
  Array e;
  if (t == DType::float64) {
    e = lax::erf_inv(u);  // XLA's erfInv64 is not reproduced (no f64 vectors exist)
  } else {
    // Half types run erf_inv in float32 and round back, as XLA does.
    e = lax::convert_element_type(erf_inv_xla_f32(lax::convert_element_type(u, DType::float32)), t);
  }
  return lax::mul(frontend::scalar(double(std::sqrt(2.0)), t), e);
}

Array bernoulli(const Key& key, const ArrayLike& p, std::optional<Shape> shape) {
  Array pa = p.array();
  if (!is_floating(pa.dtype()) || pa.weak_type()) {
    pa = frontend::convert(
        pa, is_floating(pa.dtype()) && !pa.weak_type() ? pa.dtype() : DType::float32);
  }
  const Shape s = shape ? *shape : pa.shape();
  return lax::lt(uniform(key, s, pa.dtype()), as_float(pa, pa.dtype(), s));
}

}  // namespace parax::random
