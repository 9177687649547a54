"""Writes tests/golden/distribution_cases.txt: what JAX (CPU) draws from jax.random's
distributions, in both threefry modes, and the special functions' values and the gamma
samplers' gradients (tests/random/distributions_test.cpp computes the same cases with parax).

    python3 tools/make_distribution_goldens.py

Format: tests/support/golden.h's `name<TAB>text` records (text unicode_escape'd).
  p/<case>, o/<case>   `dtype|shape|v0,v1,...` with jax_threefry_partitionable True (p) or
                       False (o); floats as the repr of their exact value.
  x64/p/<case>, ...    the same with jax_enable_x64.
  special/<case>       values of a special function (one mode: they use no keys).
  err/<case>           `!ErrorKind: message`, what JAX raises.
The case names and arguments are mirrored in distributions_test.cpp.
"""
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden",
                   "distribution_cases.txt")

R = jax.random
K = R.key
f32 = jnp.float32
f16 = jnp.float16
bf16 = jnp.bfloat16

alpha3 = jnp.array([0.3, 1.0, 4.5], f32)
alpha_grid = jnp.array([0.01, 0.1, 0.5, 0.9, 1.0, 1.5, 3.0, 10.0, 50.0, 200.0], f32)
logits23 = jnp.array([[0.1, -1.0, 2.0], [0.5, 0.5, 0.5]], f32)
lam_grid = jnp.array([0.0, 0.5, 3.0, 9.9, 10.0, 25.0, 150.0, 1000.0], f32)
mean3 = jnp.array([1.0, -2.0, 0.5], f32)
cov3 = jnp.array([[2.0, 0.3, -0.4], [0.3, 1.0, 0.2], [-0.4, 0.2, 0.5]], f32)
mean23 = jnp.array([[0.0, 1.0, 2.0], [-1.0, -2.0, -3.0]], f32)
cov233 = jnp.stack([cov3, jnp.array([[1.0, 0.5, 0.0], [0.5, 2.0, -0.7], [0.0, -0.7, 3.0]], f32)])
logits10 = jnp.array([0.3, -1.2, 2.0, 0.0, 0.7, -0.5, 1.1, -2.0, 0.4, 0.9], f32)


def spd(n, batch=1):
    """An n x n covariance exact in float32: A A^T + n I, A's entries halves."""
    a = np.array([[((i * 7 + j * 3) % 5 - 2) / 2 for j in range(n)] for i in range(n)])
    c = a @ a.T + n * np.eye(n)
    return jnp.array(np.stack([c * (b + 1) for b in range(batch)]) if batch > 1 else c, f32)


def mean_of(n):
    return jnp.array([(i % 3) - 1.0 for i in range(n)], f32)


# exact in float32 (quarters), so that the C++ test builds the same logits
logits_3d = jnp.array(((np.arange(60) * 7) % 13 / 4.0 - 1.5).reshape(4, 5, 3), f32)


def vmap_keys(fn, n=4, seed=0):
    return lambda: jax.vmap(fn)(R.split(K(seed), n))


CASES = {
    # gamma: the Marsaglia-Tsang loop, boosting below 1, per-element keys.
    "gamma_scalar": lambda: R.gamma(K(0), 2.5),
    "gamma_grid": lambda: R.gamma(K(1), alpha_grid),
    "gamma_shape": lambda: R.gamma(K(2), alpha3, (2, 3)),
    "gamma_1000": lambda: R.gamma(K(3), 1.7, (1000,)),
    "gamma_small_alpha": lambda: R.gamma(K(4), 0.2, (200,)),
    "gamma_f16": lambda: R.gamma(K(5), 2.0, (20,), f16),
    "gamma_bf16": lambda: R.gamma(K(6), 0.7, (20,), bf16),
    "gamma_empty": lambda: R.gamma(K(7), 1.0, (0,)),
    "loggamma_grid": lambda: R.loggamma(K(1), alpha_grid),
    "loggamma_tiny": lambda: R.loggamma(K(8), 1e-3, (100,)),
    "loggamma_shape": lambda: R.loggamma(K(9), alpha3, (4, 3)),
    "beta": lambda: R.beta(K(10), 0.5, 2.0, (50,)),
    "beta_bcast": lambda: R.beta(K(11), alpha3, jnp.array([[1.0], [3.0]], f32)),
    "dirichlet": lambda: R.dirichlet(K(12), alpha3),
    "dirichlet_shape": lambda: R.dirichlet(K(13), jnp.array([0.1, 1.0, 5.0, 2.0], f32), (6,)),
    "chisquare": lambda: R.chisquare(K(14), 3.0, (50,)),
    "chisquare_bcast": lambda: R.chisquare(K(15), alpha3),
    "f": lambda: R.f(K(16), 4.0, 7.0, (50,)),
    "t": lambda: R.t(K(17), 5.0, (50,)),
    "t_bcast": lambda: R.t(K(18), alpha3, (2, 3)),
    "generalized_normal": lambda: R.generalized_normal(K(19), 1.5, (40,)),
    "generalized_normal_p2": lambda: R.generalized_normal(K(20), 2.0, (3, 4)),
    "ball": lambda: R.ball(K(21), 3, shape=(10,)),
    "ball_p1": lambda: R.ball(K(22), 4, 1, (5,)),
    # the closed-form samplers
    "exponential": lambda: R.exponential(K(30), (1000,)),
    "exponential_f16": lambda: R.exponential(K(31), (50,), f16),
    "exponential_bf16": lambda: R.exponential(K(32), (50,), bf16),
    "exponential_scalar": lambda: R.exponential(K(33)),
    "gumbel": lambda: R.gumbel(K(34), (1000,)),
    "gumbel_high": lambda: R.gumbel(K(35), (200,), mode="high"),
    "gumbel_2d": lambda: R.gumbel(K(36), (3, 5)),
    "laplace": lambda: R.laplace(K(37), (1000,)),
    "laplace_f16": lambda: R.laplace(K(38), (50,), f16),
    "logistic": lambda: R.logistic(K(39), (1000,)),
    "cauchy": lambda: R.cauchy(K(40), (1000,)),
    "pareto": lambda: R.pareto(K(41), 3.0, (200,)),
    "pareto_bcast": lambda: R.pareto(K(42), alpha3),
    "weibull": lambda: R.weibull_min(K(43), 2.0, 1.5, (200,)),
    "maxwell": lambda: R.maxwell(K(44), (200,)),
    "double_sided_maxwell": lambda: R.double_sided_maxwell(K(45), 1.0, 2.0, (100,)),
    "double_sided_maxwell_params": lambda: R.double_sided_maxwell(
        K(46), jnp.array([0.0, 1.0], f32), 2.0),
    "triangular": lambda: R.triangular(K(47), -1.0, 0.5, 2.0, (200,)),
    "triangular_bcast": lambda: R.triangular(K(48), jnp.array([0.0, -2.0], f32), 0.5, 3.0),
    "lognormal": lambda: R.lognormal(K(49), 0.5, (200,)),
    "lognormal_default": lambda: R.lognormal(K(50)),
    "rademacher": lambda: R.rademacher(K(51), (50,)),
    "rademacher_f32": lambda: R.rademacher(K(52), (10,), f32),
    "geometric": lambda: R.geometric(K(53), 0.3, (200,)),
    "geometric_bcast": lambda: R.geometric(K(54), jnp.array([0.05, 0.5, 0.95], f32)),
    "categorical": lambda: R.categorical(K(55), logits23),
    "categorical_axis0": lambda: R.categorical(K(56), logits23, axis=0),
    "categorical_shape": lambda: R.categorical(K(57), logits23, shape=(4, 2)),
    "categorical_1d": lambda: R.categorical(K(58), jnp.log(jnp.array([0.1, 0.2, 0.7], f32)),
                                            shape=(500,)),
    "poisson_grid": lambda: R.poisson(K(60), lam_grid),
    "poisson_small": lambda: R.poisson(K(61), 2.5, (300,)),
    "poisson_large": lambda: R.poisson(K(62), 40.0, (300,)),
    "poisson_shape": lambda: R.poisson(K(63), jnp.array([1.0, 20.0], f32), (3, 2)),
    "binomial": lambda: R.binomial(K(64), 20.0, 0.3, (200,)),
    "binomial_btrs": lambda: R.binomial(K(65), 100.0, 0.4, (200,)),
    "binomial_high_p": lambda: R.binomial(K(66), 50.0, 0.9, (100,)),
    "binomial_grid": lambda: R.binomial(
        K(67), jnp.array([0.0, 5.0, 30.0, 1000.0, -1.0, jnp.inf, jnp.nan, 7.5], f32),
        jnp.array([0.5, 0.2, 0.7, 0.05, 0.5, 0.3, 0.5, 0.6], f32)),
    "binomial_bad_p": lambda: R.binomial(K(68), 10.0, jnp.array([-0.1, jnp.nan, 1.0, 0.0], f32)),
    "rayleigh": lambda: R.rayleigh(K(69), 2.0, (200,)),
    "wald": lambda: R.wald(K(75), jnp.array([0.5, 1.0, 3.0], f32), (4, 3)),
    # multivariate_normal: the three factorizations, batches of mean and cov
    "mvn": lambda: R.multivariate_normal(K(80), mean3, cov3),
    "mvn_shape": lambda: R.multivariate_normal(K(81), mean3, cov3, (50,)),
    "mvn_eigh": lambda: R.multivariate_normal(K(82), mean3, cov3, (50,), method="eigh"),
    "mvn_svd": lambda: R.multivariate_normal(K(83), mean3, cov3, (50,), method="svd"),
    "mvn_mean_batch": lambda: R.multivariate_normal(K(84), mean23, cov3, (4, 2)),
    "mvn_cov_batch": lambda: R.multivariate_normal(K(85), mean3, cov233),
    "mvn_cov_batch_eigh": lambda: R.multivariate_normal(K(86), mean23, cov233, (5, 2),
                                                        method="eigh"),
    "mvn_dim1": lambda: R.multivariate_normal(K(87), jnp.array([3.0], f32),
                                              jnp.array([[4.0]], f32), (20,)),
    "mvn_singular_cholesky": lambda: R.multivariate_normal(
        K(0), jnp.zeros(2, f32), jnp.ones((2, 2), f32), (10,)),
    "mvn_singular_eigh": lambda: R.multivariate_normal(
        K(0), jnp.zeros(2, f32), jnp.ones((2, 2), f32), (10,), method="eigh"),
    "mvn_singular_svd": lambda: R.multivariate_normal(
        K(0), jnp.zeros(2, f32), jnp.ones((2, 2), f32), (10,), method="svd"),
    # wider products: YNNPACK's blocked sum (8+ rows), FMA loops (fewer rows, batches)
    "mvn_n5": lambda: R.multivariate_normal(K(120), mean_of(5), spd(5), (20,)),
    "mvn_n8": lambda: R.multivariate_normal(K(121), mean_of(8), spd(8), (9,)),
    "mvn_n6_few": lambda: R.multivariate_normal(K(122), mean_of(6), spd(6), (3,)),
    "mvn_n7_batch": lambda: R.multivariate_normal(K(123), mean_of(7), spd(7, 2)),
    "mvn_n16_eigh": lambda: R.multivariate_normal(K(124), mean_of(16), spd(16), (10,),
                                                  method="eigh"),
    "mvn_n13_svd": lambda: R.multivariate_normal(K(125), mean_of(13), spd(13), (2, 6),
                                                 method="svd"),
    # orthogonal: QR of a normal matrix, signs fixed by R's diagonal
    "orthogonal": lambda: R.orthogonal(K(90), 3),
    "orthogonal_shape": lambda: R.orthogonal(K(91), 4, (2,)),
    "orthogonal_wide": lambda: R.orthogonal(K(92), 2, (3,), m=4),
    "orthogonal_tall": lambda: R.orthogonal(K(93), 4, m=2),
    "orthogonal_batch2": lambda: R.orthogonal(K(94), 5, (2, 3)),
    "orthogonal_1": lambda: R.orthogonal(K(95), 1, (4,)),
    "orthogonal_0": lambda: R.orthogonal(K(96), 0, (2,), m=3),
    # categorical without replacement (Gumbel top-k) and with mode="high"
    "categorical_noreplace": lambda: R.categorical(K(100), logits10, shape=(4,), replace=False),
    "categorical_noreplace_all": lambda: R.categorical(K(101), logits10, shape=(10,),
                                                       replace=False),
    "categorical_noreplace_axis0": lambda: R.categorical(K(102), logits23.T, axis=0,
                                                         shape=(2, 2), replace=False),
    "categorical_noreplace_3d": lambda: R.categorical(K(103), logits_3d, axis=1,
                                                      shape=(2, 2, 4, 3), replace=False),
    "categorical_noreplace_high": lambda: R.categorical(K(104), logits10, shape=(3,),
                                                        replace=False, mode="high"),
    "categorical_high": lambda: R.categorical(K(105), logits23, shape=(6, 2), mode="high"),
    "categorical_high_1d": lambda: R.categorical(K(106), jnp.log(jnp.array([0.1, 0.2, 0.7], f32)),
                                                 shape=(300,), mode="high"),
    "gumbel_high_2d": lambda: R.gumbel(K(107), (4, 6), mode="high"),
    "gumbel_high_f16": lambda: R.gumbel(K(108), (50,), f16, mode="high"),
    "gumbel_highest_bf16": lambda: R.gumbel(K(108), (50,), bf16, mode="highest"),
    "gumbel_highest": lambda: R.gumbel(K(110), (1000,), mode="highest"),
    "gumbel_highest_2d": lambda: R.gumbel(K(111), (3, 7), mode="highest"),
    "categorical_highest": lambda: R.categorical(K(112), logits23, shape=(6, 2), mode="highest"),
    "categorical_noreplace_highest": lambda: R.categorical(K(113), logits10, shape=(5,),
                                                           replace=False, mode="highest"),
    # cases of JAX's tests/random_lax_test.py
    "beta_small_params": lambda: R.beta(K(0), 0.0001, 0.0002, (100,)),
    "dirichlet_small_alpha": lambda: R.dirichlet(K(0), 0.00001 * jnp.ones(3), (100,)),
    "poisson_zeros": lambda: R.poisson(
        K(0), jnp.concatenate([jnp.zeros(10), 20 * jnp.ones(10)]), (2, 20)),
    "poisson_corner_cases": lambda: R.poisson(K(0), jnp.array([-1, 0, jnp.nan]), (3,)),
    "gamma_vs_loggamma_a": lambda: R.gamma(K(0), 0.1, (100,)),
    "loggamma_vs_gamma_a": lambda: R.loggamma(K(0), 0.1, (100,)),
    # key batches: vmap over split keys gives each key's own draw
    "vmap_gamma": vmap_keys(lambda k: R.gamma(k, 1.3, (3,))),
    "vmap_exponential": vmap_keys(lambda k: R.exponential(k, (2,))),
    "vmap_poisson": vmap_keys(lambda k: R.poisson(k, 5.0, (3,))),
    "vmap_categorical": vmap_keys(lambda k: R.categorical(k, logits23)),
    "vmap_beta": vmap_keys(lambda k: R.beta(k, 2.0, 3.0)),
    "vmap_dirichlet": vmap_keys(lambda k: R.dirichlet(k, alpha3)),
    "vmap_binomial": vmap_keys(lambda k: R.binomial(k, 40.0, 0.5, (3,))),
    "vmap_mvn": vmap_keys(lambda k: R.multivariate_normal(k, mean3, cov3, (2,))),
    "vmap_mvn_svd": vmap_keys(lambda k: R.multivariate_normal(k, mean3, cov3, method="svd")),
    "vmap_orthogonal": vmap_keys(lambda k: R.orthogonal(k, 3)),
    "vmap_categorical_noreplace": vmap_keys(
        lambda k: R.categorical(k, logits10, shape=(3,), replace=False)),
    "vmap_gumbel_high": vmap_keys(lambda k: R.gumbel(k, (3,), mode="high")),
    "vmap_gumbel_highest": vmap_keys(lambda k: R.gumbel(k, (3,), mode="highest")),
}

X64_CASES = {
    "gamma_f64": lambda: R.gamma(K(0), jnp.array([0.5, 2.0, 7.0]), (2, 3)),
    "loggamma_f64": lambda: R.loggamma(K(1), 0.3, (20,)),
    "exponential_f64": lambda: R.exponential(K(2), (50,)),
    "gumbel_f64": lambda: R.gumbel(K(3), (50,)),
    "beta_f64": lambda: R.beta(K(4), 2.0, 5.0, (20,)),
    "poisson_i64": lambda: R.poisson(K(5), jnp.array([3.0, 30.0]), (4, 2)),
    "rademacher_i64": lambda: R.rademacher(K(6), (10,)),
    "laplace_f64": lambda: R.laplace(K(7), (50,)),
    "binomial_f64": lambda: R.binomial(K(8), 60.0, 0.3, (50,)),
    "mvn_f64": lambda: R.multivariate_normal(K(9), mean3.astype(jnp.float64),
                                             cov3.astype(jnp.float64), (20,)),
    "mvn_eigh_f64": lambda: R.multivariate_normal(K(10), mean3.astype(jnp.float64),
                                                  cov3.astype(jnp.float64), (20,),
                                                  method="eigh"),
    "mvn_svd_f32_dtype": lambda: R.multivariate_normal(K(11), mean3.astype(jnp.float64),
                                                       cov3.astype(jnp.float64), (5,),
                                                       jnp.float32, method="svd"),
    "orthogonal_f64": lambda: R.orthogonal(K(12), 4, (2,)),
    "orthogonal_f32": lambda: R.orthogonal(K(13), 3, (), jnp.float32),
    "gumbel_high_f64": lambda: R.gumbel(K(14), (50,), mode="high"),
    "gumbel_highest_f64": lambda: R.gumbel(K(14), (50,), mode="highest"),
    "categorical_noreplace_f64": lambda: R.categorical(
        K(15), logits10.astype(jnp.float64), shape=(5,), replace=False),
    "vmap_mvn_f64": lambda: jax.vmap(lambda k: R.multivariate_normal(
        k, mean3.astype(jnp.float64), cov3.astype(jnp.float64)))(R.split(K(16), 3)),
}


def gamma_grad_cases():
    a = alpha_grid

    def total(fn):
        return lambda: jax.grad(lambda x: fn(x).sum())(a)

    return {
        "grad_gamma": total(lambda x: R.gamma(K(70), x)),
        "grad_loggamma": total(lambda x: R.loggamma(K(71), x)),
        "grad_beta": lambda: jax.grad(lambda x: R.beta(K(72), x, 2.0).sum())(a),
        "grad_dirichlet": lambda: jax.grad(
            lambda x: (R.dirichlet(K(73), x) * jnp.arange(3.0)).sum())(alpha3),
        "grad_gamma_shape": lambda: jax.grad(lambda x: R.gamma(K(74), x, (5,)).sum())(
            jnp.float32(2.0)),
    }


xs_lgamma = np.array([-3.5, -2.25, -0.5, -1e-3, 1e-6, 0.1, 0.5, 1.0, 1.5, 2.0, 3.3, 7.0, 12.5,
                      40.0, 170.0, 1e4, 3e6, np.inf, -np.inf, np.nan, -2.0], np.float32)
xs_digamma = np.array([-3.5, -2.25, -0.5, 1e-6, 0.1, 0.5, 1.0, 1.5, 2.0, 3.3, 7.0, 12.5, 40.0,
                       1e4, 0.0, -1.0, np.nan], np.float32)
ms_poly = np.array([1, 1, 1, 2, 2, 3, 4, 1, 2, 0, 1.5, -1], np.float32)
xs_poly = np.array([0.5, 2.0, 10.0, 1.5, 7.0, 3.0, 2.5, -1.5, 0.25, 3.0, 2.0, 2.0], np.float32)
ig_a = np.array([0.1, 0.5, 1.0, 1.0, 2.0, 3.0, 5.0, 10.0, 10.0, 0.5, 50.0, 2.0, 0.0, 1.0, -1.0,
                 20.0, 1e-3], np.float32)
ig_x = np.array([0.05, 0.3, 0.5, 3.0, 1.5, 10.0, 4.0, 9.0, 15.0, 0.0, 45.0, np.inf, 1.0, -1.0,
                 1.0, 0.5, 100.0], np.float32)
rg_a = np.array([0.1, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 10.0, 50.0, 0.3, 1.5], np.float32)
rg_x = np.array([0.01, 0.3, 0.5, 1.5, 10.0, 4.0, 9.0, 15.0, 45.0, 2.0, 0.0], np.float32)

SPECIAL = {
    "lgamma": lambda: lax.lgamma(xs_lgamma),
    "digamma": lambda: lax.digamma(xs_digamma),
    "polygamma": lambda: lax.polygamma(ms_poly, xs_poly),
    "igamma": lambda: lax.igamma(ig_a, ig_x),
    "igamma_grad_a": lambda: lax.igamma_grad_a(ig_a[:12], ig_x[:12]),
    "random_gamma_grad": lambda: lax.random_gamma_grad(rg_a, rg_x),
    "lgamma_range": lambda: lax.lgamma(np.linspace(-9.9, 30, 400, dtype=np.float32)),
    "digamma_range": lambda: lax.digamma(np.linspace(-9.9, 30, 400, dtype=np.float32)),
    "igamma_range": lambda: lax.igamma(np.linspace(0.1, 20, 200, dtype=np.float32),
                                       np.linspace(20, 0.05, 200, dtype=np.float32)),
    "lgamma_f16": lambda: lax.lgamma(np.array([0.5, 1.5, 3.0, 10.0], np.float16)),
    "grad_lgamma": lambda: jax.vmap(jax.grad(lax.lgamma))(np.array([0.5, 2.0, 7.5], np.float32)),
    "grad_digamma": lambda: jax.vmap(jax.grad(lax.digamma))(
        np.array([0.5, 2.0, 7.5], np.float32)),
    "grad_igamma_x": lambda: jax.vmap(jax.grad(lax.igamma, argnums=1))(
        np.array([0.5, 2.0, 7.5], np.float32), np.array([1.0, 2.5, 3.0], np.float32)),
    "grad_igamma_a": lambda: jax.vmap(jax.grad(lax.igamma, argnums=0))(
        np.array([0.5, 2.0, 7.5], np.float32), np.array([1.0, 2.5, 3.0], np.float32)),
    "gammaln": lambda: jax.scipy.special.gammaln(np.array([0.5, 4.0, 10.0], np.float32)),
    "gammainc": lambda: jax.scipy.special.gammainc(2.0, np.array([0.5, 4.0], np.float32)),
}

SPECIAL_X64 = {
    "lgamma_f64": lambda: lax.lgamma(np.array([-2.5, 0.1, 1.5, 30.0, 1e5])),
    "digamma_f64": lambda: lax.digamma(np.array([-2.5, 0.1, 1.5, 30.0, 1e5])),
    "igamma_f64": lambda: lax.igamma(np.array([0.5, 2.0, 10.0]), np.array([0.3, 5.0, 9.0])),
    "random_gamma_grad_f64": lambda: lax.random_gamma_grad(np.array([0.5, 2.0, 10.0]),
                                                           np.array([0.3, 5.0, 9.0])),
}

ERRORS = {
    "gamma_int_dtype": lambda: R.gamma(K(0), 1.0, (2,), jnp.int32),
    "gamma_bad_shape": lambda: R.gamma(K(0), jnp.ones(3), (2,)),
    "gamma_key_batch": lambda: R.gamma(R.split(K(0), 3), 1.0),
    "exponential_int": lambda: R.exponential(K(0), (2,), jnp.int32),
    "exponential_key_batch": lambda: R.exponential(R.split(K(0), 2), (2,)),
    "gumbel_mode": lambda: R.gumbel(K(0), (2,), mode="bad"),
    "categorical_shape": lambda: R.categorical(K(0), logits23, shape=(3,)),
    "dirichlet_scalar": lambda: R.dirichlet(K(0), 1.0),
    "beta_bad_shape": lambda: R.beta(K(0), jnp.ones(3), 1.0, (2,)),
    "poisson_key_batch": lambda: R.poisson(R.split(K(0), 2), 1.0),
    "geometric_float_dtype": lambda: R.geometric(K(0), 0.5, (2,), jnp.float32),
    "lgamma_int": lambda: lax.lgamma(np.int32(2)),
    "binomial_int_dtype": lambda: R.binomial(K(0), 10.0, 0.5, (2,), jnp.int32),
    "mvn_mean_scalar": lambda: R.multivariate_normal(K(0), 1.0, cov3),
    "mvn_cov_1d": lambda: R.multivariate_normal(K(0), mean3, mean3),
    "mvn_cov_shape": lambda: R.multivariate_normal(K(0), mean3, jnp.eye(2)),
    "mvn_method": lambda: R.multivariate_normal(K(0), mean3, cov3, method="qr"),
    "mvn_int_dtype": lambda: R.multivariate_normal(K(0), mean3, cov3, dtype=jnp.int32),
    "mvn_bad_shape": lambda: R.multivariate_normal(K(0), mean23, cov3, (3,)),
    "mvn_key_batch": lambda: R.multivariate_normal(R.split(K(0), 2), mean3, cov3),
    "orthogonal_int_dtype": lambda: R.orthogonal(K(0), 3, dtype=jnp.int32),
    "orthogonal_key_batch": lambda: R.orthogonal(R.split(K(0), 2), 3),
    "categorical_noreplace_too_many": lambda: R.categorical(K(0), logits23, shape=(4, 2),
                                                            replace=False),
    "categorical_mode": lambda: R.categorical(K(0), logits23, mode="middle"),
}


def values_record(x):
    x = np.asarray(x)
    shape = ",".join(str(d) for d in x.shape)
    if np.issubdtype(x.dtype, np.floating) or x.dtype == jnp.bfloat16:
        vals = ",".join(repr(float(v)) for v in x.ravel())
    else:
        vals = ",".join(str(int(v)) for v in x.ravel())
    return f"{x.dtype}|{shape}|{vals}"


def draw(out, prefix, cases):
    for mode, tag in ((True, "p"), (False, "o")):
        jax.config.update("jax_threefry_partitionable", mode)
        for name, fn in cases.items():
            try:
                out.append((f"{prefix}{tag}/{name}", values_record(fn())))
            except Exception as e:  # a case JAX cannot run is reported, not recorded
                print(f"FAILED {prefix}{tag}/{name}: {type(e).__name__}: {e}")
    jax.config.update("jax_threefry_partitionable", True)


def main():
    out = []
    draw(out, "", CASES)
    draw(out, "", gamma_grad_cases())
    for name, fn in SPECIAL.items():
        out.append((f"special/{name}", values_record(fn())))
    for name, fn in ERRORS.items():
        try:
            fn()
            raise AssertionError(f"{name} did not raise")
        except (TypeError, ValueError) as e:
            out.append((f"err/{name}", f"!{type(e).__name__}: {e}"))
    jax.config.update("jax_enable_x64", True)
    draw(out, "x64/", X64_CASES)
    for name, fn in SPECIAL_X64.items():
        out.append((f"x64/special/{name}", values_record(fn())))
    with open(OUT, "w", encoding="utf-8") as fh:
        for name, text in out:
            fh.write(name + "\t" + text.encode("unicode_escape").decode("ascii") + "\n")
    print(f"wrote {len(out)} records to {OUT}")


if __name__ == "__main__":
    main()
