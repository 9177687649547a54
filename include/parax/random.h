// parax::random: JAX's jax.random with the threefry2x32 generator, bit for bit. Which
// counter layout `bits` and `split` use follows the config flag jax_threefry_partitionable
// (default true, as in JAX >= 0.5), read when a function is called or traced.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <tuple>

#include "parax/array.h"

namespace parax::random {

// A typed key array (JAX's dtype key<fry>): shape() is the key array's shape, and its
// data (key_data) is uint32[*shape, 2]. A pytree with one leaf, so keys pass through jit.
// A raw uint32[..., 2] array (PRNGKey's result) converts implicitly, as JAX's functions
// accept raw keys.
class Key {
 public:
  Key() = default;
  // Wraps key data. Requires: uint32[..., 2] (else TypeError).
  Key(const Array& data);  // NOLINT(google-explicit-constructor): raw keys convert

  Shape shape() const;
  int64_t ndim() const { return int64_t(shape().size()); }
  int64_t size() const { return shape_size(shape()); }
  // Returns keys[i] (a negative i counts from the end). Requires: ndim() >= 1.
  Key operator[](int64_t i) const;
  // Returns the uint32[*shape, 2] data.
  const Array& data() const { return data_; }
  // Returns JAX's repr: `Array((), dtype=key<fry>) overlaying:\n[ 0 42]`.
  std::string to_string() const;

  friend std::tuple<Array&> parax_pytree_fields(Key& k) { return std::tie(k.data_); }
  friend std::tuple<const Array&> parax_pytree_fields(const Key& k) { return std::tie(k.data_); }
  friend const char* parax_pytree_name(const Key*) { return "Key"; }

 private:
  Array data_;
};

// Prints JAX's repr of a key array.
std::ostream& operator<<(std::ostream& os, const Key& k);

// Returns a scalar typed key from an integer seed: [0, seed mod 2^32], or with
// jax_enable_x64 the seed's high and low 32-bit words.
Key key(int64_t seed);
// Returns the same words as key(seed) as a raw uint32[2] array.
Array PRNGKey(int64_t seed);
// Returns the uint32[*shape, 2] data of a key array (a raw key's own words).
Array key_data(const Key& keys);
// Returns keys overlaying uint32[..., 2] data. Requires: that dtype and last dimension.
Key wrap_key_data(const Array& data);

// Returns `num` new keys (shape (num,)); split(key) gives two.
Key split(const Key& key, int64_t num = 2);
// Returns new keys of key array shape `shape`.
Key split(const Key& key, const Shape& shape);
// Returns a new key mixing in `data` (a C++ integer must lie in uint32's range; an array is
// converted to uint32, wrapping); the same in both modes.
Key fold_in(const Key& key, const ArrayLike& data);

// Without a dtype, the samplers use JAX's defaults: uint32 bits, float32 values and int32
// integers, their 64-bit types with jax_enable_x64. A dtype given is honoured in both modes.

// Returns random bits of an unsigned dtype.
Array bits(const Key& key, const Shape& shape = {}, std::optional<DType> dtype = std::nullopt);
// Returns values uniform in [minval, maxval) of a floating dtype.
Array uniform(const Key& key, const Shape& shape = {}, std::optional<DType> dtype = std::nullopt,
              const ArrayLike& minval = 0.0, const ArrayLike& maxval = 1.0);
// Returns standard normal values (float32 runs XLA's erf_inv, FMA in its Horner steps).
Array normal(const Key& key, const Shape& shape = {}, std::optional<DType> dtype = std::nullopt);
// Returns true with probability p (bool array of `shape`, or p's shape).
Array bernoulli(const Key& key, const ArrayLike& p = 0.5, OptionalShape shape = std::nullopt);

// Returns integers uniform in [minval, maxval) of an integer dtype, with JAX's two draws
// of bits; the bounds are clipped to the dtype, and maxval <= minval gives minval.
Array randint(const Key& key, const Shape& shape, const ArrayLike& minval, const ArrayLike& maxval,
              std::optional<DType> dtype = std::nullopt);
// Returns standard normal values truncated to (lower, upper), of `shape` (else the bounds'
// broadcast shape). Requires: a float dtype (else ValueError).
Array truncated_normal(const Key& key, const ArrayLike& lower, const ArrayLike& upper,
                       OptionalShape shape = std::nullopt,
                       std::optional<DType> dtype = std::nullopt);
// Returns x shuffled along `axis` (each slice on its own when `independent`), or a shuffled
// arange(x) when x is an integer scalar.
Array permutation(const Key& key, const ArrayLike& x, int64_t axis = 0, bool independent = false);
// Returns `shape` samples of a's entries along `axis` (of arange(a) for an integer a), with
// or without replacement, uniformly or with probabilities p (a vector as long as that axis).
Array choice(const Key& key, const ArrayLike& a, const Shape& shape = {}, bool replace = true,
             const std::optional<ArrayLike>& p = std::nullopt, int64_t axis = 0);

// ---- distributions (jax.random's samplers, bit for bit in both threefry modes) ----
// Parameters broadcast to `shape` (which must equal their broadcast with it); without a
// shape the parameters' broadcast shape is drawn. Each takes a single key (a key array
// raises ValueError, as in JAX: vmap maps over keys).

// Returns Gamma(a, 1) samples (Marsaglia-Tsang, one key per element). Differentiable in
// a by implicit reparameterization, as JAX's.
Array gamma(const Key& key, const ArrayLike& a, OptionalShape shape = std::nullopt,
            std::optional<DType> dtype = std::nullopt);
// Returns log of Gamma(a, 1) samples, computed in log space (accurate for small a).
Array loggamma(const Key& key, const ArrayLike& a, OptionalShape shape = std::nullopt,
               std::optional<DType> dtype = std::nullopt);
// Returns Beta(a, b) samples.
Array beta(const Key& key, const ArrayLike& a, const ArrayLike& b,
           OptionalShape shape = std::nullopt, std::optional<DType> dtype = std::nullopt);
// Returns Dirichlet(alpha) samples along alpha's last axis, of shape `shape + (k,)`.
Array dirichlet(const Key& key, const ArrayLike& alpha, OptionalShape shape = std::nullopt,
                std::optional<DType> dtype = std::nullopt);
// Returns Exponential(1) samples.
Array exponential(const Key& key, const Shape& shape = {},
                  std::optional<DType> dtype = std::nullopt);
// Returns standard Gumbel samples. mode "low" draws one uniform each (float32 values reach
// about 16); "high" draws two, refining uniforms below 1/2 (values reach about 32);
// "highest" takes float32 uniforms from 64 bits, both tails exact (other dtypes: "high").
// Without a mode, the config flag jax_high_dynamic_range_gumbel picks "high" or "low"
// (default false: "low"), as in JAX.
Array gumbel(const Key& key, const Shape& shape = {}, std::optional<DType> dtype = std::nullopt,
             std::optional<std::string> mode = std::nullopt);
// Returns category indices drawn from softmax(logits) along `axis`, of `shape` (else
// logits' shape without `axis`): with replacement by Gumbel-max, without replacement
// (`replace` false) by Gumbel top-k over prod(shape's leading extra dimensions) draws per
// distribution, which must not exceed the number of categories (else ValueError). `mode`
// is gumbel's.
Array categorical(const Key& key, const ArrayLike& logits, int64_t axis = -1,
                  OptionalShape shape = std::nullopt, bool replace = true,
                  std::optional<std::string> mode = std::nullopt);
// Returns standard Laplace, logistic and Cauchy samples.
Array laplace(const Key& key, const Shape& shape = {}, std::optional<DType> dtype = std::nullopt);
Array logistic(const Key& key, const Shape& shape = {}, std::optional<DType> dtype = std::nullopt);
Array cauchy(const Key& key, const Shape& shape = {}, std::optional<DType> dtype = std::nullopt);
// Returns Pareto(b) samples on [1, inf).
Array pareto(const Key& key, const ArrayLike& b, OptionalShape shape = std::nullopt,
             std::optional<DType> dtype = std::nullopt);
// Returns Student's t samples with `df` degrees of freedom.
Array t(const Key& key, const ArrayLike& df, OptionalShape shape = std::nullopt,
        std::optional<DType> dtype = std::nullopt);
// Returns chi-square samples with `df` degrees of freedom.
Array chisquare(const Key& key, const ArrayLike& df, OptionalShape shape = std::nullopt,
                std::optional<DType> dtype = std::nullopt);
// Returns F(dfnum, dfden) samples.
Array f(const Key& key, const ArrayLike& dfnum, const ArrayLike& dfden,
        OptionalShape shape = std::nullopt, std::optional<DType> dtype = std::nullopt);
// Returns -1 or 1 with equal probability (an int dtype by default).
Array rademacher(const Key& key, const Shape& shape = {},
                 std::optional<DType> dtype = std::nullopt);
// Returns one-sided Maxwell samples (the norm of three standard normals).
Array maxwell(const Key& key, const Shape& shape = {}, std::optional<DType> dtype = std::nullopt);
// Returns double-sided Maxwell samples; the result's shape is `shape` (or none) followed by
// loc's and scale's broadcast shape, as in JAX.
Array double_sided_maxwell(const Key& key, const ArrayLike& loc, const ArrayLike& scale,
                           const Shape& shape = {}, std::optional<DType> dtype = std::nullopt);
// Returns Weibull samples: scale * (-log(1 - u))^(1 / concentration).
Array weibull_min(const Key& key, const ArrayLike& scale, const ArrayLike& concentration,
                  const Shape& shape = {}, std::optional<DType> dtype = std::nullopt);
// Returns samples with density proportional to exp(-|x|^p).
Array generalized_normal(const Key& key, double p, const Shape& shape = {},
                         std::optional<DType> dtype = std::nullopt);
// Returns points uniform in the unit Lp ball of dimension d, of shape `shape + (d,)`.
Array ball(const Key& key, int64_t d, double p = 2, const Shape& shape = {},
           std::optional<DType> dtype = std::nullopt);
// Returns triangular samples on [left, right] peaking at mode.
Array triangular(const Key& key, const ArrayLike& left, const ArrayLike& mode,
                 const ArrayLike& right, OptionalShape shape = std::nullopt,
                 std::optional<DType> dtype = std::nullopt);
// Returns exp(sigma * normal) samples.
Array lognormal(const Key& key, const ArrayLike& sigma = 1.0, OptionalShape shape = std::nullopt,
                std::optional<DType> dtype = std::nullopt);
// Returns the number of Bernoulli(p) trials up to the first success (an int dtype).
Array geometric(const Key& key, const ArrayLike& p, OptionalShape shape = std::nullopt,
                std::optional<DType> dtype = std::nullopt);
// Returns samples of the multivariate normal N(mean, cov): mean (..., n), cov (..., n, n),
// their batch shapes broadcast (or `shape`, which must broadcast with them), result
// `shape + (n,)`. cov's factor comes from method "cholesky" (NaN for a singular cov),
// "eigh" or "svd"; the dtype defaults to mean's and cov's promoted float dtype.
Array multivariate_normal(const Key& key, const ArrayLike& mean, const ArrayLike& cov,
                          OptionalShape shape = std::nullopt,
                          std::optional<DType> dtype = std::nullopt,
                          const std::string& method = "cholesky");
// Returns matrices uniform on the orthogonal group O(n), of shape `shape + (n, m)`: with
// m != n (default m = n), semi-orthogonal (orthonormal rows if n < m, columns if n > m).
Array orthogonal(const Key& key, int64_t n, const Shape& shape = {},
                 std::optional<DType> dtype = std::nullopt,
                 std::optional<int64_t> m = std::nullopt);
// Returns Poisson(lam) counts: Knuth's method below lam = 10, Hormann's transformed
// rejection above, as JAX (lam is taken as float32).
Array poisson(const Key& key, const ArrayLike& lam, OptionalShape shape = std::nullopt,
              std::optional<DType> dtype = std::nullopt);
// Returns Binomial(n, p) counts as floats: inversion for n p <= 10, Hormann's BTRS
// rejection above; NaN for invalid n or p, inf for infinite n.
Array binomial(const Key& key, const ArrayLike& n, const ArrayLike& p,
               OptionalShape shape = std::nullopt, std::optional<DType> dtype = std::nullopt);
// Returns Rayleigh(scale) samples: scale * sqrt(-2 log u).
Array rayleigh(const Key& key, const ArrayLike& scale, OptionalShape shape = std::nullopt,
               std::optional<DType> dtype = std::nullopt);
// Returns Wald (inverse Gaussian) samples of the given mean.
Array wald(const Key& key, const ArrayLike& mean, OptionalShape shape = std::nullopt,
           std::optional<DType> dtype = std::nullopt);

// JAX's threefry_2x32(keypair, count): hashes uint32 counters of any shape under the key
// words (reference/jax-random.md §4). Requires: keypair uint32[2], count uint32.
Array threefry_2x32(const Array& keypair, const Array& count);

}  // namespace parax::random
