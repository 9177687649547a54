// parax::nn: jax.nn's functions (jax/_src/nn/functions.py and ops/special.py's logsumexp),
// composed as JAX composes them. Where JAX attaches a custom_jvp (relu, relu6, softmax),
// the composition is chosen so that its ordinary derivative has JAX's values: relu keeps
// x where x > 0 and a stop_gradient'ed max(x, 0) elsewhere (derivative 0 at 0), softmax
// divides exp(x - stop_gradient(max)) by its sum, whose derivative is JAX's
// y * (dx - sum(y * dx)).
#include "parax/nn.h"

#include <cmath>
#include <limits>

#include "numpy/numpy_internal.h"
#include "parax/grad.h"
#include "parax/lax.h"

namespace parax::nn {
namespace {

namespace jnp = parax::numpy;
using frontend::constant_like;

constexpr double kInf = std::numeric_limits<double>::infinity();

// The canonical axes of `axis` for x, as a list (all of them for parax::None).
std::vector<int64_t> axes_of(const Array& x, const numpy::Axes& axis) {
  return frontend::reduction_axes(axis, x.ndim());
}

// max over `dims` with -inf as the initial value (jnp.max(..., initial=-inf, keepdims)).
Array max_keepdims(const Array& x, const std::vector<int64_t>& dims) {
  Array m = lax::reduce_max(x, dims);
  if (is_floating(x.dtype())) m = lax::max(m, constant_like(m, -kInf));
  return lax::expand_dims(m, dims);
}

// `where` as a bool mask of x's shape.
Array mask_of(const ArrayLike& where, const Array& x) {
  return jnp::broadcast_to(jnp::asarray(where, DType::bool_), x.shape());
}

// jnp.max(x, dims, where=mask, initial=-inf, keepdims=True).
Array masked_max_keepdims(const Array& x, const std::optional<Array>& mask,
                          const std::vector<int64_t>& dims) {
  if (!mask) return max_keepdims(x, dims);
  return max_keepdims(jnp::where(*mask, x, -kInf), dims);
}

// jnp.sum(x, dims, where=mask, keepdims).
Array masked_sum(const Array& x, const std::optional<Array>& mask, const std::vector<int64_t>& dims,
                 bool keepdims) {
  return jnp::sum(mask ? jnp::where(*mask, x, 0) : x, dims, keepdims);
}

// jnp.mean(x, axis, keepdims=True, where=mask): the masked sum over the count, computed
// in float32 for halves as jnp.mean does.
Array masked_mean(const Array& x, const Array& mask, const numpy::Axes& axis) {
  const DType result = base::to_inexact_dtype(x.dtype());
  const DType compute =
      result == DType::float16 || result == DType::bfloat16 ? DType::float32 : result;
  Array total = jnp::sum(jnp::where(mask, x, 0), axis, true, compute);
  Array count = jnp::sum(mask, axis, true, compute);
  return jnp::astype(lax::div(total, count), result);
}

}  // namespace

Array relu(const ArrayLike& x) {
  const Array& a = x.array();
  Array value = jnp::maximum(a, 0);
  if (!is_floating(value.dtype())) return value;
  // JAX's relu.defjvps: the tangent is kept only where x > 0.
  return jnp::where(a > 0, value, stop_gradient(value));
}

Array relu6(const ArrayLike& x) {
  const Array& a = x.array();
  Array value = jnp::minimum(jnp::maximum(a, 0), 6.0);
  if (!is_floating(value.dtype())) return value;
  return jnp::where(jnp::logical_and(a > 0, a < 6), value, stop_gradient(value));
}

Array gelu(const ArrayLike& x, bool approximate) {
  Array a = frontend::promote_args_inexact("gelu", {x.array()})[0];
  if (approximate) {
    Array sqrt_2_over_pi = frontend::scalar(std::sqrt(2 / M_PI), a.dtype());
    Array cdf = 0.5 * (1.0 + jnp::tanh(sqrt_2_over_pi * (a + 0.044715 * jnp::power(a, 3))));
    return a * cdf;
  }
  Array sqrt_half = frontend::scalar(std::sqrt(0.5), a.dtype());
  return jnp::asarray(0.5 * a * core::bind1(core::Prim::erfc, {-a * sqrt_half}), a.dtype());
}

Array sigmoid(const ArrayLike& x) { return lax::logistic(x); }

Array silu(const ArrayLike& x) { return x.array() * sigmoid(x); }
Array swish(const ArrayLike& x) { return silu(x); }

Array softplus(const ArrayLike& x) { return jnp::logaddexp(x, 0); }

Array log_sigmoid(const ArrayLike& x) { return -softplus(-x.array()); }

Array elu(const ArrayLike& x, const ArrayLike& alpha) {
  const Array& a = x.array();
  return jnp::where(a > 0, a, alpha.array() * jnp::expm1(jnp::where(a > 0, 0.0, a)));
}

Array celu(const ArrayLike& x, const ArrayLike& alpha) {
  const Array& a = x.array();
  return jnp::maximum(a, 0.0) + alpha.array() * jnp::expm1(jnp::minimum(a, 0.0) / alpha.array());
}

Array selu(const ArrayLike& x) {
  const double alpha = 1.6732632423543772848170429916717;
  const double scale = 1.0507009873554804934193349852946;
  return scale * elu(x, alpha);
}

Array leaky_relu(const ArrayLike& x, const ArrayLike& negative_slope) {
  const Array& a = x.array();
  return jnp::where(a >= 0, a, negative_slope.array() * a);
}

Array hard_tanh(const ArrayLike& x) {
  const Array& a = x.array();
  return jnp::where(a > 1, 1, jnp::where(a < -1, -1, a));
}

Array hard_sigmoid(const ArrayLike& x) { return relu6(x.array() + 3.0) / 6.0; }
Array hard_silu(const ArrayLike& x) { return x.array() * hard_sigmoid(x); }
Array hard_swish(const ArrayLike& x) { return hard_silu(x); }

Array soft_sign(const ArrayLike& x) {
  const Array& a = x.array();
  return a / (jnp::abs(a) + 1);
}

Array sparse_plus(const ArrayLike& x) {
  const Array& a = x.array();
  return jnp::where(a <= -1.0, 0.0, jnp::where(a >= 1.0, a, jnp::power(a + 1.0, 2) / 4));
}

Array squareplus(const ArrayLike& x, const ArrayLike& b) {
  std::vector<Array> xb = frontend::promote_args_inexact("squareplus", {x.array(), b.array()});
  Array y = xb[0] + jnp::sqrt(jnp::square(xb[0]) + xb[1]);
  return y / 2;
}

Array mish(const ArrayLike& x) {
  const Array& a = x.array();
  return a * jnp::tanh(softplus(a));
}

Array glu(const ArrayLike& x, int64_t axis) {
  const Array& a = x.array();
  const int64_t ax = frontend::canonicalize_axis(axis, a.ndim());
  if (a.shape()[size_t(ax)] % 2 != 0) {
    throw ValueError("[nn.glu] axis " + std::to_string(axis) + " of shape " + shape_str(a.shape()) +
                     " has odd size; expected it divisible by 2");
  }
  std::vector<Array> halves = jnp::split(a, 2, ax);
  return halves[0] * sigmoid(halves[1]);
}

Array softmax(const ArrayLike& x, numpy::Axes axis, std::optional<ArrayLike> where) {
  const Array& a = x.array();
  const std::vector<int64_t> dims = axes_of(a, axis);
  std::optional<Array> mask;
  if (where) mask = mask_of(*where, a);
  Array x_max = masked_max_keepdims(a, mask, dims);
  Array x_safe = mask ? jnp::where(*mask, a, -kInf) : a;
  Array unnormalized = jnp::exp(x_safe - stop_gradient(x_max));
  Array result = unnormalized / masked_sum(unnormalized, mask, dims, true);
  return mask ? jnp::where(*mask, result, 0) : result;
}

Array log_softmax(const ArrayLike& x, numpy::Axes axis, std::optional<ArrayLike> where) {
  const Array& a = x.array();
  const std::vector<int64_t> dims = axes_of(a, axis);
  std::optional<Array> mask;
  if (where) mask = mask_of(*where, a);
  Array x_max = masked_max_keepdims(a, mask, dims);
  Array x_safe = mask ? jnp::where(*mask, a, -kInf) : a;
  Array shifted = x_safe - stop_gradient(x_max);
  Array shifted_logsumexp = jnp::log(masked_sum(jnp::exp(shifted), mask, dims, true));
  Array result = shifted - shifted_logsumexp;
  return mask ? jnp::where(*mask, result, -kInf) : result;
}

Array logsumexp(const ArrayLike& a, numpy::Axes axis, bool keepdims, std::optional<ArrayLike> b,
                std::optional<ArrayLike> where) {
  Array x0 = a.array();
  std::optional<Array> mask;
  if (where) {
    mask = mask_of(*where, x0);
    x0 = jnp::where(*mask, x0, 0);
  }
  Array x;
  Array scale;
  if (b) {
    std::vector<Array> ab = frontend::promote_args_inexact("logsumexp", {x0, b->array()});
    x = jnp::where(ab[1] != 0, ab[0], -kInf);
    scale = ab[1];
  } else {
    x = frontend::promote_args_inexact("logsumexp", {x0})[0];
  }
  if (mask && x.shape() != mask->shape()) mask = jnp::broadcast_to(*mask, x.shape());
  const std::vector<int64_t> dims = axes_of(x, axis);
  // jnp.max(..., where, initial=-inf): the identity of an empty reduction.
  Array amax = lax::max(lax::reduce_max(mask ? jnp::where(*mask, x, -kInf) : x, dims),
                        constant_like(x, -kInf));
  if (keepdims) amax = lax::expand_dims(amax, dims);
  // A row without a finite maximum (all -inf, or holding inf or NaN) shifts by 0.
  amax = stop_gradient(lax::select(jnp::isfinite(amax), amax, jnp::zeros_like(amax)));
  Array amax_with_dims = keepdims ? amax : lax::expand_dims(amax, dims);
  Array exp_a = jnp::exp(x - amax_with_dims);
  if (b) exp_a = exp_a * scale;
  Array sumexp = masked_sum(exp_a, mask, dims, keepdims);
  Array sign = lax::sign(sumexp);
  sumexp = lax::abs(sumexp);
  Array out = lax::add(lax::log(sumexp), amax);
  if (b) out = jnp::where(sign < 0, constant_like(out, std::nan("")), out);
  return out;
}

Array logmeanexp(const ArrayLike& a, numpy::Axes axis, bool keepdims) {
  Array lse = logsumexp(a, axis, keepdims);
  int64_t count = 1;
  for (int64_t d : axes_of(a.array(), axis)) count *= a.array().shape()[size_t(d)];
  return lse - jnp::log(frontend::scalar(double(count), lse.dtype()));
}

Array standardize(const ArrayLike& x, numpy::Axes axis, std::optional<ArrayLike> mean,
                  std::optional<ArrayLike> variance, const ArrayLike& epsilon,
                  std::optional<ArrayLike> where) {
  const Array& a = x.array();
  std::optional<Array> mask;
  if (where) mask = mask_of(*where, a);
  auto mean_of = [&](const Array& v) {
    return mask ? masked_mean(v, *mask, axis) : jnp::mean(v, axis, true);
  };
  Array m = mean ? mean->array() : mean_of(a);
  Array v;
  if (variance) {
    v = variance->array();
  } else {
    v = mean_of(jnp::square(a)) - jnp::square(m);
    v = jnp::clip(v, ArrayLike(0), std::nullopt);
  }
  return jnp::subtract(a, m) * lax::rsqrt(v + epsilon.array());
}

Array one_hot(const ArrayLike& x, int64_t num_classes, std::optional<DType> dtype, int64_t axis) {
  const Array& a = x.array();
  const DType out_dtype = dtype.value_or(base::default_float_dtype());
  const int64_t out_axis = frontend::canonicalize_axis(axis, a.ndim() + 1);
  Array lhs = lax::expand_dims(a, {out_axis});
  Shape rhs_shape(size_t(a.ndim()), 1);
  rhs_shape.insert(rhs_shape.begin() + out_axis, num_classes);
  Array rhs = lax::broadcasted_iota(a.dtype(), rhs_shape, out_axis);
  return (lhs == rhs).astype(out_dtype);
}

}  // namespace parax::nn
