"""Writes tests/golden/linalg_cases.txt: what JAX gives for jax.numpy.linalg and
jax.lax.linalg (tests/lax/linalg_test.cpp computes the same cases with parax).

    python3 tools/make_linalg_goldens.py

Runs with jax_enable_x64 (the C++ test too), so float32 and float64 cases sit side by side.
Format: tests/support/golden.h's `name<TAB>text` records.
  in/<name>#v   an input, `dtype|weak|shape|v0,v1,...` (the C++ test reads its inputs here)
  <case>#v      a result in the same form; a case returning several arrays records each as
                <case>[k]#v
  <case>        `!ErrorKind: message` when JAX raises
Factors that are unique only up to signs (q, u, v, eigenvectors) are recorded as absolute
values or through sign-free products, as JAX's tests compare them.
"""
import os

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.lax import linalg as lax_linalg  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden",
                   "linalg_cases.txt")

rng = np.random.RandomState(0)


def orthogonal(n):
  q, _ = np.linalg.qr(rng.randn(n, n))
  return q


# ---- inputs (float64; the C++ test converts to float32 where a case says so) -----------
INPUTS = {}
INPUTS["gen"] = rng.randn(4, 4) + 3 * np.eye(4)
INPUTS["gen5"] = rng.randn(5, 5) + 4 * np.eye(5)
INPUTS["spd"] = (lambda b: b @ b.T + 4 * np.eye(4))(rng.randn(4, 4))
INPUTS["sym"] = (lambda q: q @ np.diag([1.0, 2.5, 4.0, 7.0]) @ q.T)(orthogonal(4))
INPUTS["tall"] = rng.randn(5, 3)
INPUTS["wide"] = rng.randn(3, 5)
INPUTS["bgen"] = rng.randn(2, 3, 3) + 3 * np.eye(3)
INPUTS["bspd"] = np.stack([(lambda b: b @ b.T + 3 * np.eye(3))(rng.randn(3, 3)) for _ in range(2)])
INPUTS["btall"] = rng.randn(2, 4, 3)
INPUTS["rhs"] = rng.randn(4)
INPUTS["rhs2"] = rng.randn(4, 2)
INPUTS["brhs"] = rng.randn(2, 3, 2)
INPUTS["lower"] = np.tril(rng.randn(4, 4)) + 3 * np.eye(4)
INPUTS["upper"] = np.triu(rng.randn(4, 4)) + 3 * np.eye(4)
INPUTS["rank2"] = rng.randn(4, 2) @ rng.randn(2, 4)
INPUTS["w44"] = rng.randn(4, 4)
INPUTS["w4"] = rng.randn(4)
INPUTS["w53"] = rng.randn(5, 3)
INPUTS["w35"] = rng.randn(3, 5)
INPUTS["w3"] = rng.randn(3)
INPUTS["w42"] = rng.randn(4, 2)
INPUTS["b8"] = rng.randn(8, 3, 3) + 3 * np.eye(3)
INPUTS["sing"] = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
INPUTS["idx"] = np.array([[2.0, 0.0], [0.0, 2.0]])
# Singular matrices of size >= 4 (det's gradient through JAX's _cofactor_solve): rank n - 1
# (row 2 = row 0 + row 1; the gradient is the adjugate's transpose), rank n - 2 (zero
# gradient), a 5x5 of rank 4, and a near-singular one.
INPUTS["sing4"] = np.array([[1.0, 2.0, 0.0, 1.0], [0.0, 1.0, 3.0, 2.0], [1.0, 3.0, 3.0, 3.0],
                            [2.0, 0.0, 1.0, 1.0]])
INPUTS["sing4r2"] = np.array([[1.0, 2.0, 0.0, 1.0], [0.0, 1.0, 3.0, 2.0], [1.0, 3.0, 3.0, 3.0],
                              [2.0, 5.0, 3.0, 4.0]])
INPUTS["sing5"] = np.array([[2.0, 1.0, 0.0, 1.0, 3.0], [1.0, 0.0, 2.0, 1.0, 1.0],
                            [0.0, 1.0, 1.0, 2.0, 0.0], [3.0, 1.0, 2.0, 2.0, 4.0],
                            [1.0, 1.0, 1.0, 0.0, 2.0]])
INPUTS["near4"] = INPUTS["sing4"] + 1e-3 * np.eye(4)
INPUTS["bsing4"] = np.stack([INPUTS["sing4"], INPUTS["sing4r2"], INPUTS["gen"]])
INPUTS["w33"] = rng.randn(3, 3)

x = {k: jnp.asarray(v, jnp.float64) for k, v in INPUTS.items()}
x32 = {k: jnp.asarray(v, jnp.float32) for k, v in INPUTS.items()}

la = jnp.linalg
inf = np.inf


def mT(a):
  return jnp.swapaxes(a, -1, -2)


def recon_svd(a):
  u, s, vh = la.svd(a, full_matrices=False)
  return (u * s[..., None, :]) @ vh


def grad(f, *args, argnums=0):
  return jax.grad(f, argnums=argnums)(*args)


def cases(x, sfx):
  """The cases over inputs `x` (float32 or float64), names ending in `sfx`."""
  g, s, y, t, wd = x["gen"], x["spd"], x["sym"], x["tall"], x["wide"]
  c = {
      "cholesky": lambda: la.cholesky(s),
      "cholesky_upper": lambda: la.cholesky(s, upper=True),
      "cholesky_batched": lambda: la.cholesky(x["bspd"]),
      "cholesky_not_pd": lambda: la.cholesky(g - 10 * jnp.eye(4, dtype=g.dtype)),
      "lu": lambda: lax_linalg.lu(g),
      "lu_tall": lambda: lax_linalg.lu(t),
      "lu_wide": lambda: lax_linalg.lu(wd),
      "lu_batched": lambda: lax_linalg.lu(x["bgen"]),
      "qr_abs": lambda: tuple(jnp.abs(v) for v in la.qr(g)),
      "qr_tall_abs": lambda: tuple(jnp.abs(v) for v in la.qr(t)),
      "qr_tall_complete_abs": lambda: tuple(jnp.abs(v) for v in la.qr(t, mode="complete")),
      "qr_wide_abs": lambda: tuple(jnp.abs(v) for v in la.qr(wd)),
      "qr_r_abs": lambda: jnp.abs(la.qr(t, mode="r")),
      "qr_batched_abs": lambda: tuple(jnp.abs(v) for v in la.qr(x["btall"])),
      "svd_s": lambda: la.svd(g, compute_uv=False),
      "svd_abs": lambda: tuple(jnp.abs(v) for v in la.svd(g)),
      "svd_tall_full_abs": lambda: tuple(jnp.abs(v) for v in la.svd(t)),
      "svd_tall_reduced_abs": lambda: tuple(jnp.abs(v) for v in la.svd(t, full_matrices=False)),
      "svd_wide_reduced_abs": lambda: tuple(jnp.abs(v) for v in la.svd(wd, full_matrices=False)),
      "svd_batched_s": lambda: la.svd(x["btall"], compute_uv=False),
      "svd_recon": lambda: recon_svd(t),
      "svdvals": lambda: la.svdvals(wd),
      "eigh_w": lambda: la.eigh(y).eigenvalues,
      "eigh_v_abs": lambda: jnp.abs(la.eigh(y).eigenvectors),
      "eigh_upper": lambda: la.eigh(jnp.triu(y), UPLO="U", symmetrize_input=False).eigenvalues,
      "eigh_lower_nosym": lambda: la.eigh(jnp.tril(y), symmetrize_input=False).eigenvalues,
      "eigvalsh": lambda: la.eigvalsh(x["bspd"]),
      "det": lambda: la.det(g),
      "det5": lambda: la.det(x["gen5"]),
      "det_batched": lambda: la.det(x["bgen"]),
      "det_singular": lambda: la.det(x["sing"]),
      "slogdet": lambda: tuple(la.slogdet(x["gen5"])),
      "slogdet_2x2": lambda: tuple(la.slogdet(x["idx"])),
      "slogdet_batched": lambda: tuple(la.slogdet(x["bgen"])),
      "slogdet_singular": lambda: tuple(la.slogdet(x["sing"])),
      "slogdet_neg": lambda: tuple(la.slogdet(-x["gen5"])),
      "inv": lambda: la.inv(g),
      "inv_batched": lambda: la.inv(x["bgen"]),
      "solve_vec": lambda: la.solve(g, x["rhs"]),
      "solve_mat": lambda: la.solve(g, x["rhs2"]),
      "solve_batched": lambda: la.solve(x["bgen"], x["brhs"]),
      "solve_bcast_vec": lambda: la.solve(x["bgen"], x["w3"]),
      "solve_bcast_mat": lambda: la.solve(x["bgen"], x["brhs"][0]),
      "pinv": lambda: la.pinv(t),
      "pinv_wide": lambda: la.pinv(wd),
      "pinv_rank2": lambda: la.pinv(x["rank2"]),
      "pinv_batched": lambda: la.pinv(x["btall"]),
      "lstsq": lambda: la.lstsq(t, x["w53"][:, 0]),
      "lstsq_mat": lambda: la.lstsq(t, x["w53"][:, :2]),
      "lstsq_rank2": lambda: la.lstsq(x["rank2"], x["rhs"]),
      "lstsq_rcond": lambda: la.lstsq(x["rank2"], x["rhs"], rcond=0.5),
      "matrix_power_0": lambda: la.matrix_power(g, 0),
      "matrix_power_1": lambda: la.matrix_power(g, 1),
      "matrix_power_2": lambda: la.matrix_power(g, 2),
      "matrix_power_3": lambda: la.matrix_power(g, 3),
      "matrix_power_5": lambda: la.matrix_power(g, 5),
      "matrix_power_m1": lambda: la.matrix_power(g, -1),
      "matrix_power_m3": lambda: la.matrix_power(g, -3),
      "matrix_power_batched": lambda: la.matrix_power(x["bgen"], 4),
      "matrix_rank": lambda: la.matrix_rank(g),
      "matrix_rank_2": lambda: la.matrix_rank(x["rank2"]),
      "matrix_rank_batched": lambda: la.matrix_rank(x["btall"]),
      "matrix_rank_tol": lambda: la.matrix_rank(g, rtol=2.0),
      "norm_2": lambda: la.norm(g, 2),
      "norm_m2": lambda: la.norm(g, -2),
      "norm_nuc": lambda: la.norm(t, "nuc"),
      "norm_fro": lambda: la.norm(t, "fro"),
      "norm_2_axes": lambda: la.norm(x["btall"], 2, axis=(2, 1)),
      "norm_2_keep": lambda: la.norm(x["btall"], 2, axis=(1, 2), keepdims=True),
      "norm_nuc_axes": lambda: la.norm(x["btall"], "nuc", axis=(0, 2)),
      "cond": lambda: la.cond(g),
      "cond_m2": lambda: la.cond(g, -2),
      "cond_1": lambda: la.cond(g, 1),
      "cond_inf": lambda: la.cond(g, inf),
      "cond_fro": lambda: la.cond(g, "fro"),
      "cond_tall": lambda: la.cond(t),
      "ts_left_lower": lambda: lax_linalg.triangular_solve(
          x["lower"], x["rhs2"], left_side=True, lower=True),
      "ts_left_lower_t": lambda: lax_linalg.triangular_solve(
          x["lower"], x["rhs2"], left_side=True, lower=True, transpose_a=True),
      "ts_right_upper": lambda: lax_linalg.triangular_solve(x["upper"], mT(x["rhs2"])),
      "ts_right_upper_unit": lambda: lax_linalg.triangular_solve(
          x["upper"], mT(x["rhs2"]), unit_diagonal=True),
      "ts_vec": lambda: lax_linalg.triangular_solve(x["lower"], x["rhs"], left_side=True,
                                                    lower=True),
      "ts_full_a": lambda: lax_linalg.triangular_solve(g, x["rhs2"], left_side=True, lower=True),
      "lu_pivots_to_permutation": lambda: lax_linalg.lu_pivots_to_permutation(
          jnp.array([[2, 2, 3], [1, 2, 2]], jnp.int32), 5),
      # Gradients (reverse mode), against fixed weights.
      "grad_det": lambda: grad(la.det, g),
      "grad_det5": lambda: grad(la.det, x["gen5"]),
      "grad_slogdet": lambda: grad(lambda a: la.slogdet(a)[1], x["gen5"]),
      "grad_slogdet_2x2": lambda: grad(lambda a: la.slogdet(a)[1], x["idx"] + 0.5),
      "grad_inv": lambda: grad(lambda a: jnp.sum(la.inv(a) * x["w44"]), g),
      "grad_solve_a": lambda: grad(lambda a: jnp.sum(la.solve(a, x["rhs2"]) * x["w42"]), g),
      "grad_solve_b": lambda: grad(lambda b: jnp.sum(la.solve(g, b) * x["w42"]), x["rhs2"]),
      "grad_solve_vec": lambda: grad(lambda a: jnp.sum(la.solve(a, x["rhs"]) * x["w4"]), g),
      "grad_cholesky": lambda: grad(lambda a: jnp.sum(la.cholesky(a) * x["w44"]), s),
      "grad_eigvalsh": lambda: grad(lambda a: jnp.sum(la.eigvalsh(a) * x["w4"]), y),
      "grad_eigh_v": lambda: grad(
          lambda a: jnp.sum(la.eigh(a).eigenvectors ** 2 * x["w44"]), y),
      "grad_svdvals": lambda: grad(lambda a: jnp.sum(la.svdvals(a) * x["w3"]), t),
      "grad_svdvals_wide": lambda: grad(lambda a: jnp.sum(la.svdvals(a) * x["w3"]), wd),
      "grad_svd_uv": lambda: grad(
          lambda a: jnp.sum(la.svd(a, full_matrices=False)[0] ** 2 * x["w53"]) +
          jnp.sum(la.svd(a, full_matrices=False)[2] ** 2 * x["w44"][:3, :3]), t),
      "grad_svd_square": lambda: grad(
          lambda a: jnp.sum(la.svd(a)[0] ** 2 * x["w44"]) + jnp.sum(la.svd(a)[1]), g),
      "grad_qr": lambda: grad(
          lambda a: jnp.sum(la.qr(a)[0] ** 2 * x["w53"]) + jnp.sum(la.qr(a)[1] ** 2 * x["w44"][:3, :3]), t),
      "grad_qr_wide": lambda: grad(
          lambda a: jnp.sum(la.qr(a)[0] ** 2 * x["w44"][:3, :3]) + jnp.sum(la.qr(a)[1] ** 2 * x["w35"]), wd),
      "grad_qr_complete": lambda: grad(
          lambda a: jnp.sum(la.qr(a, mode="complete")[0] ** 2 * jnp.ones((5, 5), a.dtype)
                            * x["w53"][:, :1]) +
          jnp.sum(la.qr(a, mode="complete")[1] ** 2 * x["w53"]), t),
      "grad_lu": lambda: grad(lambda a: jnp.sum(lax_linalg.lu(a)[0] * x["w44"]), g),
      "grad_lu_tall": lambda: grad(lambda a: jnp.sum(lax_linalg.lu(a)[0] * x["w53"]), t),
      "grad_lu_wide": lambda: grad(lambda a: jnp.sum(lax_linalg.lu(a)[0] * x["w35"]), wd),
      "grad_pinv": lambda: grad(lambda a: jnp.sum(la.pinv(a) * x["w35"]), t),
      "grad_pinv_wide": lambda: grad(lambda a: jnp.sum(la.pinv(a) * x["w53"]), wd),
      "grad_pinv_rank2": lambda: grad(lambda a: jnp.sum(la.pinv(a) * x["w44"]), x["rank2"]),
      "grad_ts_a": lambda: grad(lambda a: jnp.sum(lax_linalg.triangular_solve(
          a, x["rhs2"], left_side=True, lower=True) * x["w42"]), x["lower"]),
      "grad_ts_b": lambda: grad(lambda b: jnp.sum(lax_linalg.triangular_solve(
          x["upper"], b, left_side=False, lower=False, transpose_a=True) * mT(x["w42"])),
          mT(x["rhs2"])),
      "grad_matrix_power_m2": lambda: grad(lambda a: jnp.sum(la.matrix_power(a, -2) * x["w44"]), g),
      "grad_norm_2": lambda: grad(lambda a: la.norm(a, 2), t),
      "grad_norm_nuc": lambda: grad(lambda a: la.norm(a, "nuc"), t),
      "grad_lstsq": lambda: grad(lambda a: jnp.sum(la.lstsq(a, x["w53"][:, 0])[0] * x["w3"]), t),
      "grad_det_batched": lambda: grad(lambda a: jnp.sum(la.det(a)), x["bgen"]),
      "grad_cholesky_batched": lambda: grad(lambda a: jnp.sum(la.cholesky(a) ** 2), x["bspd"]),
      # vmap over the leading axis, and over an inner one.
      "vmap_inv": lambda: jax.vmap(la.inv)(x["bgen"]),
      "vmap_solve_axis2": lambda: jax.vmap(la.solve, in_axes=(0, 2))(
          x["bgen"], jnp.moveaxis(x["brhs"], 0, 2)),
      "vmap_eigvalsh": lambda: jax.vmap(la.eigvalsh, in_axes=2)(jnp.moveaxis(x["bspd"], 0, 2)),
      "vmap_svdvals": lambda: jax.vmap(la.svdvals, in_axes=2)(x["btall"]),
      "vmap_ts_unbatched_a": lambda: jax.vmap(
          lambda b: lax_linalg.triangular_solve(x["lower"], b, left_side=True, lower=True),
          in_axes=1)(jnp.stack([x["rhs2"], 2 * x["rhs2"], -x["rhs2"]], 1)),
      "vmap_ts_unbatched_a_right": lambda: jax.vmap(
          lambda b: lax_linalg.triangular_solve(x["upper"], b), in_axes=0)(
          jnp.stack([mT(x["rhs2"]), 3 * mT(x["rhs2"])])),
      "vmap_grad_det": lambda: jax.vmap(jax.grad(la.det))(x["bgen"]),
      # det's derivative at singular and near-singular matrices (finite, as JAX's).
      "det_sing4": lambda: la.det(x["sing4"]),
      "grad_det_sing4": lambda: grad(la.det, x["sing4"]),
      "grad_det_sing4r2": lambda: grad(la.det, x["sing4r2"]),
      "grad_det_sing5": lambda: grad(la.det, x["sing5"]),
      "grad_det_near4": lambda: grad(la.det, x["near4"]),
      "jit_grad_det_sing4": lambda: jax.jit(jax.grad(la.det))(x["sing4"]),
      "vmap_grad_det_sing": lambda: jax.vmap(jax.grad(la.det))(x["bsing4"]),
      "grad_det_batched_sing": lambda: grad(lambda a: jnp.sum(la.det(a)), x["bsing4"]),
      "jvp_det_sing4": lambda: jax.jvp(la.det, (x["sing4"],), (x["w44"],))[1],
      "grad_det_1x1": lambda: grad(lambda a: jnp.sum(la.det(a)), x["gen"][None, :1, :1]),
      # solve and inv differentiated under vmap (JAX's custom_linear_solve rules).
      "vmap_grad_solve": lambda: jax.vmap(jax.grad(
          lambda a, b: jnp.sum(la.solve(a, b) * x["brhs"][0]), (0, 1)))(x["bgen"], x["brhs"]),
      "vmap_grad_solve_vec": lambda: jax.vmap(jax.grad(
          lambda a, b: jnp.sum(la.solve(a, b) * x["w3"]), (0, 1)))(x["bgen"], x["brhs"][..., 0]),
      "vmap_grad_inv": lambda: jax.vmap(jax.grad(lambda a: jnp.sum(la.inv(a) * x["w33"])))(
          x["bgen"]),
      "grad_vmap_inv": lambda: grad(lambda a: jnp.sum(jax.vmap(la.inv)(a) * x["w33"]), x["bgen"]),
      "jit_vmap_grad_solve": lambda: jax.jit(jax.vmap(jax.grad(
          lambda a: jnp.sum(la.solve(a, x["brhs"][0]) * x["brhs"][1]))))(x["bgen"]),
      "jvp_solve": lambda: jax.jvp(la.solve, (x["gen"], x["rhs2"]), (x["w44"], x["w42"]))[1],
      # Second derivatives (grad of grad).
      "hess_logdet": lambda: grad(
          lambda a: jnp.sum(jax.grad(lambda b: la.slogdet(b)[1])(a) * x["w44"]), g),
      "hess_det": lambda: grad(
          lambda a: jnp.sum(jax.grad(la.det)(a) * x["w44"]), g),
      "hess_inv": lambda: grad(
          lambda a: jnp.sum(jax.grad(lambda b: jnp.sum(la.inv(b) * x["w44"]))(a) * x["w44"]), g),
      "hess_eigvalsh": lambda: grad(
          lambda a: jnp.sum(jax.grad(lambda b: jnp.sum(la.eigvalsh(b) * x["w4"]))(a) * x["w44"]),
          y),
      "jvp_svd_square": lambda: jax.jvp(lambda a: tuple(jnp.abs(v) for v in la.svd(a)), (g,),
                                        (x["w44"],))[1],
      "jvp_qr_complete": lambda: jax.jvp(lambda a: tuple(v ** 2 for v in la.qr(a, mode="complete")),
                                         (t,), (x["w53"],))[1],
      "sharded_inv": lambda: la.inv(x["b8"]),
      "sharded_eigvalsh": lambda: la.eigvalsh(x["b8"] @ mT(x["b8"])),
  }
  return {name + sfx: f for name, f in c.items()}


# Promotion: integer and mixed operands.
MISC = {
    "det_int": lambda: la.det(jnp.array([[2, 1, 0, 0], [1, 3, 1, 0], [0, 1, 4, 1], [0, 0, 1, 5]],
                                        jnp.int32)),
    "inv_int": lambda: la.inv(jnp.array([[2, 1], [1, 3]], jnp.int32)),
    "solve_mixed": lambda: la.solve(x32["gen"], x["rhs"]),
    "svdvals_int": lambda: la.svdvals(jnp.array([[1, 2, 3], [4, 5, 6]], jnp.int32)),
    "eigvalsh_weak": lambda: la.eigvalsh(jnp.asarray(2.0)[None, None]),
    # Ported from JAX's tests/linalg_test.py.
    "det_grad_issue6121": lambda: jax.grad(lambda a: la.det(a).sum())(jnp.ones((16, 1, 1))),
    "slogdet_issue1213": lambda: tuple(la.slogdet(
        jnp.array([np.diag(np.ones([5], dtype=np.float32)) * (-.01)] * 2))),
    "matrix_power_bool": lambda: la.matrix_power(jnp.array([[True, True], [False, True]]), 2),
    "lu_zero": lambda: lax_linalg.lu(jnp.zeros((2, 2), jnp.float32)),
    "lu_singular": lambda: lax_linalg.lu(jnp.array([[-1., 3. / 2], [2. / 3, -1.]], jnp.float32)),
    "pinv_issue2792": lambda: jax.jacobian(
        lambda p: la.pinv(jnp.array([[0., 0.], [-p, 1.]], jnp.float32) * 1 / (1 + p ** 2)))(
            jnp.float32(2.)),
    "pinv_ones": lambda: la.pinv(jnp.ones((3, 3)), rtol=1e-2),
    "grad_pinv_ones": lambda: jax.grad(
        lambda a: jnp.sum(la.pinv(a, rtol=1e-2) * x["w44"][:3, :3]))(jnp.ones((3, 3))),
}

ERRORS = {
    "err_cholesky_int": lambda: lax_linalg.cholesky(jnp.ones((3, 3), jnp.int32),
                                                    symmetrize_input=False),
    "err_cholesky_rank1": lambda: lax_linalg.cholesky(jnp.ones(3), symmetrize_input=False),
    "err_cholesky_nonsquare": lambda: lax_linalg.cholesky(jnp.ones((2, 3)), symmetrize_input=False),
    "err_lu_int": lambda: lax_linalg.lu(jnp.ones((3, 3), jnp.int32)),
    "err_lu_rank1": lambda: lax_linalg.lu(jnp.ones(3)),
    "err_qr_rank1": lambda: lax_linalg.qr(jnp.ones(3)),
    "err_svd_int": lambda: lax_linalg.svd(jnp.ones((3, 3), jnp.int32)),
    "err_eigh_nonsquare": lambda: lax_linalg.eigh(jnp.ones((2, 3)), symmetrize_input=False),
    "err_ts_nonsquare": lambda: lax_linalg.triangular_solve(jnp.ones((2, 3)), jnp.ones((3, 3))),
    "err_ts_incompatible": lambda: lax_linalg.triangular_solve(jnp.ones((3, 3)), jnp.ones((3, 2))),
    "err_ts_dtypes": lambda: lax_linalg.triangular_solve(jnp.ones((3, 3)),
                                                         jnp.ones((3, 3), jnp.float32)),
    "err_ts_batch_rank": lambda: lax_linalg.triangular_solve(
        jnp.ones((2, 3, 3)), jnp.ones((2, 3, 3, 3)), left_side=True),
    "err_pivots_size": lambda: lax_linalg.lu_pivots_to_permutation(jnp.zeros(4, jnp.int32), 3),
    "err_pivots_dtype": lambda: lax_linalg.lu_pivots_to_permutation(jnp.zeros(4), 5),
    "err_solve_rank1": lambda: la.solve(jnp.ones((3,)), jnp.ones((3,))),
    "err_solve_core": lambda: la.solve(jnp.ones((3, 3)), jnp.ones((4,))),
    "err_solve_nonsquare": lambda: la.solve(jnp.ones((2, 3)), jnp.ones((2, 2))),
    "err_solve_batched_vec": lambda: la.solve(jnp.ones((2, 3, 3)), jnp.ones((2, 3))),
    "err_inv": lambda: la.inv(jnp.ones((2, 3))),
    "err_det": lambda: la.det(jnp.ones((2, 3))),
    "err_det_rank1": lambda: la.det(jnp.ones(3)),
    "err_slogdet": lambda: la.slogdet(jnp.ones((2, 3))),
    "err_matrix_power": lambda: la.matrix_power(jnp.ones((2, 3)), 2),
    "err_matrix_power_rank1": lambda: la.matrix_power(jnp.ones((3,)), 2),
    "err_eigh_uplo": lambda: la.eigh(jnp.eye(3), UPLO="X"),
    "err_qr_mode": lambda: la.qr(jnp.eye(3), mode="x"),
    "err_lstsq_rows": lambda: la.lstsq(jnp.ones((3, 2)), jnp.ones((4,))),
    "err_lstsq_rank3": lambda: la.lstsq(jnp.ones((2, 3, 2)), jnp.ones((2, 3))),
    "err_norm_ord": lambda: la.norm(jnp.ones((2, 3)), "x"),
    "err_cond_rank1": lambda: la.cond(jnp.ones((3,))),
    "err_cond_square": lambda: la.cond(jnp.ones((2, 3)), 1),
    "err_svd_full_grad": lambda: jax.jvp(lambda a: la.svd(a)[0], (jnp.ones((3, 2)),),
                                         (jnp.ones((3, 2)),)),
}


def fmt_value(a):
  a = np.asarray(a)
  if a.dtype == np.bool_:
    vals = ",".join(str(int(v)) for v in a.ravel())
  elif np.issubdtype(a.dtype, np.integer):
    vals = ",".join(str(int(v)) for v in a.ravel())
  else:
    vals = ",".join(repr(float(v)) for v in a.ravel())
  return vals


def record(a):
  weak = "w" if getattr(a, "weak_type", False) else "s"
  shape = ",".join(str(d) for d in np.shape(a))
  return f"{np.asarray(a).dtype}|{weak}|{shape}|{fmt_value(a)}"


def escape(s):
  return s.encode("unicode_escape").decode("ascii")


def main():
  lines = []
  for k, v in INPUTS.items():
    lines.append(f"in/{k}#v\t{record(jnp.asarray(v, jnp.float64))}")
  all_cases = {}
  all_cases.update(cases(x, ""))
  all_cases.update(cases(x32, "_f32"))
  all_cases.update(MISC)
  for name, f in all_cases.items():
    try:
      out = f()
    except Exception:
      print("in case", name)
      raise
    if isinstance(out, (tuple, list)):
      for k, o in enumerate(out):
        lines.append(f"{name}[{k}]#v\t{record(o)}")
    else:
      lines.append(f"{name}#v\t{record(out)}")
  for name, f in ERRORS.items():
    try:
      f()
      raise SystemExit(f"{name}: expected an error")
    except SystemExit:
      raise
    except Exception as e:  # noqa: BLE001
      msg = str(e).split("\n")[0]
      lines.append(f"{name}\t{escape('!' + type(e).__name__ + ': ' + msg)}")
  with open(OUT, "w") as f:
    f.write("\n".join(lines) + "\n")
  print(f"wrote {len(lines)} records to {OUT}")


if __name__ == "__main__":
  main()
