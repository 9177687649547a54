"""Writes tests/golden/lax_numpy_cases.txt: what JAX 0.4.35 gives for the lax and numpy
front ends (tests/numpy/lax_numpy_test.cpp computes the same cases with parax).

Run with the venv that has jax==0.4.35:
    /opt/jax435/bin/python tools/make_lax_numpy_goldens.py

Format: tests/support/golden.h's `name<TAB>text` records (text unicode_escape'd).
  <case>      JAX's repr of the result, or `!ErrorKind: message` when JAX raises.
  <case>#v    `dtype|weak|shape|v0,v1,...` with values as Python floats/ints, so cases whose
              last bits may differ (transcendental kernels) compare within a tolerance.
  promote/<a>/<b>              jnp.promote_types(a, b)
  lattice/<a><w>/<b><w>        promote_dtypes' (dtype, weak) for two values
  result/<a><w>/<b><w>         dtypes.result_type(..., return_weak_type_flag=True)
  (<w> is `w` for weak, `s` for strong; the x64/ prefix repeats them with x64 enabled.)
A case returning several arrays records each as <case>[k].
"""
import math
import os
import types

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax._src import dtypes
from jax._src.lax import lax as lax_internal

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden",
                   "lax_numpy_cases.txt")

# The inputs, mirrored by Inputs in tests/numpy/lax_numpy_test.cpp.
f32 = jnp.float32
f = jnp.array([[-1.5, 0.0, 2.25], [3.0, -4.75, 0.5]], f32)
v = jnp.array([1.0, -2.0, 3.0], f32)
w = jnp.array([0.5, 4.0, -1.0], f32)
i = jnp.array([[-3, 0, 5], [7, -2, 4]], jnp.int32)
j = jnp.array([2, -3, 4], jnp.int32)
u8 = jnp.array([1, 2, 250], jnp.uint8)
i8 = jnp.array([-100, 50, 127], jnp.int8)
u32 = jnp.array([1, 2, 3], jnp.uint32)
b = jnp.array([True, False, True])
h = jnp.array([1.5, -2.25, 3.0], jnp.float16)
bf = jnp.array([1.5, -2.25, 3.0], jnp.bfloat16)
m = jnp.arange(12, dtype=f32).reshape(3, 4)
n = jnp.arange(8, dtype=f32).reshape(4, 2)
t3 = jnp.arange(24, dtype=f32).reshape(2, 3, 4)
col = jnp.array([[1.0], [2.0]], f32)
r = jnp.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.675], f32)
special = jnp.array([1.0, np.nan, np.inf, -np.inf], f32)
sq = jnp.arange(9, dtype=f32).reshape(3, 3)
ws = jnp.asarray(2.0)  # a weak float32 scalar
wi = jnp.asarray(3)    # a weak int32 scalar

CASES = {
    # Promotion through operators.
    "add_f_int": lambda: f + 1,
    "add_i_float": lambda: i + 2.5,
    "mul_h_float": lambda: h * 2.0,
    "div_i_int": lambda: i / 2,
    "add_i_u32": lambda: j + u32,
    "add_bf_h": lambda: bf + h,
    "add_b_int": lambda: b + 1,
    "add_b_b": lambda: b + b,
    "mul_b_b": lambda: b * b,
    "add_u8_int": lambda: u8 + 1,
    "add_i8_u8": lambda: i8 + u8,
    "sub_f_col": lambda: f - col,
    "add_f_v": lambda: f + v,
    "add_weak_weak": lambda: ws + wi,
    "mul_weak_i8": lambda: ws * i8,
    "sub_int_f": lambda: 1 - f,
    "neg_f": lambda: -f,
    "invert_i": lambda: ~i,
    "mod_i_int": lambda: i % 3,
    "and_i_j": lambda: j & 6,
    "or_b_b": lambda: b | jnp.array([False, False, True]),
    "xor_i": lambda: j ^ 5,
    "lshift_j": lambda: j << 2,
    "rshift_j": lambda: j >> 1,
    "rshift_u8": lambda: u8 >> 1,
    "eq_f_v": lambda: f == v,
    "ne_i_int": lambda: i != 0,
    "lt_f": lambda: f < 0.5,
    "ge_i_j": lambda: i >= j,
    "err_add_shapes": lambda: v + jnp.ones(4, f32),
    "err_add_ranks": lambda: f + jnp.ones(4, f32),
    "err_add_2d": lambda: f + jnp.ones((3, 3), f32),
    # Unary math.
    "abs_i": lambda: jnp.abs(i),
    "abs_u8": lambda: jnp.abs(u8),
    "abs_b": lambda: jnp.abs(b),
    "sign_f": lambda: jnp.sign(f),
    "sign_i": lambda: jnp.sign(i),
    "floor_f": lambda: jnp.floor(f),
    "floor_i": lambda: jnp.floor(i),
    "ceil_f": lambda: jnp.ceil(f),
    "round_r": lambda: jnp.round(r),
    "round_r1": lambda: jnp.round(r, 1),
    "round_h1": lambda: jnp.round(h, 1),
    "round_i": lambda: jnp.round(i),
    "trunc_f": lambda: jnp.trunc(f),
    "exp_f": lambda: jnp.exp(f),
    "exp_i": lambda: jnp.exp(j),
    "exp_weak": lambda: jnp.exp(wi),
    "exp2_f": lambda: jnp.exp2(f),
    "expm1_f": lambda: jnp.expm1(f),
    "log_v": lambda: jnp.log(v),
    "log1p_w": lambda: jnp.log1p(w),
    "log2_m": lambda: jnp.log2(m),
    "log10_m": lambda: jnp.log10(m),
    "sin_f": lambda: jnp.sin(f),
    "cos_f": lambda: jnp.cos(f),
    "tan_f": lambda: jnp.tan(f),
    "arcsin_w": lambda: jnp.arcsin(w),
    "arccos_w": lambda: jnp.arccos(w),
    "arctan_f": lambda: jnp.arctan(f),
    "sinh_f": lambda: jnp.sinh(f),
    "cosh_f": lambda: jnp.cosh(f),
    "tanh_f": lambda: jnp.tanh(f),
    "sqrt_m": lambda: jnp.sqrt(m),
    "sqrt_i8": lambda: jnp.sqrt(i8),
    "cbrt_f": lambda: jnp.cbrt(f),
    "square_i": lambda: jnp.square(i),
    "square_b": lambda: jnp.square(b),
    "reciprocal_j": lambda: jnp.reciprocal(j),
    "isfinite_s": lambda: jnp.isfinite(special),
    "isfinite_i": lambda: jnp.isfinite(i),
    "isnan_s": lambda: jnp.isnan(special),
    "isinf_s": lambda: jnp.isinf(special),
    "logical_not_i": lambda: jnp.logical_not(i),
    "invert_b": lambda: jnp.invert(b),
    "positive_f": lambda: jnp.positive(f),
    "err_neg_b": lambda: jnp.negative(b),
    # Binary math.
    "true_divide_i_j": lambda: jnp.true_divide(i, j),
    "floor_divide_i_j": lambda: jnp.floor_divide(i, j),
    "floor_divide_f_v": lambda: jnp.floor_divide(f, v),
    "floor_divide_u8": lambda: jnp.floor_divide(u8, 3),
    "remainder_i_j": lambda: jnp.remainder(i, j),
    "remainder_f_v": lambda: jnp.remainder(f, v),
    "remainder_i_zero": lambda: jnp.remainder(j, 0),
    "fmod_i_j": lambda: jnp.fmod(i, j),
    "fmod_f_v": lambda: jnp.fmod(f, v),
    "power_f_2": lambda: jnp.power(f, 2),
    "power_f_half": lambda: jnp.power(m, 0.5),
    "power_f_v": lambda: jnp.power(m, jnp.ones((3, 4), f32) * 1.5),
    "power_i_2": lambda: jnp.power(i, 2),
    "power_j_j": lambda: jnp.power(j, jnp.array([3, 2, 1], jnp.int32)),
    "power_v_j": lambda: jnp.power(v, jnp.array([3, 2, -1], jnp.int32)),
    "power_f_neg": lambda: jnp.power(v, -2),
    "maximum_f_v": lambda: jnp.maximum(f, v),
    "minimum_s": lambda: jnp.minimum(special, 2.0),
    "maximum_i_f": lambda: jnp.maximum(j, 0.5),
    "arctan2_f_v": lambda: jnp.arctan2(f, v),
    "nextafter_v_w": lambda: jnp.nextafter(v, w),
    "bitwise_and_i_j": lambda: jnp.bitwise_and(i, j),
    "bitwise_or_u8": lambda: jnp.bitwise_or(u8, 4),
    "bitwise_xor_b": lambda: jnp.bitwise_xor(b, True),
    "left_shift_i8": lambda: jnp.left_shift(i8, 1),
    "right_shift_i8": lambda: jnp.right_shift(i8, 2),
    "logical_and_i_f": lambda: jnp.logical_and(i, f),
    "logical_or_b_i": lambda: jnp.logical_or(b, j),
    "logical_xor_f": lambda: jnp.logical_xor(f, 1.0),
    "equal_i_f": lambda: jnp.equal(i, f),
    "less_equal_j": lambda: jnp.less_equal(j, 2),
    "greater_f": lambda: jnp.greater(f, v),
    "where_b": lambda: jnp.where(b, v, w),
    "where_i_scalar": lambda: jnp.where(i, 1.0, 0),
    "where_scalar_cond": lambda: jnp.where(True, f, 0),
    "where_f_col": lambda: jnp.where(f > 0, f, col),
    "where_promote": lambda: jnp.where(b, j, 2.5),
    "err_where": lambda: jnp.where(b, f, jnp.ones(4)),
    "clip_f": lambda: jnp.clip(f, -1.0, 2.0),
    "clip_i_min": lambda: jnp.clip(i, 0),
    "clip_i_max_f": lambda: jnp.clip(i, None, 2.5),
    "isclose_s": lambda: jnp.isclose(special, jnp.array([1.0 + 1e-6, np.nan, np.inf, np.inf])),
    "isclose_nan": lambda: jnp.isclose(special, special, equal_nan=True),
    "isclose_i": lambda: jnp.isclose(j, jnp.array([2, -3, 5])),
    "allclose_true": lambda: jnp.allclose(v, v + 1e-7),
    "allclose_false": lambda: jnp.allclose(v, w),
    "array_equal_same": lambda: jnp.array_equal(v, v),
    "array_equal_shape": lambda: jnp.array_equal(v, f),
    "array_equal_int_float": lambda: jnp.array_equal(j, jnp.array([2.0, -3.0, 4.0])),
    # Reductions.
    "sum_f": lambda: jnp.sum(f),
    "sum_f_0": lambda: jnp.sum(f, axis=0),
    "sum_f_neg1_keep": lambda: jnp.sum(f, axis=-1, keepdims=True),
    "sum_t3_02": lambda: jnp.sum(t3, axis=(0, 2)),
    "sum_b": lambda: jnp.sum(b),
    "sum_i8": lambda: jnp.sum(i8),
    "sum_u8": lambda: jnp.sum(u8),
    "sum_h": lambda: jnp.sum(h),
    "sum_i_dtype": lambda: jnp.sum(i, dtype=jnp.float32),
    "sum_weak": lambda: jnp.sum(ws),
    "sum_empty_axes": lambda: jnp.sum(f, axis=()),
    "err_sum_axis": lambda: jnp.sum(f, axis=2),
    "err_sum_dup": lambda: jnp.sum(f, axis=(0, 0)),
    "prod_f_1": lambda: jnp.prod(f, axis=1),
    "prod_i": lambda: jnp.prod(i),
    "prod_b": lambda: jnp.prod(b),
    "mean_f": lambda: jnp.mean(f),
    "mean_i_0": lambda: jnp.mean(i, axis=0),
    "mean_h": lambda: jnp.mean(h),
    "mean_b": lambda: jnp.mean(b),
    "mean_t3_keep": lambda: jnp.mean(t3, axis=(1, 2), keepdims=True),
    "mean_i_dtype": lambda: jnp.mean(i, dtype=jnp.float16),
    "var_f": lambda: jnp.var(f),
    "var_i_1": lambda: jnp.var(i, axis=1),
    "std_m_ddof": lambda: jnp.std(m, axis=0, ddof=1),
    "var_h": lambda: jnp.var(h),
    "var_ddof_big": lambda: jnp.var(v, ddof=3),
    "max_f": lambda: jnp.max(f),
    "max_f_1": lambda: jnp.max(f, axis=1),
    "min_i_0_keep": lambda: jnp.min(i, axis=0, keepdims=True),
    "max_b": lambda: jnp.max(b),
    "min_u8": lambda: jnp.min(u8),
    "max_s": lambda: jnp.max(special),
    "err_max_empty": lambda: jnp.max(jnp.zeros((0, 3)), axis=0),
    "all_b": lambda: jnp.all(b),
    "any_i_1": lambda: jnp.any(i, axis=1),
    "all_f_0": lambda: jnp.all(f, axis=0),
    "argmax_f": lambda: jnp.argmax(f),
    "argmax_f_1": lambda: jnp.argmax(f, axis=1),
    "argmin_i_0_keep": lambda: jnp.argmin(i, axis=0, keepdims=True),
    "argmax_keep_none": lambda: jnp.argmax(f, keepdims=True),
    "argmax_s": lambda: jnp.argmax(special),
    "err_argmax_empty": lambda: jnp.argmax(jnp.zeros((0,))),
    "cumsum_f": lambda: jnp.cumsum(f),
    "cumsum_f_1": lambda: jnp.cumsum(f, axis=1),
    "cumsum_b": lambda: jnp.cumsum(b),
    "cumsum_i8": lambda: jnp.cumsum(i8),
    "cumsum_i_dtype": lambda: jnp.cumsum(i, axis=0, dtype=jnp.float32),
    "sort_f": lambda: jnp.sort(f),
    "sort_f_0": lambda: jnp.sort(f, axis=0),
    "sort_none": lambda: jnp.sort(i, axis=None),
    "sort_s": lambda: jnp.sort(special),
    "argsort_f": lambda: jnp.argsort(f),
    "argsort_dups": lambda: jnp.argsort(jnp.array([3, 1, 2, 1, 3], jnp.int32)),
    "argsort_none": lambda: jnp.argsort(i, axis=None),
    # Shapes.
    "reshape_m": lambda: jnp.reshape(m, (2, -1)),
    "reshape_method": lambda: m.reshape(4, 3),
    "err_reshape_size": lambda: m.reshape((5, 2)),
    "err_reshape_div": lambda: m.reshape((5, -1)),
    "err_reshape_two": lambda: m.reshape((-1, -1)),
    "transpose_f": lambda: jnp.transpose(f),
    "transpose_t3": lambda: jnp.transpose(t3, (1, 0, 2)),
    "transpose_t3_neg": lambda: jnp.transpose(t3, (-1, 0, 1)),
    "swapaxes_t3": lambda: jnp.swapaxes(t3, 0, 2),
    "moveaxis_t3": lambda: jnp.moveaxis(t3, 0, -1),
    "ravel_f": lambda: jnp.ravel(f),
    "squeeze_col": lambda: jnp.squeeze(col),
    "squeeze_axis": lambda: jnp.squeeze(jnp.ones((1, 3, 1)), axis=0),
    "err_squeeze": lambda: jnp.squeeze(f, axis=0),
    "expand_dims_v": lambda: jnp.expand_dims(v, 0),
    "expand_dims_multi": lambda: jnp.expand_dims(v, (0, 2)),
    "expand_dims_neg": lambda: jnp.expand_dims(f, -1),
    "broadcast_to_v": lambda: jnp.broadcast_to(v, (2, 3)),
    "broadcast_to_col": lambda: jnp.broadcast_to(col, (2, 2, 4)),
    "err_broadcast_to": lambda: jnp.broadcast_to(v, (2, 4)),
    "err_broadcast_to_rank": lambda: jnp.broadcast_to(f, (3,)),
    "concatenate_fi": lambda: jnp.concatenate([f, i]),
    "concatenate_1": lambda: jnp.concatenate([f, col], axis=1),
    "concatenate_many": lambda: jnp.concatenate([v] * 20),
    "err_concatenate_0d": lambda: jnp.concatenate([jnp.float32(1), jnp.float32(2)]),
    "err_concatenate_empty": lambda: jnp.concatenate([]),
    "stack_v_w": lambda: jnp.stack([v, w]),
    "stack_v_w_1": lambda: jnp.stack([v, w], axis=1),
    "stack_neg": lambda: jnp.stack([f, f], axis=-1),
    "err_stack_shapes": lambda: jnp.stack([v, f]),
    "vstack_v_w": lambda: jnp.vstack([v, w]),
    "vstack_f_v": lambda: jnp.vstack([f, v]),
    "hstack_v_w": lambda: jnp.hstack([v, w]),
    "hstack_f_col": lambda: jnp.hstack([f, col]),
    "split_m_3": lambda: jnp.split(m, 2, axis=1),
    "split_m_idx": lambda: jnp.split(m, [1, 3], axis=-1),
    "split_v": lambda: jnp.split(v, 3),
    "err_split": lambda: jnp.split(m, 3, axis=1),
    "flip_f": lambda: jnp.flip(f),
    "flip_f_1": lambda: jnp.flip(f, 1),
    "tile_v": lambda: jnp.tile(v, 2),
    "tile_f": lambda: jnp.tile(f, (2, 1, 2)),
    "repeat_v": lambda: jnp.repeat(v, 2),
    "repeat_f_0": lambda: jnp.repeat(f, 2, axis=0),
    "repeat_f_none": lambda: jnp.repeat(f, 2),
    "tril_m": lambda: jnp.tril(m),
    "tril_m_k": lambda: jnp.tril(m, -1),
    "triu_m_k": lambda: jnp.triu(m, 1),
    "tril_t3": lambda: jnp.tril(t3),
    "err_tril": lambda: jnp.tril(v),
    "zeros_like_i": lambda: jnp.zeros_like(i),
    "ones_like_f": lambda: jnp.ones_like(f, dtype=jnp.int8),
    "zeros_like_weak": lambda: jnp.zeros_like(ws),
    "full_like_f": lambda: jnp.full_like(f, 7),
    "full_like_i_f": lambda: jnp.full_like(i, 2.5),
    "full_like_array": lambda: jnp.full_like(f, v),
    "copy_f": lambda: jnp.copy(f),
    "astype_f_i": lambda: f.astype(jnp.int32),
    "astype_f_b": lambda: f.astype(jnp.bool_),
    "astype_i_u8": lambda: i.astype(jnp.uint8),
    "astype_weak": lambda: ws.astype(jnp.float32),
    "asarray_weak": lambda: jnp.asarray(ws),
    "asarray_dtype": lambda: jnp.asarray(j, dtype=jnp.float16),
    # Products.
    "dot_v_w": lambda: jnp.dot(v, w),
    "dot_f_v": lambda: jnp.dot(f, v),
    "dot_m_n": lambda: jnp.dot(m, n),
    "dot_t3_n": lambda: jnp.dot(t3, n),
    "dot_scalar": lambda: jnp.dot(f, 2.0),
    "dot_i_v": lambda: jnp.dot(i, v),
    "dot_v_i": lambda: jnp.dot(j, j),
    "err_dot": lambda: jnp.dot(f, f),
    "matmul_m_n": lambda: jnp.matmul(m, n),
    "matmul_t3_n": lambda: jnp.matmul(t3, n),
    "matmul_v_m": lambda: jnp.matmul(jnp.ones(3, f32), m),
    "matmul_m_vec": lambda: jnp.matmul(m, jnp.array([1.0, 2.0, 3.0, 4.0], f32)),
    "matmul_batch_bcast": lambda: jnp.matmul(jnp.ones((2, 1, 3, 4), f32),
                                             jnp.arange(40, dtype=f32).reshape(5, 4, 2)),
    "matmul_batch_one": lambda: jnp.matmul(jnp.ones((1, 3, 4), f32), t3.reshape(2, 4, 3)),
    "matmul_i_f": lambda: jnp.matmul(i, jnp.ones((3, 2), f32)),
    "err_matmul_scalar": lambda: jnp.matmul(v, 2.0),
    "err_matmul_batch": lambda: jnp.matmul(jnp.ones((2, 3, 4)), jnp.ones((3, 4, 2))),
    "err_matmul_k": lambda: jnp.matmul(m, m),
    "vdot_f_f": lambda: jnp.vdot(f, f),
    "outer_v_j": lambda: jnp.outer(v, j),
    "inner_v_w": lambda: jnp.inner(v, w),
    "inner_f_f": lambda: jnp.inner(f, f),
    "inner_scalar": lambda: jnp.inner(v, 2),
    "einsum_ij_jk": lambda: jnp.einsum("ij,jk->ik", m, n),
    "einsum_implicit": lambda: jnp.einsum("ij,jk", m, n),
    "einsum_batch": lambda: jnp.einsum("bij,bjk->bik", t3, t3.reshape(2, 4, 3)),
    "einsum_transpose_out": lambda: jnp.einsum("ij,jk->ki", m, n),
    "einsum_sum_unique": lambda: jnp.einsum("ij,k->ik", f, v),
    "einsum_outer": lambda: jnp.einsum("i,j->ij", v, w),
    "einsum_full": lambda: jnp.einsum("ij,ij->", f, f),
    "einsum_ellipsis": lambda: jnp.einsum("...ij,jk->...ik", t3, n),
    "einsum_diag_two": lambda: jnp.einsum("ii,i->i", sq, v),
    "einsum_int_float": lambda: jnp.einsum("i,i->", j, v),
    "einsum1_transpose": lambda: jnp.einsum("ij->ji", f),
    "einsum1_diag": lambda: jnp.einsum("ii->i", sq),
    "einsum1_trace": lambda: jnp.einsum("ii", sq),
    "einsum1_sum": lambda: jnp.einsum("ijk->j", t3),
    "einsum1_weak": lambda: jnp.einsum("i->", jnp.asarray([1.0, 2.0]) * ws),
    "norm_f": lambda: jnp.linalg.norm(f),
    "norm_f_keep": lambda: jnp.linalg.norm(f, keepdims=True),
    "norm_f_axis1": lambda: jnp.linalg.norm(f, axis=1),
    "norm_v_1": lambda: jnp.linalg.norm(v, 1),
    "norm_v_inf": lambda: jnp.linalg.norm(v, np.inf),
    "norm_v_ninf": lambda: jnp.linalg.norm(v, -np.inf),
    "norm_v_0": lambda: jnp.linalg.norm(jnp.array([0.0, 2.0, 0.0, -1.0]), 0),
    "norm_v_3": lambda: jnp.linalg.norm(v, 3),
    "norm_m_1": lambda: jnp.linalg.norm(m, 1),
    "norm_m_inf": lambda: jnp.linalg.norm(m, np.inf),
    "norm_m_ninf_keep": lambda: jnp.linalg.norm(m, -np.inf, keepdims=True),
    "norm_i": lambda: jnp.linalg.norm(i),
    "norm_t3_axes": lambda: jnp.linalg.norm(t3, 1, axis=(2, 0)),
    "err_norm_axes": lambda: jnp.linalg.norm(t3, 1),
    "err_norm_ord": lambda: jnp.linalg.norm(m, 3),
    # lax.
    "lax_add_int": lambda: lax.add(j, 2),
    "err_lax_add_shapes": lambda: lax.add(v, jnp.ones(4, f32)),
    "lax_sub_scalar": lambda: lax.sub(v, jnp.float32(1)),
    "lax_div_int": lambda: lax.div(j, jnp.int32(2)),
    "lax_rem_int": lambda: lax.rem(j, jnp.int32(3)),
    "lax_pow_f_i": lambda: lax.pow(v, j),
    "lax_max": lambda: lax.max(v, w),
    "lax_shift_right_logical": lambda: lax.shift_right_logical(j, jnp.int32(1)),
    "lax_shift_right_arithmetic": lambda: lax.shift_right_arithmetic(j, jnp.int32(1)),
    "lax_round_away": lambda: lax.round(r),
    "lax_round_even": lambda: lax.round(r, lax.RoundingMethod.TO_NEAREST_EVEN),
    "lax_integer_pow": lambda: lax.integer_pow(v, 3),
    "lax_integer_pow_neg": lambda: lax.integer_pow(v, -2),
    "lax_convert_f_i": lambda: lax.convert_element_type(f, jnp.int32),
    "lax_convert_f_b": lambda: lax.convert_element_type(f, jnp.bool_),
    "lax_convert_weak": lambda: lax.convert_element_type(ws, jnp.float32),
    "lax_convert_i64": lambda: lax.convert_element_type(j, jnp.int64),
    "lax_rsqrt": lambda: lax.rsqrt(m),
    "lax_logistic": lambda: lax.logistic(f),
    "lax_erf": lambda: lax.erf(f),
    "lax_erf_inv": lambda: lax.erf_inv(jnp.array([-0.5, 0.0, 0.9], f32)),
    "lax_is_finite": lambda: lax.is_finite(special),
    "lax_not_i": lambda: lax.bitwise_not(j),
    "lax_not_b": lambda: lax.bitwise_not(b),
    "lax_nextafter": lambda: lax.nextafter(v, w),
    "lax_atan2": lambda: lax.atan2(v, w),
    "lax_select": lambda: lax.select(b, v, w),
    "lax_select_n": lambda: lax.select_n(jnp.array([0, 2, 1], jnp.int32), v, w, v * 10),
    "err_lax_select_n_empty": lambda: lax.select_n(b),
    "lax_clamp": lambda: lax.clamp(jnp.float32(-1), f, jnp.float32(1)),
    "lax_clamp_arrays": lambda: lax.clamp(jnp.zeros(3, f32), w, jnp.ones(3, f32)),
    "lax_iota": lambda: lax.iota(jnp.int32, 5),
    "lax_iota_f": lambda: lax.iota(jnp.float32, 3),
    "lax_broadcasted_iota": lambda: lax.broadcasted_iota(jnp.int32, (2, 3), 1),
    "lax_broadcast_in_dim": lambda: lax.broadcast_in_dim(v, (2, 3), (1,)),
    "lax_broadcast_in_dim_1": lambda: lax.broadcast_in_dim(col, (2, 4), (0, 1)),
    "lax_broadcast": lambda: lax.broadcast(v, (2,)),
    "lax_reshape": lambda: lax.reshape(m, (4, 3)),
    "lax_transpose": lambda: lax.transpose(t3, (2, 0, 1)),
    "lax_squeeze": lambda: lax.squeeze(jnp.ones((1, 3, 1), f32), (0, -1)),
    "lax_expand_dims": lambda: lax.expand_dims(v, (0, -1)),
    "err_lax_expand_dims": lambda: lax.expand_dims(v, (0, 0)),
    "lax_slice": lambda: lax.slice(m, (1, 0), (3, 4)),
    "lax_slice_strides": lambda: lax.slice(m, (0, 1), (3, 4), (2, 2)),
    "lax_dynamic_slice": lambda: lax.dynamic_slice(m, (jnp.int32(1), jnp.int32(1)), (2, 2)),
    "lax_dynamic_slice_neg": lambda: lax.dynamic_slice(m, (jnp.int32(-2), jnp.int32(0)),
                                                       (1, 4)),
    "lax_dynamic_slice_clamp": lambda: lax.dynamic_slice(m, (jnp.int32(2), jnp.int32(3)),
                                                         (2, 2)),
    "err_lax_dynamic_slice": lambda: lax.dynamic_slice(m, (jnp.int32(0),), (1, 1)),
    "lax_dynamic_update_slice": lambda: lax.dynamic_update_slice(
        m, jnp.ones((2, 2), f32), (jnp.int32(1), jnp.int32(-1))),
    "lax_concatenate": lambda: lax.concatenate([v, w, v], 0),
    "lax_concatenate_1": lambda: lax.concatenate([f, f], 1),
    "err_lax_concatenate": lambda: lax.concatenate([], 0),
    "lax_pad": lambda: lax.pad(v, jnp.float32(0), [(1, 2, 1)]),
    "lax_pad_neg": lambda: lax.pad(m, jnp.float32(-1), [(-1, 0, 0), (0, 1, 0)]),
    "lax_rev": lambda: lax.rev(m, (0, 1)),
    "lax_dot_general": lambda: lax.dot_general(t3, t3, (((2,), (2,)), ((0,), (0,)))),
    "lax_dot_general_pref": lambda: lax.dot_general(i, i, (((1,), (1,)), ((), ())),
                                                    preferred_element_type=jnp.float32),
    "lax_dot": lambda: lax.dot(m, n),
    "lax_dot_mv": lambda: lax.dot(f, v),
    "err_lax_dot": lambda: lax.dot(f, f),
    "err_lax_dot_general_k": lambda: lax.dot_general(m, m, (((1,), (0,)), ((), ()))),
    "lax_reduce_sum": lambda: lax_internal._reduce_sum(t3, (0, 2)),
    "lax_reduce_max": lambda: lax_internal._reduce_max(f, (1,)),
    "lax_reduce_min": lambda: lax_internal._reduce_min(i, (0,)),
    "lax_reduce_prod": lambda: lax_internal._reduce_prod(f, (0,)),
    "lax_reduce_and": lambda: lax_internal._reduce_and(b, (0,)),
    "lax_reduce_or": lambda: lax_internal._reduce_or(b, (0,)),
    "lax_argmax": lambda: lax.argmax(f, 1, jnp.int32),
    "lax_argmin": lambda: lax.argmin(f, 0, jnp.int32),
    "lax_cumsum": lambda: lax.cumsum(m, 1),
    "lax_cumsum_rev": lambda: lax.cumsum(m, 0, reverse=True),
    "lax_sort": lambda: lax.sort(f),
    "lax_sort_0": lambda: lax.sort(f, dimension=0),
    "lax_sort_multi": lambda: lax.sort([jnp.array([3, 1, 2, 1], jnp.int32),
                                         jnp.array([0.0, 1.0, 2.0, 3.0], f32)], num_keys=1),
    "err_lax_sort_keys": lambda: lax.sort([v, w], num_keys=3),
    "lax_copy": lambda: lax_internal._array_copy(f),
    # Indexing.
    "index_0": lambda: f[0],
    "index_neg": lambda: f[-1],
    "index_t3": lambda: t3[1],
    "index_v": lambda: v[2],
    "slice_rows": lambda: m[1:],
    "slice_neg": lambda: m[-2:, 1:3],
    "slice_clip": lambda: m[:10, -10:2],
    "slice_empty": lambda: m[2:1],
    "err_slice_many": lambda: v[0:1, 0:1],
}

# Cases whose values may differ from XLA's in the last bits (compared with a tolerance):
# transcendental kernels, and jitted divisions by constants that XLA turns into
# multiplications by the reciprocal (var_i_1).
APPROX = {
    "var_i_1",
    "exp_f", "exp_i", "exp_weak", "exp2_f", "expm1_f", "log_v", "log1p_w", "log2_m",
    "log10_m", "sin_f", "cos_f", "tan_f", "arcsin_w", "arccos_w", "arctan_f", "sinh_f",
    "cosh_f", "tanh_f", "cbrt_f", "power_f_half", "power_f_v", "arctan2_f_v", "lax_rsqrt",
    "lax_logistic", "lax_erf", "lax_erf_inv", "lax_atan2", "norm_f", "norm_f_keep",
    "norm_f_axis1", "norm_v_3", "norm_i", "std_m_ddof", "sqrt_i8", "mean_i_dtype",
}

# Traced programs: name -> (function, example arguments); recorded as jaxpr/<name>.
X23 = jnp.ones((2, 3), f32)
I3 = jnp.ones((3,), jnp.int32)
JAXPRS = {
    "mul_int": (lambda x: x * 2, (X23,)),
    "sin": (lambda x: jnp.sin(x), (X23,)),
    "sin_int": (lambda x: jnp.sin(x), (I3,)),
    "div_int": (lambda x: x / 2, (I3,)),
    "sum_axis": (lambda x: jnp.sum(x, axis=1), (X23,)),
    "sum_int": (lambda x: jnp.sum(x), (I3,)),
    "mean_axis": (lambda x: jnp.mean(x, axis=0), (X23,)),
    "astype": (lambda x: x.astype(jnp.int32), (X23,)),
    "argmax": (lambda x: jnp.argmax(x, axis=1), (X23,)),
    "transpose": (lambda x: x.T, (X23,)),
    "lax_add": (lambda x: lax.add(x, 1), (I3,)),
    "maximum": (lambda x, y: jnp.maximum(x, y), (X23, X23)),
}


def values_record(x):
    x = np.asarray(x)
    weak = "w" if getattr(x, "weak_type", False) else "s"
    flat = x.reshape(-1)
    if x.dtype == np.bool_:
        vals = ["1" if e else "0" for e in flat]
    elif np.issubdtype(x.dtype, np.integer):
        vals = [str(int(e)) for e in flat]
    else:
        vals = [repr(float(e)) for e in flat]
    return vals


def record(out, name, fn):
    try:
        res = fn()
    except Exception as e:  # noqa: BLE001 - the error is the expected result
        msg = str(e).split("\n")[0]
        out.append((name, f"!{type(e).__name__}: {msg}"))
        return
    if isinstance(res, (list, tuple)):
        for k, r in enumerate(res):
            add_array(out, f"{name}[{k}]", r)
    else:
        add_array(out, name, res)


def add_array(out, name, x):
    out.append((name, repr(x)))
    weak = "w" if x.aval.weak_type else "s"
    shape = ",".join(str(d) for d in x.shape)
    vals = ",".join(values_record(x))
    out.append((name + "#v", f"{x.dtype}|{weak}|{shape}|{vals}"))


class Typed:
    """A stand-in with a dtype and a weak flag, for dtypes' promotion functions."""

    def __init__(self, d, weak):
        self.dtype = np.dtype(d)
        self.aval = types.SimpleNamespace(weak_type=weak)


DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "bfloat16", "float32", "float64"]


def np_dtype(name):
    return jnp.dtype(name)


def lattice_records(out, prefix):
    for a in DTYPES:
        for c in DTYPES:
            out.append((f"{prefix}promote/{a}/{c}",
                        str(jnp.promote_types(np_dtype(a), np_dtype(c)))))
            for wa in (False, True):
                for wc in (False, True):
                    key = f"{a}{'w' if wa else 's'}/{c}{'w' if wc else 's'}"
                    x, y = Typed(np_dtype(a), wa), Typed(np_dtype(c), wc)
                    d, weak = dtypes._lattice_result_type(x, y)
                    d = dtypes.canonicalize_dtype(d)
                    out.append((f"{prefix}lattice/{key}", f"{d}|{int(bool(weak))}"))
                    d, weak = dtypes.result_type(x, y, return_weak_type_flag=True)
                    out.append((f"{prefix}result/{key}", f"{d}|{int(bool(weak))}"))


def main():
    out = []
    for name, fn in CASES.items():
        record(out, name, fn)
    for name, (fn, args) in JAXPRS.items():
        out.append(("jaxpr/" + name, str(jax.make_jaxpr(fn)(*args))))
    for name in sorted(APPROX):
        assert name in CASES, name
        out.append((name + "#approx", "1"))
    lattice_records(out, "")
    jax.config.update("jax_enable_x64", True)
    lattice_records(out, "x64/")
    with open(OUT, "w", encoding="utf-8") as fh:
        for name, text in out:
            fh.write(name + "\t" + text.encode("unicode_escape").decode("ascii") + "\n")
    print(f"wrote {len(out)} records to {OUT}")


if __name__ == "__main__":
    main()
