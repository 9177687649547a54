// parax::nn: jax.nn's functions (activations, softmax, one_hot, ...), as compositions of
// parax::numpy and parax::lax with JAX's values, dtypes and derivatives. The torch-style
// modules share the namespace (module.h); this header holds the functions only.
#pragma once

#include <optional>

#include "parax/array.h"
#include "parax/numpy.h"

namespace parax::nn {

// Activations, elementwise. Derivatives are JAX's: relu's is 0 at 0 (and relu6's at 0 and
// 6), leaky_relu's is 1 at 0.
Array relu(const ArrayLike& x);
Array relu6(const ArrayLike& x);
// x * Phi(x): the tanh approximation when `approximate` (JAX's default), else through erfc.
Array gelu(const ArrayLike& x, bool approximate = true);
Array sigmoid(const ArrayLike& x);
Array silu(const ArrayLike& x);
Array swish(const ArrayLike& x);
Array softplus(const ArrayLike& x);
Array log_sigmoid(const ArrayLike& x);
Array elu(const ArrayLike& x, const ArrayLike& alpha = 1.0);
Array celu(const ArrayLike& x, const ArrayLike& alpha = 1.0);
Array selu(const ArrayLike& x);
Array leaky_relu(const ArrayLike& x, const ArrayLike& negative_slope = 0.01);
Array hard_tanh(const ArrayLike& x);
Array hard_sigmoid(const ArrayLike& x);
Array hard_silu(const ArrayLike& x);
Array hard_swish(const ArrayLike& x);
Array soft_sign(const ArrayLike& x);
Array sparse_plus(const ArrayLike& x);
Array squareplus(const ArrayLike& x, const ArrayLike& b = 4);
Array mish(const ArrayLike& x);
// Splits x in two halves along `axis` and gates the first by sigmoid of the second.
// Requires: x.shape[axis] is even.
Array glu(const ArrayLike& x, int64_t axis = -1);

// Normalizations along `axis` (one, several, or parax::None for all), stable as JAX's:
// the (stop_gradient'ed) maximum is subtracted before exponentiating. With `where` (bool,
// broadcasting to x), only those elements take part; the others give 0 (softmax) or -inf
// (log_softmax).
Array softmax(const ArrayLike& x, numpy::Axes axis = -1,
              std::optional<ArrayLike> where = std::nullopt);
Array log_softmax(const ArrayLike& x, numpy::Axes axis = -1,
                  std::optional<ArrayLike> where = std::nullopt);
// log(sum(b * exp(a))) over `axis` (all by default), over the elements `where` holds;
// rows of -inf give -inf, negative sums with `b` give NaN (as jax.nn.logsumexp).
Array logsumexp(const ArrayLike& a, numpy::Axes axis = {}, bool keepdims = false,
                std::optional<ArrayLike> b = std::nullopt,
                std::optional<ArrayLike> where = std::nullopt);
// logsumexp minus the log of the number of elements reduced.
Array logmeanexp(const ArrayLike& a, numpy::Axes axis = {}, bool keepdims = false);
// (x - mean) / sqrt(variance + epsilon) along `axis`, the mean and variance computed as
// JAX's "fast" algorithm (mean(x^2) - mean(x)^2, clipped at 0) over the elements `where`
// holds, unless given.
Array standardize(const ArrayLike& x, numpy::Axes axis = -1,
                  std::optional<ArrayLike> mean = std::nullopt,
                  std::optional<ArrayLike> variance = std::nullopt, const ArrayLike& epsilon = 1e-5,
                  std::optional<ArrayLike> where = std::nullopt);

// Returns x's integers one-hot encoded along a new axis `axis` of size num_classes (out of
// range indices encode as all zeros), of `dtype` (default: float32, float64 with x64).
Array one_hot(const ArrayLike& x, int64_t num_classes, std::optional<DType> dtype = std::nullopt,
              int64_t axis = -1);

}  // namespace parax::nn
