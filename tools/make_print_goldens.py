#!/usr/bin/env python3
"""Generates tests/golden/print_cases.txt: how JAX 0.4.35 (numpy 1.26) prints arrays.

Run with the reference venv:  /opt/jax435/bin/python tools/make_print_goldens.py

File format (parsed by tests/api/format_test.cpp without any library):

    # comment lines (only before the first case)
    case <name>
    dtype <numpy dtype name>
    shape <d0> <d1> ...          ("shape" alone for a 0-d array)
    weak <0|1>
    data <token> <token> ...     (element bits, row-major; see below)
    repr <n>
    <exactly n bytes>
    str <n>
    <exactly n bytes>
    end

Each data token is the element's bits as fixed-width lowercase hex (2 digits per byte;
bool is 00/01), optionally followed by `*<count>` for a run of equal elements. The
repr/str payloads are raw bytes (they may contain newlines) followed by one '\\n'.
"""

import os
import sys

import numpy as np

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import ml_dtypes  # noqa: E402
from jax._src.lax import lax as lax_internal  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden",
                   "print_cases.txt")

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = [np.float16, BF16, np.float32, np.float64]
INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
ALL = [np.bool_] + INTS + FLOATS

# Casting out-of-range values to float16/bfloat16 overflows to inf on purpose.
np.seterr(over="ignore", invalid="ignore")
rng = np.random.default_rng(20241104)
cases = []
names = set()


def dname(dt):
    return np.dtype(dt).name


def hex_tokens(a):
    a = np.ascontiguousarray(a)
    if a.dtype == np.bool_:
        bits = a.view(np.uint8).reshape(-1)
    else:
        bits = a.view(np.dtype(f"u{a.dtype.itemsize}")).reshape(-1)
    width = 2 * a.dtype.itemsize
    toks = []
    prev, run = None, 0
    for b in bits.tolist():
        if b == prev:
            run += 1
            continue
        if prev is not None:
            toks.append(f"{prev:0{width}x}" + (f"*{run}" if run > 1 else ""))
        prev, run = b, 1
    if prev is not None:
        toks.append(f"{prev:0{width}x}" + (f"*{run}" if run > 1 else ""))
    return toks


def hide_unshown(x):
    """For a summarized array, overwrites the elements numpy does not show with one value
    that would change the formatting if it were (wrongly) considered: the golden file stays
    small (runs compress) and the test checks widths come from the shown elements only."""
    a = np.array(np.asarray(x))
    if a.size <= 1000 or a.ndim == 0:
        return x
    shown = np.zeros(a.shape, bool)
    axes = [np.r_[0:3, d - 3:d] if d > 6 else np.arange(d) for d in a.shape]
    shown[np.ix_(*axes)] = True
    if a.dtype == np.bool_:
        filler = True
    elif a.dtype.kind in "iu":
        filler = np.iinfo(a.dtype).min
    else:
        filler = -60000.0 if a.dtype == np.float16 else -1e30
    a[~shown] = filler
    return lax_internal._convert_element_type(a, a.dtype, weak_type=x.aval.weak_type)


def add(name, x):
    """Records how JAX prints the jax.Array `x`."""
    x = hide_unshown(x)
    base, k = name, 2
    while name in names:
        name = f"{base}#{k}"
        k += 1
    names.add(name)
    a = np.asarray(x)
    assert a.dtype.name == x.dtype.name, (a.dtype, x.dtype)
    cases.append((name, x.dtype.name, x.shape, bool(x.aval.weak_type), hex_tokens(a),
                  repr(x), str(x)))


def arr(values, dtype, weak=False):
    """A jax.Array holding `values` converted (as numpy would) to `dtype`."""
    a = np.asarray(values)
    if a.dtype != np.dtype(dtype):
        a = a.astype(dtype)
    if weak:
        return lax_internal._convert_element_type(a, np.dtype(dtype), weak_type=True)
    return jnp.asarray(a)


def from_bits(bits, dtype):
    dt = np.dtype(dtype)
    return np.asarray(bits, dtype=f"u{dt.itemsize}").view(dt)


def random_bits(n, dtype):
    dt = np.dtype(dtype)
    raw = rng.integers(0, 2**(8 * dt.itemsize), size=n, dtype=np.uint64)
    return from_bits(raw.astype(f"u{dt.itemsize}"), dt)


# ----------------------------------------------------------------------------------
# The examples of jax-arrays.md section 3.3.
add("doc_11_20_29", arr([11, 20, 29], np.float32))
add("doc_scalar_1_0034581", arr(np.float32(1.0034581), np.float32))
add("doc_scalar_1", arr(1.0, np.float32))
add("doc_scalar_5", arr(5, np.int32))
add("doc_weak_2", arr(2.0, np.float32, weak=True))
add("doc_arange10", arr(np.arange(10), np.int32))
add("doc_arange2000", arr(np.arange(2000), np.int32))
add("doc_bools", arr([True, False], np.bool_))
add("doc_exp", arr([1e-5, 1.0], np.float32))
add("doc_nan_inf", arr([np.nan, 1.5, -np.inf], np.float32))
add("doc_empty_0x3", arr(np.zeros((0, 3)), np.float32))
add("doc_quirk", arr([-4., -2.1, -2.7, -1.9, -1.3, -3.5, -0.5, -0.1, 0.3, 1.5], np.float32))
add("doc_8x2", arr(np.arange(16).reshape(8, 2), np.int32))
add("doc_2x3x4", arr(np.arange(24).reshape(2, 3, 4), np.float32))
add("doc_ones_100x100", jnp.ones((100, 100), jnp.float32))
add("doc_arange1001_div7", jnp.arange(1001., dtype=jnp.float32) / 7)
add("doc_pmap_seed", arr(np.arange(11, 345, 9)[:36].reshape(12, 3), np.float32))

# ----------------------------------------------------------------------------------
# Every dtype: scalars, small 1-D..4-D, summarized.
for dt in ALL:
    n = dname(dt)
    if dt == np.bool_:
        vals = rng.integers(0, 2, size=200).astype(bool)
    elif dt in INTS:
        info = np.iinfo(dt)
        vals = rng.integers(max(info.min, -1000), min(info.max, 1000), size=200,
                            endpoint=True).astype(dt)
    else:
        vals = (rng.standard_normal(200) * 10).astype(dt)
    add(f"{n}_scalar0", arr(vals[0], dt))
    add(f"{n}_scalar1", arr(vals[1], dt))
    add(f"{n}_1d_1", arr(vals[:1], dt))
    add(f"{n}_1d_5", arr(vals[:5], dt))
    add(f"{n}_1d_40", arr(vals[:40], dt))
    add(f"{n}_2d_3x4", arr(vals[:12].reshape(3, 4), dt))
    add(f"{n}_2d_1x7", arr(vals[:7].reshape(1, 7), dt))
    add(f"{n}_2d_7x1", arr(vals[:7].reshape(7, 1), dt))
    add(f"{n}_3d_2x3x4", arr(vals[:24].reshape(2, 3, 4), dt))
    add(f"{n}_4d_2x2x3x4", arr(vals[:48].reshape(2, 2, 3, 4), dt))
    add(f"{n}_5d_2x1x2x1x3", arr(vals[:12].reshape(2, 1, 2, 1, 3), dt))
    add(f"{n}_2d_4x30_wrap", arr(np.resize(vals, 120).reshape(4, 30), dt))
    big = np.resize(vals, 1001)
    add(f"{n}_1d_1001_summarized", arr(big, dt))
    if n in ("bool", "int8", "float32", "bfloat16"):
        add(f"{n}_1d_1000_full", arr(big[:1000], dt))
    add(f"{n}_2d_40x40_summarized", arr(np.resize(vals, 1600).reshape(40, 40), dt))
    add(f"{n}_3d_12x11x10_summarized", arr(np.resize(vals, 1320).reshape(12, 11, 10), dt))
    add(f"{n}_2d_2x600_summarized", arr(np.resize(vals, 1200).reshape(2, 600), dt))
    add(f"{n}_2d_600x2_summarized", arr(np.resize(vals, 1200).reshape(600, 2), dt))
    add(f"{n}_empty_0", arr(np.zeros((0,)), dt))
    add(f"{n}_empty_2x0", arr(np.zeros((2, 0)), dt))
    if dt != np.bool_:
        add(f"{n}_weak_scalar", arr(vals[2], dt, weak=True))
        add(f"{n}_weak_1d", arr(vals[:6], dt, weak=True))
    add(f"{n}_zeros_5", arr(np.zeros(5), dt))
    add(f"{n}_zeros_scalar", arr(0, dt))
    add(f"{n}_ones_2x3", arr(np.ones((2, 3)), dt))

# Summarization corner cases.
add("f32_6x6x6x6x6_no_axis_long",
    arr((np.arange(7776).reshape(6, 6, 6, 6, 6) // 36) % 97, np.float32))
add("f32_1x2000", arr(np.arange(2000).reshape(1, 2000) / 3, np.float32))
add("f32_2000x1", arr(np.arange(2000).reshape(2000, 1) / 3, np.float32))
add("i32_10x10x10x2", arr(np.arange(2000).reshape(10, 10, 10, 2), np.int32))
add("i64_7x7x7x7", arr(np.arange(2401).reshape(7, 7, 7, 7) - 1200, np.int64))
add("f64_randn_50x50", arr(rng.standard_normal((50, 50)), np.float64))
add("f32_randn_20x20x20", arr(rng.standard_normal((20, 20, 20)), np.float32))


def with_middle(middle, dtype):
    """[1, 2, 3, <1000 x middle>, 4, 5, 6]: the middle is never shown."""
    return arr(np.concatenate([[1, 2, 3], np.full(1000, middle), [4, 5, 6]]), dtype)


add("f32_edges_differ", arr(np.concatenate([[1e-7, 2, 3], np.ones(1000), [4, 5, 1e9]]),
                            np.float32))
add("f32_hidden_extreme", with_middle(1e20, np.float32))
add("i32_hidden_wide", with_middle(-10**9, np.int32))
add("f32_hidden_nan", with_middle(np.nan, np.float32))

# ----------------------------------------------------------------------------------
# Line wrapping and JAX's six-space quirk: sweep lengths across the line width.
for n in range(1, 31):
    add(f"f32_arange_{n}", arr(np.arange(n), np.float32))
    add(f"f32_arange_{n}_x1.5_minus", arr(np.arange(n) * 1.5 - 7, np.float32))
    add(f"i32_arange_{n}_x37", arr(np.arange(n) * 37, np.int32))
    add(f"bool_{n}", arr(np.arange(n) % 3 == 0, np.bool_))
for n in range(1, 16):
    add(f"f32_weak_arange_{n}", arr(np.arange(n) * 1.25, np.float32, weak=True))
    add(f"f64_weak_arange_{n}", arr(np.arange(n) / 7, np.float64, weak=True))
    add(f"bf16_arange_{n}", arr(np.arange(n) * 1.1, BF16))
    add(f"f32_2row_{n}", arr(np.arange(2 * n).reshape(2, n) * 3.5, np.float32))
for rows in range(1, 5):
    for cols in (10, 11, 12, 13, 14, 15, 16, 17):
        values = np.arange(rows * cols).reshape(rows, cols) / 3
        add(f"f32_lastline_{rows}x{cols}", arr(values, np.float32))
add("f64_wrap_3x20", arr(rng.standard_normal((3, 20)), np.float64))
add("i64_wrap_2x30", arr(rng.integers(-10**17, 10**17, size=(2, 30)), np.int64))
add("u64_wrap", arr(rng.integers(0, 2**64 - 1, size=25, dtype=np.uint64), np.uint64))
add("f32_wrap_3d", arr(rng.standard_normal((2, 2, 25)), np.float32))
add("f32_wrap_4d", arr(rng.standard_normal((2, 2, 2, 13)) * 1000, np.float32))

# ----------------------------------------------------------------------------------
# Integer extremes.
for dt in INTS:
    info = np.iinfo(dt)
    n = dname(dt)
    add(f"{n}_extremes", arr([info.min, info.max, 0, 1], dt))
    add(f"{n}_min_scalar", arr(info.min, dt))
    add(f"{n}_max_scalar", arr(info.max, dt))
    add(f"{n}_mixed_widths", arr([info.max, 5, -3 if info.min < 0 else 7], dt))
add("u64_max_only", arr([2**64 - 1], np.uint64))
add("i64_neg_only", arr([-1, -22, -333], np.int64))

# ----------------------------------------------------------------------------------
# Floats: format selection, padding, specials.
float_vectors = {
    "mixed_exp_ratio": [1.0, 1000.5],
    "ratio_just_1000": [1.0, 1000.0],
    "ratio_just_over": [1.0, 1000.25],
    "ge_1e8": [1e8, 1.0],
    "just_below_1e8": [99999990.0, 1.0, 2.0],
    "lt_1e-4": [0.0001, 0.001],
    "ge_1e-4": [0.00011, 0.001],
    "tiny_and_zero": [0.0, 1e-20],
    "zeros_neg": [-0.0, 0.0],
    "neg_zero_scalar_like": [-0.0],
    "all_nan": [np.nan, np.nan],
    "nan_neginf": [np.nan, -np.inf],
    "nan_inf": [np.nan, np.inf],
    "inf_only": [np.inf],
    "neginf_only": [-np.inf],
    "nan_and_exp": [np.nan, 1e-10, 1.0],
    "neginf_and_exp": [-np.inf, 1e-10, 1.0, -3e5],
    "nan_pos": [np.nan, 1.0, 2.0],
    "nan_long_frac": [np.nan, 0.125, 2.0],
    "neginf_int": [-np.inf, 1.0],
    "neg_nan": [-np.nan, 1.0],
    "big_exp_3digit": [1e100, 1e-100, 3.0],
    "exp_neg_values": [-1.5e-7, 2.25e10, -3.0],
    "int_valued": [1.0, 20.0, 300.0],
    "halves": [0.5, 1.5, -2.5, 100.25],
    "thirds": [1 / 3, 2 / 3, 10 / 3],
    "pi_e": [np.pi, np.e, -np.pi * 100],
    "long_frac": [0.123456789012, 1.0],
    "round_up_9s": [0.999999999, 9.99999999, 99.9999999],
    "exact_pow2": [2.0**-9, 2.0**-13, 2.0**20],
    "large_ints_below_1e8": [67108872.0, 12345678.0, 3.0],
    "one_tenth": [0.1, 0.2, 0.3],
    "max_finite_mix": [np.finfo(np.float16).max, 1.0],
    "subnormal16": [6e-8, 1e-7, 3.0e-5],
    "negative_small": [-0.001, -0.01, -0.1],
    "mixed_sign_exp": [-1e-5, 1e5, 0.0, -0.0],
}
for fdt in FLOATS:
    n = dname(fdt)
    for key, vec in float_vectors.items():
        add(f"{n}_{key}", arr(np.asarray(vec, np.float64), fdt))
    add(f"{n}_arange1001_div7", arr(np.arange(1001.) / 7, fdt))
    add(f"{n}_randn", arr(rng.standard_normal(12), fdt))
    add(f"{n}_randn_x1e4", arr(rng.standard_normal(12) * 1e4, fdt))
    add(f"{n}_randn_2d", arr(rng.standard_normal((4, 5)) * 3, fdt))
    add(f"{n}_ones_100x100", arr(np.ones((100, 100)), fdt))

# Random bit patterns: exercises shortest-digit generation (scalar str) and exponential
# formatting with padded mantissas (arrays).
for fdt, count in ((np.float16, 160), (np.float32, 160), (np.float64, 120), (BF16, 80)):
    n = dname(fdt)
    for i in range(count):
        v = random_bits(1, fdt)
        add(f"{n}_bits_scalar_{i}", arr(v[0], fdt))
    for i in range(40):
        v = random_bits(rng.integers(2, 7), fdt)
        add(f"{n}_bits_vec_{i}", arr(v, fdt))
    for i in range(30):
        # Values within one or two decades: positional format with long fractions.
        scale = 10.0 ** rng.integers(-3, 7)
        v = (rng.random(rng.integers(2, 7)) * scale).astype(fdt)
        add(f"{n}_positional_{i}", arr(v, fdt))
    for i in range(20):
        scale = 10.0 ** rng.integers(-3, 7)
        v = (rng.random(rng.integers(2, 7)) * scale * rng.choice([-1, 1])).astype(fdt)
        add(f"{n}_positional_signed_{i}", arr(v, fdt))

# Scalar str switch points (numpy scalar str: positional for 1e-4 <= |x| < 1e16).
scalar_values = [1e-4, 9.999e-5, 1.0001e-4, 1e-5, 1.5e-5, 1e16, 9.99e15, 1.2e16, 1e20, 1e-20,
                 123456.789, 0.1, 1 / 3, 2.0 / 3, np.pi, 1e7, 12345678.9, 1e15 + 0.3,
                 65504.0, -65504.0, 3.0e38, 1.0e-38, 1.4e-45, 5e-324,
                 1.7976931348623157e308, -0.0, np.nan, np.inf, -np.inf, 100.0, 0.5, 1024.0,
                 2.0**-24, 6.1e-5]
for fdt in FLOATS:
    n = dname(fdt)
    for i, v in enumerate(scalar_values):
        add(f"{n}_scalar_point_{i}", arr(np.float64(v), fdt))

# Every float16 exponent band: power-of-two neighbours (unequal margins).
p = np.array([2.0**e for e in range(-24, 16)])
add("float16_pow2_all", arr(p, np.float16))
add("float16_pow2_scalar_lo", arr(np.float16(2.0**-14), np.float16))
add("float32_pow2", arr(np.array([2.0**e for e in range(-30, 30, 3)]), np.float32))
add("float16_dense_1_to_2", arr(from_bits(np.arange(0x3c00, 0x3c00 + 64), np.float16),
                                np.float16))
add("float16_dense_1000s", arr(from_bits(np.arange(0x63d0, 0x63d0 + 40), np.float16),
                               np.float16))
add("bfloat16_dense", arr(from_bits(np.arange(0x3f80, 0x3f80 + 40), BF16), BF16))
bf16_specials = [0x7fc0, 0xffc0, 0x7f80, 0xff80, 0x8000, 0x0000, 0x0001, 0x7f7f, 0xff7f]
add("bfloat16_specials", arr(from_bits(bf16_specials, BF16), BF16))
add("bfloat16_neg_nan_scalar", arr(from_bits([0xffc0], BF16)[0], BF16))
add("bfloat16_large_ints", arr([256, 257, 1000, 123456, 1e7], BF16))
add("bfloat16_summarized", arr(np.arange(2000) * 0.37, BF16))
add("float16_neg_nan", arr(from_bits([0xfe00, 0x3c00], np.float16), np.float16))
add("float32_neg_nan_scalar", arr(from_bits([0xffc00000], np.float32)[0], np.float32))


def write():
    out = []
    out.append("# parax print goldens: generated by tools/make_print_goldens.py\n")
    out.append(f"# jax {jax.__version__}, numpy {np.__version__}, ml_dtypes "
               f"{ml_dtypes.__version__}; {len(cases)} cases\n")
    for name, dtype, shape, weak, toks, r, s in cases:
        out.append(f"case {name}\n")
        out.append(f"dtype {dtype}\n")
        out.append("shape" + "".join(f" {d}" for d in shape) + "\n")
        out.append(f"weak {int(weak)}\n")
        out.append("data" + "".join(f" {t}" for t in toks) + "\n")
        rb, sb = r.encode(), s.encode()
        out.append(f"repr {len(rb)}\n{r}\n")
        out.append(f"str {len(sb)}\n{s}\n")
        out.append("end\n")
    text = "".join(out)
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", newline="\n") as f:
        f.write(text)
    print(f"wrote {len(cases)} cases, {len(text)} bytes to {os.path.normpath(OUT)}",
          file=sys.stderr)


write()
