// parax::random's samplers (uniform, normal, bernoulli, randint, truncated_normal,
// permutation, choice): lax compositions over random_bits, as JAX's jax.random's, rounding
// where XLA:CPU rounds (xla_cpu_math.h) so that draws are JAX's bit for bit. Formulas and
// test vectors: reference/jax-random.md.
#include <algorithm>
#include <cmath>
#include <limits>

#include "base/promotion.h"
#include "base/sizes.h"
#include "lax/promote.h"
#include "parax/grad.h"
#include "parax/indexing.h"
#include "parax/lax.h"
#include "parax/numpy.h"
#include "parax/random.h"
#include "random/random_internal.h"
#include "random/xla_cpu_math.h"

namespace parax::random {
namespace {

using detail::partitionable;
using detail::random_bits;
using detail::single_key;

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

}  // namespace

Array uniform(const Key& key, const Shape& shape, std::optional<DType> dtype,
              const ArrayLike& minval, const ArrayLike& maxval) {
  single_key(key, "uniform");
  const DType t = dtype.value_or(base::default_float_dtype());  // given: honoured
  if (!is_floating(t)) {
    throw ValueError("dtype argument to `uniform` must be a float dtype, got " +
                     std::string(dtype_name(t)));
  }
  const Array lo = as_float(minval, t, shape);
  const Array hi = as_float(maxval, t, shape);
  const Array f = unit_floats(key, shape, t);
  // JAX's max(lo, f * (hi - lo) + lo), only a lower clamp. XLA:CPU contracts the multiply
  // and add to an FMA, which for float32 differs in about 30 % of draws over [-5, 5).
  const Array span = lax::sub(hi, lo);
  const Array r =
      t == DType::float32 ? xla_cpu::fma_f32(f, span, lo) : lax::add(lax::mul(f, span), lo);
  return lax::max(lo, r);
}

Array normal(const Key& key, const Shape& shape, std::optional<DType> dtype) {
  single_key(key, "normal");
  const DType t = dtype.value_or(base::default_float_dtype());  // given: honoured
  if (!is_floating(t)) {
    // JAX's text names complex too; parax has no complex dtypes.
    throw ValueError("dtype argument to `normal` must be a float or complex dtype, got " +
                     std::string(dtype_name(t)));
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
    e = lax::convert_element_type(
        xla_cpu::erf_inv_f32(lax::convert_element_type(u, DType::float32)), t);
  }
  return lax::mul(frontend::scalar(double(std::sqrt(2.0)), t), e);
}

Array bernoulli(const Key& key, const ArrayLike& p, OptionalShape shape) {
  single_key(key, "bernoulli");
  Array pa = p.array();
  if (!is_floating(pa.dtype()) || pa.weak_type()) {
    pa = frontend::convert(
        pa, is_floating(pa.dtype()) && !pa.weak_type() ? pa.dtype() : DType::float32);
  }
  const Shape s = shape ? *shape : pa.shape();
  return lax::lt(uniform(key, s, pa.dtype()), as_float(pa, pa.dtype(), s));
}

// ---- randint, truncated_normal, permutation, choice (JAX 0.10.2's random/core.py) ----

namespace {

// JAX's _check_shape: the parameters' shapes must broadcast to `shape` exactly.
void check_shape(const char* name, const Shape& shape, const std::vector<Shape>& params) {
  std::vector<Shape> all = {shape};
  all.insert(all.end(), params.begin(), params.end());
  const Shape result = frontend::broadcast_shapes("", all);
  if (result != shape) {
    throw ValueError(std::string(name) +
                     " parameter shapes must be broadcast-compatible with shape argument, and "
                     "the result of broadcasting the shapes must equal the shape argument, but "
                     "got result " +
                     shape_str(result) + " for shape argument " + shape_str(shape) + ".");
  }
}

// The values an integer dtype holds, [min, max].
std::pair<__int128, __int128> int_range(DType t) {
  const int bits = dtype_itemsize(t) * 8;
  if (is_unsigned_integer(t)) return {0, (__int128(1) << bits) - 1};
  return {-(__int128(1) << (bits - 1)), (__int128(1) << (bits - 1)) - 1};
}

// A 0-d `dtype` constant from a value in its range (bit patterns for uint64's top half).
Array int_constant(__int128 v, DType dtype) { return frontend::scalar_int(int64_t(v), dtype); }

// jnp's _convert_and_clip_integer: clips to the range both dtypes share, then converts.
Array convert_and_clip(const Array& x, DType dtype) {
  const auto [to_min, to_max] = int_range(dtype);
  const auto [from_min, from_max] = int_range(x.dtype());
  const Array lo = int_constant(std::max(to_min, from_min), x.dtype());
  const Array hi = int_constant(std::min(to_max, from_max), x.dtype());
  return lax::convert_element_type(lax::min(lax::max(x, lo), hi), dtype);
}

// An integer bound of randint: converted to int first if it is not an integer, as JAX does.
Array integer_bound(const ArrayLike& v) {
  const Array a = v.array();
  return is_integer(a.dtype()) ? a : lax::convert_element_type(a, base::default_int_dtype());
}

DType unsigned_of(DType t) {
  switch (dtype_itemsize(t)) {
    case 1:
      return DType::uint8;
    case 2:
      return DType::uint16;
    case 4:
      return DType::uint32;
    default:
      return DType::uint64;
  }
}

Array broadcast_to_shape(const Array& x, const Shape& shape) {
  return x.shape() == shape ? x : frontend::broadcast_to(x, shape);
}

// JAX's _shuffle: ceil(3 ln(size) / ln(2^32 - 1)) rounds, each a stable sort of x along
// `axis` keyed by fresh random 32-bit words.
Array shuffle(Key key, Array x, int64_t axis) {
  const double rounds =
      std::ceil(3.0 * std::log(double(std::max<int64_t>(1, x.size()))) / std::log(4294967295.0));
  for (int r = 0; r < int(rounds); ++r) {
    const Key keys = split(key);
    key = keys[0];
    const Array sort_keys = random_bits(keys[1].data(), 32, x.shape(), partitionable());
    x = lax::sort({sort_keys, x}, axis, true, 1)[1];
  }
  return x;
}

// The smallest positive normal value of a float dtype (numpy's finfo(dtype).tiny).
double finfo_tiny(DType t) {
  switch (t) {
    case DType::float64:
      return std::ldexp(1.0, -1022);
    case DType::float16:
      return std::ldexp(1.0, -14);
    default:
      return std::ldexp(1.0, -126);  // float32 and bfloat16
  }
}

// The first n entries of x along axis.
Array head(const Array& x, int64_t axis, int64_t n) {
  std::vector<int64_t> start(size_t(x.ndim()), 0);
  std::vector<int64_t> limit(x.shape().begin(), x.shape().end());
  limit[size_t(axis)] = n;
  return lax::slice(x, start, limit);
}

// choice with probabilities p: inverse-CDF draws with replacement, Gumbel top-k without.
Array choice_indices_p(const Key& key, const Array& p, const Shape& shape, bool replace,
                       int64_t n_draws) {
  const DType t = p.dtype();
  const bool xla_cumsum = t == DType::float32 || t == DType::float64;
  if (replace) {
    const Array cdf = xla_cumsum ? xla_cpu::cumsum(p) : numpy::cumsum(p);
    const int64_t n = cdf.size();
    const Array total = lax::reshape(lax::slice(cdf, {n - 1}, {n}), {});
    const Array r = lax::mul(total, lax::sub(frontend::scalar(1.0, t), uniform(key, shape, t)));
    return lax::convert_element_type(numpy::searchsorted(cdf, r), base::default_int_dtype());
  }
  // Gumbel top-k: the n_draws smallest of -gumbel - log(p).
  const Array tiny = frontend::scalar(finfo_tiny(t), t);
  const Array u = uniform(key, p.shape(), t, tiny, 1.0);
  const auto log = [t](const Array& v) {
    return t == DType::float32 ? xla_cpu::log_f32(v) : lax::log(v);
  };
  const Array gumbel = lax::neg(log(lax::neg(log(u))));
  const Array g = lax::sub(lax::neg(gumbel), log(p));
  return head(numpy::argsort(g), 0, n_draws);
}

}  // namespace

namespace {

// JAX's _randint: the bounds clipped to dtype t, then two draws of t's width reduced
// modulo the span.
Array randint_draw(const Key& key, const Shape& shape, Array lo, Array hi, DType t) {
  check_shape("randint", shape, {lo.shape(), hi.shape()});
  const DType ut = unsigned_of(t);
  const int64_t nbits = dtype_itemsize(t) * 8;
  // Where maxval lies above the dtype's range (randint(key, s, 0, 2^32, uint32)), the span
  // grows by one to reach the top value.
  const Array above =
      lax::gt(hi, convert_and_clip(int_constant(int_range(t).second, t), hi.dtype()));
  lo = broadcast_to_shape(convert_and_clip(lo, t), shape);
  hi = broadcast_to_shape(convert_and_clip(hi, t), shape);
  const Array out_of_range = broadcast_to_shape(above, shape);
  const Key keys = split(key);
  const Array higher_bits = random_bits(keys[0].data(), nbits, shape, partitionable());
  const Array lower_bits = random_bits(keys[1].data(), nbits, shape, partitionable());
  const Array one = frontend::scalar_int(1, ut);
  Array span = lax::convert_element_type(lax::sub(hi, lo), ut);
  // maxval <= minval always gives minval (span 1); a span wrapping to 0 leaves the
  // remainders below as they are, which is right for the full range.
  span = lax::select(lax::le(hi, lo), lax::broadcast_in_dim(one, shape, {}), span);
  span = lax::select(lax::bitwise_and(out_of_range, lax::gt(hi, lo)), lax::add(span, one), span);
  // Two draws of nbits reduce the bias: (higher * 2^nbits + lower) mod span, with
  // 2^nbits mod span formed as (2^(nbits/2) mod span)^2 mod span (wrapping, as JAX does).
  Array multiplier = lax::rem(frontend::scalar_int(int64_t(1) << (nbits / 2), ut), span);
  multiplier = lax::rem(lax::mul(multiplier, multiplier), span);
  Array offset =
      lax::add(lax::mul(lax::rem(higher_bits, span), multiplier), lax::rem(lower_bits, span));
  offset = lax::rem(offset, span);
  return lax::add(lo, lax::convert_element_type(offset, t));
}

// A bound of a narrow randint as JAX >= 0.7.2 casts it: any dtype to int32 (integers
// wrap, floats truncate and saturate), then clipped to [lo, hi].
Array int32_bound(const Array& v, int64_t lo, int64_t hi) {
  const Array x = lax::convert_element_type(v, DType::int32);
  return lax::min(lax::max(x, frontend::scalar_int(lo, DType::int32)),
                  frontend::scalar_int(hi, DType::int32));
}

}  // namespace

Array randint(const Key& key, const Shape& shape, const ArrayLike& minval, const ArrayLike& maxval,
              std::optional<DType> dtype) {
  single_key(key, "randint");
  const DType t = dtype.value_or(base::default_int_dtype());  // given: honoured
  if (!is_integer(t)) {
    throw TypeError("randint only accepts integer dtypes, got " + std::string(dtype_name(t)));
  }
  Array lo = minval.array();
  Array hi = maxval.array();
  // Bounds are clipped to the dtype, but a C++ int beyond int32 cannot be parsed at all
  // with x64 off unless the dtype is 64-bit (JAX's OverflowError).
  frontend::check_literal_fits(lo, t);
  frontend::check_literal_fits(hi, t);
  if (dtype_itemsize(t) >= 4) {
    return randint_draw(key, shape, integer_bound(lo), integer_bound(hi), t);
  }
  // 8- and 16-bit dtypes draw int32 values between bounds clipped to the dtype's range
  // (maxval to one past it) and cast them, as JAX does since 0.7.2: the modulo's bias
  // then stays that of 64 bits of draws.
  const auto [t_min, t_max] = int_range(t);
  lo = int32_bound(lo, int64_t(t_min), int64_t(t_max));
  hi = int32_bound(hi, int64_t(t_min), int64_t(t_max) + 1);
  return lax::convert_element_type(randint_draw(key, shape, lo, hi, DType::int32), t);
}

Array truncated_normal(const Key& key, const ArrayLike& lower, const ArrayLike& upper,
                       OptionalShape shape, std::optional<DType> dtype) {
  single_key(key, "truncated_normal");
  const DType t = dtype.value_or(base::default_float_dtype());  // given: honoured
  if (!is_floating(t)) {
    throw ValueError("dtype argument to `truncated_normal` must be a float dtype, got " +
                     std::string(dtype_name(t)));
  }
  const Array lo = frontend::convert(lower.array(), t);
  const Array hi = frontend::convert(upper.array(), t);
  if (shape) {
    check_shape("truncated_normal", *shape, {lo.shape(), hi.shape()});
  } else {
    shape = frontend::broadcast_shapes("", std::vector<Shape>{lo.shape(), hi.shape()});
  }
  const double sqrt2 = std::sqrt(2.0);
  Array a, b, e;
  if (t == DType::float32) {
    // XLA turns the division by the constant sqrt(2) into a multiply by its reciprocal.
    const Array inv_sqrt2 = frontend::scalar(double(1.0f / float(sqrt2)), DType::float32);
    a = xla_cpu::erf_f32(lax::mul(lo, inv_sqrt2));
    b = xla_cpu::erf_f32(lax::mul(hi, inv_sqrt2));
  } else {
    a = lax::erf(lax::div(lo, frontend::scalar(sqrt2, t)));
    b = lax::erf(lax::div(hi, frontend::scalar(sqrt2, t)));
  }
  const Array u = uniform(key, *shape, t, a, b);
  if (t == DType::float64) {
    e = lax::erf_inv(u);  // XLA's erfInv64 is not reproduced, as in normal
  } else {
    e = lax::convert_element_type(
        xla_cpu::erf_inv_f32(lax::convert_element_type(u, DType::float32)), t);
  }
  const Array out = lax::mul(frontend::scalar(sqrt2, t), e);
  // Clipped into the open interval (lower, upper): rounding, or u = a, may land on a bound.
  const Array inf = frontend::scalar(INFINITY, t);
  const Array floor = lax::nextafter(stop_gradient(lo), inf);
  const Array ceiling = lax::nextafter(stop_gradient(hi), lax::neg(inf));
  return numpy::minimum(ceiling, numpy::maximum(floor, out));
}

Array permutation(const Key& key, const ArrayLike& x, int64_t axis, bool independent) {
  single_key(key, "permutation");
  const Array a = x.array();
  const int64_t ax = frontend::canonicalize_axis(axis, std::max<int64_t>(a.ndim(), 1));
  if (a.ndim() == 0) {
    if (!is_integer(a.dtype())) {
      throw TypeError("x must be an integer or at least 1-dimensional");
    }
    return shuffle(key, numpy::arange(a.item<int64_t>(), base::default_int_dtype()), ax);
  }
  if (independent || a.ndim() == 1) return shuffle(key, a, ax);
  // Every slice along the axis moves alike: the shuffled positions, then one gather.
  const Array order =
      shuffle(key, numpy::arange(a.shape()[size_t(ax)], base::default_int_dtype()), 0);
  return numpy::take(a, order, ax, std::nullopt, std::nullopt, true);
}

Array choice(const Key& key, const ArrayLike& a, const Shape& shape, bool replace,
             const std::optional<ArrayLike>& p, int64_t axis) {
  single_key(key, "choice");
  const Array arr = a.array();
  int64_t n_inputs = 0;
  if (arr.ndim() == 0) {
    n_inputs = is_integer(arr.dtype()) ? arr.item<int64_t>() : int64_t(arr.item<double>());
  } else {
    axis = frontend::canonicalize_axis(axis, arr.ndim());
    n_inputs = arr.shape()[size_t(axis)];
  }
  const int64_t n_draws = shape_size(shape);
  if (n_draws == 0) return numpy::zeros(shape, arr.dtype());
  if (n_inputs <= 0) throw ValueError("a must be greater than 0 unless no samples are taken");
  if (!replace && n_draws > n_inputs) {
    throw ValueError("Cannot take a larger sample (size " + std::to_string(n_draws) +
                     ") than population (size " + std::to_string(n_inputs) +
                     ") when 'replace=False'");
  }
  Array result;
  if (!p) {
    if (replace) {
      const Array ind = randint(key, shape, 0, n_inputs, base::default_int_dtype());
      result = arr.ndim() == 0 ? ind : numpy::take(arr, ind, axis);
    } else {
      const Array all =
          arr.ndim() == 0 ? permutation(key, n_inputs, axis) : permutation(key, arr, axis);
      result = head(all, arr.ndim() == 0 ? 0 : axis, n_draws);
    }
  } else {
    const Array pa = frontend::promote_dtypes_inexact({p->array()})[0];
    if (pa.shape() != Shape{n_inputs}) {
      throw ValueError(
          "p must be None or a 1D vector with the same size as a.shape[axis]. p has shape " +
          shape_str(pa.shape()) + " and a.shape[axis] is " + std::to_string(n_inputs) + ".");
    }
    const Array ind = choice_indices_p(key, pa, shape, replace, n_draws);
    result = arr.ndim() == 0 ? ind : numpy::take(arr, ind, axis);
  }
  if (arr.ndim() == 0) return lax::reshape(result, shape);
  // a's shape with the sampled axis replaced by `shape`.
  Shape out(arr.shape().begin(), arr.shape().begin() + axis);
  out.insert(out.end(), shape.begin(), shape.end());
  out.insert(out.end(), arr.shape().begin() + axis + 1, arr.shape().end());
  return lax::reshape(result, out);
}

}  // namespace parax::random

// Shared with distributions.cpp (random_internal.h).
namespace parax::random::detail {
void check_shape(const char* name, const Shape& shape, const std::vector<Shape>& params) {
  random::check_shape(name, shape, params);
}
double finfo_tiny(DType t) { return random::finfo_tiny(t); }
Array normal_erf_inv_f32(const Key& key, const Shape& shape) {
  // normal's uniform over [nextafter(-1, 0), 1), before its scaling by sqrt(2).
  const Array u = uniform(key, shape, DType::float32, double(std::nextafter(-1.0f, 0.0f)), 1.0);
  return xla_cpu::erf_inv_f32(u);
}
}  // namespace parax::random::detail
