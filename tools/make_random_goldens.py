"""Writes tests/golden/random_cases.txt: what JAX 0.10.2 (CPU) draws with randint,
truncated_normal, permutation, choice, normal and uniform over a range, in both threefry modes
(tests/random/random_test.cpp computes the same cases with parax).

Run with the installed JAX 0.10.2 (it refuses another version; the file's first line names
the versions that made it):
    python3 tools/make_random_goldens.py

The file was first made with JAX 0.4.35. Regenerating it with 0.10.2 changed the randint
draws of 8- and 16-bit dtypes (since JAX 0.7.2 they are drawn as int32 between bounds
converted to int32 and clipped to the dtype, then cast; jax_safer_randint, removed in 0.9.0)
and choice's two error texts that now name the sizes and p's shape; nothing else.

Format: tests/support/golden.h's `name<TAB>text` records (text unicode_escape'd).
  p/<case>, o/<case>   `dtype|shape|v0,v1,...` with jax_threefry_partitionable True (p) or
                       False (o); floats as the repr of their exact float32 value.
  x64/p/<case>, ...    the same with jax_enable_x64.
  err/<case>           `!ErrorKind: message`, what JAX raises.
The case names and arguments are mirrored in random_test.cpp.
"""
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden",
                   "random_cases.txt")

JAX_VERSION = "0.10.2"

R = jax.random
K = R.key
f32 = jnp.float32
a2d = jnp.arange(12, dtype=f32).reshape(4, 3) * 0.5
a65 = jnp.arange(30, dtype=jnp.int32).reshape(6, 5)
p5 = jnp.array([0.1, 0.2, 0.3, 0.25, 0.15], f32)
p10 = jnp.array([0.05, 0.0, 0.2, 0.1, 0.15, 0.05, 0.1, 0.2, 0.05, 0.1], f32)
p300 = jnp.array([(i % 7 + 0.5) / 1000.0 for i in range(300)], f32)

CASES = {
    # randint: two draws, span and multiplier, clipping to the dtype (8- and 16-bit dtypes
    # draw int32 values and cast them).
    "randint_3x3": lambda: R.randint(K(0), (3, 3), 0, 8),
    "randint_neg": lambda: R.randint(K(42), (10,), -5, 5),
    "randint_bcast": lambda: R.randint(K(1), (2, 5), jnp.array([0, 10, 100, 1000, -50]), 2000),
    "randint_big": lambda: R.randint(K(3), (1000,), 0, 7),
    "randint_u8_256": lambda: R.randint(K(5), (20,), 0, 256, jnp.uint8),
    "randint_i8_full": lambda: R.randint(K(6), (20,), -128, 128, jnp.int8),
    "randint_empty_range": lambda: R.randint(K(7), (5,), 5, 3),
    "randint_i16": lambda: R.randint(K(8), (10,), -1000, 1000, jnp.int16),
    "randint_i32_full": lambda: R.randint(K(9), (10,), -2**31, 2**31 - 1),
    "randint_floats": lambda: R.randint(K(10), (6,), 1.7, 9.9),
    "randint_u32": lambda: R.randint(K(11), (10,), np.uint32(0), np.uint32(4000000000),
                                     jnp.uint32),
    "randint_u16": lambda: R.randint(K(12), (10,), 100, 70000, jnp.uint16),
    "randint_scalar": lambda: R.randint(K(13), (), 0, 100),
    # 8- and 16-bit dtypes: int32 draws between the bounds cast to int32 and clipped.
    "randint_u8_small": lambda: R.randint(K(14), (17,), 3, 9, jnp.uint8),
    "randint_i8_clip": lambda: R.randint(K(15), (12,), -1000, 1000, jnp.int8),
    "randint_u8_top": lambda: R.randint(K(16), (5,), 255, 256, jnp.uint8),
    "randint_i8_reversed": lambda: R.randint(K(17), (4,), 10, -10, jnp.int8),
    "randint_i8_bcast": lambda: R.randint(K(18), (2, 3), jnp.array([-128, 0, 100], jnp.int8),
                                          jnp.array([[5], [127]], jnp.int32), jnp.int8),
    "randint_u16_wrapped_bounds": lambda: R.randint(
        K(19), (6,), np.uint32(4000000000), np.uint32(4000000100), jnp.uint16),
    "randint_i16_float_bounds": lambda: R.randint(K(20), (7,), -1e10, 2.5, jnp.int16),
    "randint_u16_neg_float": lambda: R.randint(K(21), (5,), -3.7, 4.9, jnp.uint16),
    "randint_u8_bool_bounds": lambda: R.randint(K(22), (5,), False, True, jnp.uint8),
    "randint_i16_big": lambda: R.randint(K(23), (3, 5), -32768, 32768, jnp.int16),
    # Batches of keys (and of bounds) under vmap.
    "randint_vmap_i8": lambda: jax.vmap(lambda k: R.randint(k, (5,), -20, 20, jnp.int8))(
        R.split(K(24), 3)),
    "randint_vmap_u16_bounds": lambda: jax.vmap(
        lambda k, lo: R.randint(k, (4,), lo, 1000, jnp.uint16))(
            R.split(K(25), 3), jnp.array([0, 500, 999])),
    "randint_vmap_i32": lambda: jax.vmap(lambda k: R.randint(k, (3,), 0, 100))(
        R.split(K(26), 4)),
    "randint_vmap_u32": lambda: jax.vmap(
        lambda k: R.randint(k, (2, 2), np.uint32(7), np.uint32(3000000000), jnp.uint32))(
            R.split(K(27), 2)),
    "randint_jit_u8": lambda: jax.jit(lambda k: R.randint(k, (9,), 0, 200, jnp.uint8))(K(28)),
    # A maxval above the dtype's range widens the span by one (8- and 16-bit dtypes no longer
    # reach this: their maxval is clipped to one past the top in int32).
    "randint_i32_u32_bound": lambda: R.randint(K(29), (6,), -5, np.uint32(3000000000),
                                               jnp.int32),
    # truncated_normal: uniform between erf bounds, erf_inv, clipped inside the bounds.
    "tn_5": lambda: R.truncated_normal(K(0), -1.5, 2.0, (5,)),
    "tn_1000": lambda: R.truncated_normal(K(1), -2.0, 2.0, (1000,)),
    "tn_lower_array": lambda: R.truncated_normal(K(2), jnp.array([-1.0, 0.0, 1.0]), 3.0),
    "tn_bcast": lambda: R.truncated_normal(K(3), jnp.array([-1.0, 0.0, 1.0]),
                                           jnp.array([[2.0], [4.0]]), (2, 3)),
    "tn_tail": lambda: R.truncated_normal(K(4), 3.0, 5.0, (500,)),
    "tn_infinite": lambda: R.truncated_normal(K(5), -jnp.inf, jnp.inf, (200,)),
    "tn_point": lambda: R.truncated_normal(K(6), 1.0, 1.0, (3,)),
    "tn_scalar": lambda: R.truncated_normal(K(7), -1.0, 1.0),
    # permutation: rounds of sorts keyed by fresh random bits.
    "perm_int": lambda: R.permutation(K(0), 10),
    "perm_1d": lambda: R.permutation(K(1), jnp.arange(20, dtype=f32) * 0.5),
    "perm_2d_axis0": lambda: R.permutation(K(2), a65),
    "perm_2d_axis1": lambda: R.permutation(K(2), a65, axis=1),
    "perm_2d_axis_neg": lambda: R.permutation(K(2), a65, axis=-1),
    "perm_2d_independent": lambda: R.permutation(K(3), a65, axis=1, independent=True),
    "perm_two_rounds": lambda: R.permutation(K(4), 2000),
    "perm_independent_two_rounds": lambda: R.permutation(
        K(5), jnp.arange(2100, dtype=jnp.int32).reshape(3, 700), axis=1, independent=True),
    "perm_one": lambda: R.permutation(K(6), 1),
    "perm_empty": lambda: R.permutation(K(6), jnp.zeros((0,), f32)),
    # choice: every branch.
    "choice_int": lambda: R.choice(K(0), 10, (5,)),
    "choice_1d": lambda: R.choice(K(1), jnp.arange(8, dtype=f32) * 1.5, (3, 2)),
    "choice_2d_axis0": lambda: R.choice(K(2), a2d, (5,)),
    "choice_2d_axis1": lambda: R.choice(K(2), a2d, (2, 2), axis=1),
    "choice_scalar_draw": lambda: R.choice(K(3), 7),
    "choice_no_replace": lambda: R.choice(K(4), 10, (5,), replace=False),
    "choice_no_replace_2d": lambda: R.choice(K(5), a65, (2, 2), replace=False),
    "choice_no_replace_axis1": lambda: R.choice(K(5), a65, (3,), replace=False, axis=1),
    "choice_p": lambda: R.choice(K(6), 5, (20,), p=p5),
    "choice_p_2d_axis1": lambda: R.choice(K(7), a65, (4,), p=p5, axis=1),
    "choice_p_long": lambda: R.choice(K(8), 300, (1000,), p=p300),
    "choice_p_no_replace": lambda: R.choice(K(9), 10, (4,), replace=False, p=p10),
    "choice_p_int_no_replace": lambda: R.choice(K(10), jnp.arange(4) * 10, (3,), replace=False,
                                                p=jnp.array([1, 2, 3, 4])),
    "choice_p_no_replace_2d": lambda: R.choice(K(11), a65, (2,), replace=False,
                                               p=jnp.array([0.1, 0.3, 0.2, 0.1, 0.2, 0.1], f32)),
    "choice_none": lambda: R.choice(K(12), 5, (0,)),
    "choice_p_no_replace_long": lambda: R.choice(K(13), 200, (50,), replace=False, p=p300[:200]),
    # normal: XLA's erf_inv, with its own log1p.
    "normal_2000": lambda: R.normal(K(1), (2000,)),
    # uniform over a range: XLA contracts f * (hi - lo) + lo to one FMA.
    "uniform_range": lambda: R.uniform(K(42), (1000,), minval=-5.0, maxval=5.0),
    "uniform_range_array": lambda: R.uniform(K(43), (2, 3), minval=jnp.array([-1.0, 0.5, 2.0]),
                                             maxval=10.0),
}

X64_CASES = {
    "randint_i64": lambda: R.randint(K(0), (3, 3), 0, 8, jnp.int64),
    "randint_i64_wide": lambda: R.randint(K(1), (6,), -2**40, 2**40, jnp.int64),
    "perm_int": lambda: R.permutation(K(0), 10),
    "randint_u64": lambda: R.randint(K(2), (6,), np.uint64(0), np.uint64(2**64 - 1), jnp.uint64),
    "randint_u64_top": lambda: R.randint(K(3), (4,), np.uint64(2**63), np.uint64(2**64 - 1),
                                         jnp.uint64),
    "randint_i8": lambda: R.randint(K(4), (10,), -100, 100, jnp.int8),
    # Bounds are cast to int32 (wrapping) before they are clipped: [-2^40, 2^40 + 7) is [0, 7).
    "randint_i8_wrapped_bounds": lambda: R.randint(K(5), (6,), -2**40, 2**40 + 7, jnp.int8),
    "randint_u16": lambda: R.randint(K(6), (8,), 0, 70000, jnp.uint16),
    "randint_i32": lambda: R.randint(K(7), (5,), -7, 7, jnp.int32),
    "randint_u32_full": lambda: R.randint(K(8), (5,), 0, 2**32, jnp.uint32),
    "randint_default": lambda: R.randint(K(9), (5,), 0, 10),
    "randint_vmap_i16": lambda: jax.vmap(lambda k: R.randint(k, (3,), -5, 5, jnp.int16))(
        R.split(K(10), 2)),
    "randint_vmap_i64": lambda: jax.vmap(lambda k: R.randint(k, (3,), -2**40, 2**40))(
        R.split(K(11), 2)),
}

ERRORS = {
    "choice_empty_population": lambda: R.choice(K(0), 0, (3,)),
    "choice_too_many": lambda: R.choice(K(0), 3, (5,), replace=False),
    "choice_too_many_2d": lambda: R.choice(K(0), a65, (2, 4), replace=False),
    "choice_bad_p": lambda: R.choice(K(0), 5, (2,), p=jnp.ones(4) / 4),
    "choice_bad_p_2d": lambda: R.choice(K(0), a2d, (2,), p=jnp.ones((2, 2)) / 4, axis=1),
    "choice_bad_axis": lambda: R.choice(K(0), a2d, (2,), axis=2),
    "permutation_float_scalar": lambda: R.permutation(K(0), 2.5),
    "permutation_bad_axis": lambda: R.permutation(K(0), a65, axis=2),
    "randint_float_dtype": lambda: R.randint(K(0), (2,), 0, 5, jnp.float32),
    "randint_bool_dtype": lambda: R.randint(K(0), (2,), 0, 2, jnp.bool_),
    # The dtype is checked before the bounds' shapes.
    "randint_float_dtype_bad_shape": lambda: R.randint(K(0), (2,), jnp.zeros((3,), jnp.int32), 5,
                                                       jnp.float32),
    "randint_i8_bad_shape": lambda: R.randint(K(0), (2,), jnp.zeros((3,), jnp.int32), 5, jnp.int8),
    "randint_bad_shape": lambda: R.randint(K(0), (2,), jnp.zeros((3, 2), jnp.int32), 5),
    "randint_incompatible": lambda: R.randint(K(0), (2,), jnp.zeros((3,), jnp.int32), 5),
    "truncated_normal_int_dtype": lambda: R.truncated_normal(K(0), -1.0, 1.0, (2,), np.dtype("int32")),
    "truncated_normal_bad_shape": lambda: R.truncated_normal(K(0), jnp.zeros(3), 1.0, (2,)),
}


def values_record(x):
    x = np.asarray(x)
    shape = ",".join(str(d) for d in x.shape)
    if np.issubdtype(x.dtype, np.floating):
        vals = ",".join(repr(float(v)) for v in x.ravel())
    else:
        vals = ",".join(str(int(v)) for v in x.ravel())
    return f"{x.dtype}|{shape}|{vals}"


def draw(out, prefix, cases):
    for mode, tag in ((True, "p"), (False, "o")):
        jax.config.update("jax_threefry_partitionable", mode)
        for name, fn in cases.items():
            out.append((f"{prefix}{tag}/{name}", values_record(fn())))
    jax.config.update("jax_threefry_partitionable", True)


def main():
    if jax.__version__ != JAX_VERSION:
        sys.exit(f"this script records JAX {JAX_VERSION}'s draws; found jax {jax.__version__}")
    out = []
    draw(out, "", CASES)
    for name, fn in ERRORS.items():
        try:
            fn()
            raise AssertionError(f"{name} did not raise")
        except (TypeError, ValueError) as e:
            out.append((f"err/{name}", f"!{type(e).__name__}: {e}"))
    jax.config.update("jax_enable_x64", True)
    draw(out, "x64/", X64_CASES)
    with open(OUT, "w", encoding="utf-8") as fh:
        # A line without a tab: golden.h's reader skips it.
        fh.write(f"# tools/make_random_goldens.py: jax {jax.__version__}, jaxlib "
                 f"{jax.lib.__version__}, numpy {np.__version__}, CPU\n")
        for name, text in out:
            fh.write(name + "\t" + text.encode("unicode_escape").decode("ascii") + "\n")
    print(f"wrote {len(out)} records to {OUT}")


if __name__ == "__main__":
    main()
