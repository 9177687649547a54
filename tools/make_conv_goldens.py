"""Writes tests/golden/conv_cases.txt: what JAX gives for convolutions and windowed
reductions (tests/lax/conv_test.cpp runs the same cases with parax).

Run: python3 tools/make_conv_goldens.py

Format: tests/support/golden.h's `name<TAB>text` records. Each case is one record holding
its configuration (`key=value` fields separated by spaces, which the C++ test parses and
runs), and records `<name>#<what>` holding JAX's results as `dtype|shape|v0,v1,...`, or
`!ErrorKind: message` when JAX raises. Operands come from gen(): small multiples of 1/4,
so products and sums are exact in float32 and max pooling meets ties; the C++ test makes
the same values.

  conv/<name>  lhs= rhs= strides= padding= lhs_dil= rhs_dil= dn= fgc= bgc= dtype= [pref=]
    #out    conv_general_dilated(lhs, rhs, ...)
    #dlhs   #drhs   the vjp of both operands at cotangent gen(out.shape, 3)
    #vmap_l #vmap_r #vmap_lr   vmap over a leading axis of size 2 of lhs, rhs, both
                               (operands gen((2,) + shape, seed))
  rw/<name>    op=sum|max|min shape= window= strides= padding= bdil= wdil= init= dtype=
    #out, #grad (the vjp at cotangent gen(out.shape, 3)), #vmap (leading axis of 2)
  np/<name>    op=convolve|correlate a= v= mode= dtype=    #out
  conv_err/<name>, rw_err/<name>: a configuration JAX rejects   #err
  pool/<name>  op=max_pool|avg_pool shape= window= strides= padding= [count_include_pad=0]
    #out, #grad
"""
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden",
                   "conv_cases.txt")


def gen(shape, seed, dtype=np.float32):
    n = int(np.prod(shape)) if len(shape) else 1
    i = np.arange(n, dtype=np.int64)
    v = (((i * 37 + seed * 11) % 13) - 6) * 0.25
    if np.issubdtype(np.dtype(dtype), np.integer):
        v = ((i * 37 + seed * 11) % 13) - 6
    return jnp.asarray(v.reshape(shape), dtype=dtype)


def gen_ties(shape):
    """Three values only, so windows hold ties (max pooling's gradient picks one)."""
    i = np.arange(int(np.prod(shape)), dtype=np.int64)
    return jnp.asarray(((((i * 5) % 3) - 1) * 0.5).reshape(shape), dtype=jnp.float32)


def ints(v):
    return ",".join(str(int(x)) for x in v)


def fmt(x):
    x = np.asarray(x)
    if x.dtype == np.bool_:
        vals = ",".join(str(int(v)) for v in x.ravel())
    elif np.issubdtype(x.dtype, np.integer):
        vals = ",".join(str(int(v)) for v in x.ravel())
    else:
        vals = ",".join(repr(float(v)) for v in x.astype(np.float64).ravel())
    return f"{x.dtype.name}|{ints(x.shape)}|{vals}"


def pad_str(p):
    if isinstance(p, str):
        return p
    return ";".join(f"{lo}:{hi}" for lo, hi in p)


records = []


def add(name, text):
    records.append((name, text))


def error_text(e):
    return f"!{type(e).__name__}: {e}"


# ---- conv_general_dilated ----------------------------------------------------------------

def conv_case(name, lhs, rhs, strides, padding, lhs_dil=None, rhs_dil=None, dn=None, fgc=1,
              bgc=1, dtype="float32", pref=None, vmap=False):
    n = len(lhs) - 2
    ld = lhs_dil or (1,) * n
    rd = rhs_dil or (1,) * n
    dns = dn or ("",)
    cfg = (f"lhs={ints(lhs)} rhs={ints(rhs)} strides={ints(strides)} padding={pad_str(padding)} "
           f"lhs_dil={ints(ld)} rhs_dil={ints(rd)} dn={','.join(dns)} fgc={fgc} bgc={bgc} "
           f"dtype={dtype}" + (f" pref={pref}" if pref else ""))
    add(f"conv/{name}", cfg)
    if dtype == "float64":
        with jax.enable_x64(True):
            return conv_values(name, lhs, rhs, strides, padding, lhs_dil, rhs_dil, dn, fgc, bgc,
                               dtype, pref, vmap)
    return conv_values(name, lhs, rhs, strides, padding, lhs_dil, rhs_dil, dn, fgc, bgc, dtype,
                       pref, vmap)


def conv_values(name, lhs, rhs, strides, padding, lhs_dil, rhs_dil, dn, fgc, bgc, dtype, pref,
                vmap):
    # "mixed": a float32 lhs with an int32 rhs (a dtype error).
    dt = jnp.dtype("float32" if dtype == "mixed" else dtype)
    dt_r = jnp.dtype("int32") if dtype == "mixed" else dt

    def f(x, w):
        return lax.conv_general_dilated(x, w, strides, padding, lhs_dilation=lhs_dil,
                                        rhs_dilation=rhs_dil, dimension_numbers=dn,
                                        feature_group_count=fgc, batch_group_count=bgc,
                                        preferred_element_type=pref)

    x, w = gen(lhs, 1, dt), gen(rhs, 2, dt_r)
    try:
        out = f(x, w)
    except Exception as e:  # noqa: BLE001
        add(f"conv/{name}#out", error_text(e))
        return
    add(f"conv/{name}#out", fmt(out))
    if jnp.issubdtype(dt, jnp.floating) and pref is None:
        _, vjp = jax.vjp(f, x, w)
        dx, dw = vjp(gen(out.shape, 3, out.dtype))
        add(f"conv/{name}#dlhs", fmt(dx))
        add(f"conv/{name}#drhs", fmt(dw))
    if vmap:
        xb, wb = gen((2,) + tuple(lhs), 1, dt), gen((2,) + tuple(rhs), 2, dt)
        add(f"conv/{name}#vmap_l", fmt(jax.vmap(f, (0, None))(xb, w)))
        add(f"conv/{name}#vmap_r", fmt(jax.vmap(f, (None, 0))(x, wb)))
        add(f"conv/{name}#vmap_lr", fmt(jax.vmap(f, (0, 0))(xb, wb)))


NCHW = ("NCHW", "OIHW", "NCHW")
NHWC = ("NHWC", "HWIO", "NHWC")

# 2-D, default layout, every padding mode, strides and dilations.
conv_case("basic", (2, 3, 6, 5), (4, 3, 3, 3), (1, 1), "VALID", vmap=True)
conv_case("same", (2, 3, 6, 5), (4, 3, 3, 3), (1, 1), "SAME", vmap=True)
conv_case("same_lower_stride", (1, 2, 7, 6), (3, 2, 2, 3), (2, 2), "SAME_LOWER")
conv_case("same_stride", (2, 2, 7, 6), (3, 2, 3, 2), (2, 3), "SAME")
conv_case("explicit", (1, 2, 5, 6), (2, 2, 3, 3), (1, 2), ((1, 2), (0, 1)))
conv_case("negative_pad", (1, 2, 7, 6), (2, 2, 2, 2), (1, 1), ((-1, 0), (1, -2)))
conv_case("rhs_dilation", (2, 2, 8, 7), (3, 2, 3, 2), (1, 1), "VALID", rhs_dil=(2, 3))
conv_case("rhs_dilation_same", (1, 2, 8, 7), (2, 2, 3, 3), (2, 1), "SAME", rhs_dil=(2, 2))
conv_case("lhs_dilation", (1, 2, 4, 5), (3, 2, 3, 2), (1, 1), ((2, 2), (1, 1)), lhs_dil=(2, 3))
conv_case("both_dilations", (2, 2, 5, 4), (2, 2, 2, 3), (2, 1), ((1, 0), (2, 1)),
          lhs_dil=(2, 1), rhs_dil=(1, 2), vmap=True)
conv_case("stride_gt_kernel", (1, 1, 9, 9), (2, 1, 2, 2), (3, 4), "VALID")
conv_case("kernel_1x1", (2, 4, 5, 5), (6, 4, 1, 1), (1, 1), "VALID")
conv_case("kernel_1x1_stride", (2, 4, 5, 5), (3, 4, 1, 1), (2, 2), "VALID")
conv_case("empty_output", (1, 1, 2, 2), (1, 1, 3, 3), (1, 1), "VALID")
conv_case("full_image_kernel", (2, 3, 4, 4), (2, 3, 4, 4), (1, 1), "VALID")
# Layouts.
conv_case("nchw_strings", (2, 3, 6, 5), (4, 3, 3, 2), (1, 2), "SAME", dn=NCHW)
conv_case("nhwc_hwio", (2, 6, 5, 3), (3, 2, 3, 4), (1, 1), "SAME", dn=NHWC, vmap=True)
conv_case("nhwc_stride", (2, 7, 6, 3), (3, 3, 3, 2), (2, 2), "VALID", dn=NHWC)
conv_case("chwn_ihwo", (3, 5, 6, 2), (3, 2, 2, 4), (1, 1), "VALID", dn=("CHWN", "IHWO", "NHWC"))
conv_case("swapped_spatial", (2, 3, 6, 5), (4, 3, 2, 3), (1, 2), "SAME",
          dn=("NCWH", "OIHW", "NHCW"))
# Groups.
conv_case("feature_groups", (2, 4, 5, 5), (6, 2, 3, 3), (1, 1), "SAME", fgc=2, vmap=True)
conv_case("depthwise", (2, 3, 5, 4), (3, 1, 3, 2), (1, 1), "VALID", fgc=3)
conv_case("depthwise_multiplier", (1, 2, 5, 5), (6, 1, 2, 2), (2, 1), "SAME", fgc=2)
conv_case("feature_groups_nhwc", (2, 5, 4, 6), (3, 2, 2, 6), (1, 1), "SAME", dn=NHWC, fgc=3)
conv_case("batch_groups", (4, 2, 5, 5), (6, 2, 3, 3), (1, 1), "VALID", bgc=2, vmap=True)
conv_case("batch_groups_3", (6, 1, 4, 4), (3, 1, 2, 2), (1, 1), "SAME", bgc=3)
# 1-D and 3-D.
conv_case("conv1d", (2, 3, 9), (4, 3, 3), (1,), "SAME", vmap=True)
conv_case("conv1d_stride_dil", (1, 2, 11), (2, 2, 3), (2,), ((1, 2),), rhs_dil=(2,))
conv_case("conv1d_nwc", (2, 8, 3), (3, 3, 2), (1,), "VALID", dn=("NWC", "WIO", "NWC"))
conv_case("conv3d", (1, 2, 4, 5, 3), (2, 2, 2, 3, 2), (1, 1, 1), "SAME")
conv_case("conv3d_stride", (2, 1, 5, 4, 4), (2, 1, 3, 2, 2), (2, 1, 2), "VALID", vmap=True)
conv_case("conv3d_ndhwc", (1, 4, 3, 5, 2), (2, 2, 3, 2, 3), (1, 1, 1), "SAME",
          dn=("NDHWC", "DHWIO", "NDHWC"))
conv_case("conv0d", (3, 4), (5, 4), (), ())
# Dtypes.
conv_case("float64", (1, 2, 5, 4), (2, 2, 2, 2), (1, 1), "SAME", dtype="float64")
conv_case("float16", (1, 2, 5, 4), (2, 2, 2, 2), (1, 1), "SAME", dtype="float16")
conv_case("bfloat16", (1, 2, 5, 4), (2, 2, 2, 2), (1, 1), "VALID", dtype="bfloat16")
conv_case("int32", (1, 2, 5, 4), (2, 2, 2, 2), (1, 1), "SAME", dtype="int32")
conv_case("int8_to_int32", (1, 2, 5, 4), (2, 2, 3, 2), (1, 1), "VALID", dtype="int8",
          pref="int32")
conv_case("float16_to_float32", (1, 2, 5, 4), (2, 2, 3, 2), (1, 1), "SAME", dtype="float16",
          pref="float32")

# Errors (JAX's shape rule and argument checks).
conv_case("err_rank", (1, 2, 5), (2, 2, 3, 3), (1, 1), "VALID")
conv_case("err_fgc_divide", (1, 3, 5, 5), (2, 1, 3, 3), (1, 1), "VALID", fgc=2)
conv_case("err_fgc_in_features", (1, 4, 5, 5), (2, 3, 3, 3), (1, 1), "VALID", fgc=2)
conv_case("err_fgc_out_features", (1, 4, 5, 5), (3, 2, 3, 3), (1, 1), "VALID", fgc=2)
conv_case("err_bgc_divide", (3, 2, 5, 5), (2, 2, 3, 3), (1, 1), "VALID", bgc=2)
conv_case("err_bgc_out_features", (4, 2, 5, 5), (3, 2, 3, 3), (1, 1), "VALID", bgc=2)
conv_case("err_both_groups", (4, 4, 5, 5), (4, 2, 3, 3), (1, 1), "VALID", fgc=2, bgc=2)
conv_case("err_in_features", (1, 3, 5, 5), (2, 2, 3, 3), (1, 1), "VALID")
conv_case("err_strides", (1, 2, 5, 5), (2, 2, 3, 3), (1,), ((0, 0), (0, 0)))
conv_case("err_negative_pad", (1, 2, 5, 5), (2, 2, 3, 3), (1, 1), ((-6, 0), (0, 0)))
conv_case("err_string_pad_lhs_dil", (1, 2, 5, 5), (2, 2, 3, 3), (1, 1), "SAME", lhs_dil=(2, 1))
conv_case("err_dn_chars", (1, 2, 5, 5), (2, 2, 3, 3), (1, 1), "VALID",
          dn=("NCHW", "OIHX", "NCHW"))
conv_case("err_dn_missing", (1, 2, 5, 5), (2, 2, 3, 3), (1, 1), "VALID",
          dn=("NCHW", "OKHW", "NCHW"))
conv_case("err_dn_len", (1, 2, 5, 5), (2, 2, 3, 3), (1, 1), "VALID", dn=("NCH", "OIH", "NCH"))
conv_case("err_dtype", (1, 2, 5, 5), (2, 2, 3, 3), (1, 1), "VALID", dtype="mixed")
conv_case("err_pref", (1, 2, 5, 5), (2, 2, 3, 3), (1, 1), "VALID", pref="int32")


# ---- conv_transpose ----------------------------------------------------------------------

def ct_case(name, lhs, rhs, strides, padding, rhs_dil=None, dn=None, tk=False):
    add(f"ct/{name}", f"lhs={ints(lhs)} rhs={ints(rhs)} strides={ints(strides)} "
        f"padding={pad_str(padding)} rhs_dil={ints(rhs_dil or ())} dn={','.join(dn or ())} "
        f"tk={int(tk)}")
    x, w = gen(lhs, 1), gen(rhs, 2)
    add(f"ct/{name}#out", fmt(lax.conv_transpose(x, w, strides, padding, rhs_dilation=rhs_dil,
                                                 dimension_numbers=dn, transpose_kernel=tk)))


ct_case("same_s2", (1, 4, 5, 2), (3, 3, 2, 3), (2, 2), "SAME")
ct_case("valid_s2", (1, 4, 5, 2), (3, 3, 2, 3), (2, 2), "VALID")
ct_case("explicit", (2, 3, 4, 2), (2, 3, 2, 3), (2, 1), ((1, 2), (0, 1)))
ct_case("transpose_kernel", (1, 4, 5, 2), (3, 3, 3, 2), (2, 1), "SAME", tk=True)
ct_case("rhs_dilation", (1, 5, 4, 2), (2, 2, 2, 3), (1, 2), "SAME", rhs_dil=(2, 1))
ct_case("nchw", (1, 2, 4, 5), (3, 2, 3, 3), (2, 2), "SAME", dn=("NCHW", "OIHW", "NCHW"))
ct_case("conv1d", (2, 6, 3), (3, 3, 2), (3,), "VALID")
ct_case("conv3d", (1, 3, 2, 3, 2), (2, 2, 2, 2, 3), (2, 1, 2), "SAME")


# ---- reduce_window and pooling -----------------------------------------------------------

OPS = {"sum": (lax.add, 0.0), "max": (lax.max, -np.inf), "min": (lax.min, np.inf)}


def rw_case(name, shape, window, strides=None, padding="VALID", bdil=None, wdil=None,
            init=None, dtype="float32", grad=True, vmap=False, ties=False):
    n = len(shape)
    op = name.split("_")[0] if name.split("_")[0] in OPS else "max"
    comp, ident = OPS[op]
    init_v = ident if init is None else init
    cfg = (f"op={op} shape={ints(shape)} window={ints(window)} "
           f"strides={ints(strides or (1,) * n)} padding={pad_str(padding)} "
           f"bdil={ints(bdil or (1,) * n)} wdil={ints(wdil or (1,) * n)} init={init_v!r} "
           f"dtype={dtype} ties={int(ties)}")
    add(f"rw/{name}", cfg)
    if dtype == "float64":
        with jax.enable_x64(True):
            return rw_values(name, op, shape, window, strides, padding, bdil, wdil, init, init_v,
                             dtype, grad, vmap, ties)
    return rw_values(name, op, shape, window, strides, padding, bdil, wdil, init, init_v, dtype,
                     grad, vmap, ties)


def rw_values(name, op, shape, window, strides, padding, bdil, wdil, init, init_v, dtype, grad,
              vmap, ties):
    comp = OPS[op][0]
    dt = jnp.dtype(dtype)
    if jnp.issubdtype(dt, jnp.integer) and init is None and op != "sum":
        init_v = (np.iinfo(dt).min if op == "max" else np.iinfo(dt).max)

    def f(x):
        return lax.reduce_window(x, dt.type(init_v), comp, window, strides, padding, bdil, wdil)

    x = gen_ties(shape) if ties else gen(shape, 1, dt)
    try:
        out = f(x)
    except Exception as e:  # noqa: BLE001
        add(f"rw/{name}#out", error_text(e))
        return
    add(f"rw/{name}#out", fmt(out))
    if grad and jnp.issubdtype(dt, jnp.floating):
        _, vjp = jax.vjp(f, x)
        add(f"rw/{name}#grad", fmt(vjp(gen(out.shape, 3, dt))[0]))
    if vmap:
        add(f"rw/{name}#vmap", fmt(jax.vmap(f)(gen((2,) + tuple(shape), 1, dt))))


rw_case("max_pool_2x2", (2, 3, 6, 6), (1, 1, 2, 2), (1, 1, 2, 2), vmap=True)
rw_case("max_pool_3x3_s2_same", (1, 2, 7, 6), (1, 1, 3, 3), (1, 1, 2, 2), "SAME", vmap=True)
rw_case("max_pool_overlap", (2, 5, 5), (1, 3, 3), (1, 1, 1), "VALID")
rw_case("max_pool_explicit_pad", (1, 1, 5, 4), (1, 1, 2, 3), (1, 1, 2, 1), ((0, 0), (0, 0), (1, 1), (2, 0)))
rw_case("max_1d_same_lower", (9,), (4,), (2,), "SAME_LOWER")
rw_case("max_base_dilation", (1, 4, 5), (1, 2, 2), (1, 1, 2), "VALID", bdil=(1, 2, 1))
rw_case("max_window_dilation", (2, 7, 6), (1, 2, 2), (1, 1, 1), "VALID", wdil=(1, 2, 3),
        grad=False)
rw_case("min_pool", (2, 2, 6, 5), (1, 1, 2, 2), (1, 1, 1, 2), "SAME", vmap=True)
rw_case("min_3d", (1, 4, 4, 4), (1, 2, 2, 2), (1, 2, 2, 2), "VALID")
rw_case("sum_pool", (2, 3, 6, 6), (1, 1, 2, 2), (1, 1, 2, 2), vmap=True)
rw_case("sum_same_stride", (1, 2, 7, 5), (1, 1, 3, 2), (1, 1, 2, 3), "SAME")
rw_case("sum_dilations", (1, 5, 6), (1, 2, 3), (1, 2, 1), ((0, 0), (1, 2), (0, 1)),
        bdil=(1, 2, 1), wdil=(1, 1, 2))
rw_case("sum_negative_pad", (3, 8), (1, 3), (1, 2), ((0, 0), (-1, 1)))
rw_case("sum_1d", (10,), (3,), (1,), "VALID")
rw_case("sum_int", (3, 6), (1, 2), (1, 2), "VALID", dtype="int32")
rw_case("max_int", (3, 6), (2, 2), (1, 1), "SAME", dtype="int32")
rw_case("max_nonidentity_init", (2, 6), (1, 3), (1, 2), "SAME", init=0.5, grad=False)
rw_case("sum_nonidentity_init", (2, 6), (1, 3), (1, 1), ((0, 0), (1, 1)), init=1.0,
        grad=False)
rw_case("max_float64", (2, 5, 4), (1, 2, 2), (1, 1, 1), "VALID", dtype="float64")
# Ties: XLA's select picks the first maximum (minimum) of each window in row-major order.
rw_case("max_ties_2x2", (2, 6, 6), (1, 2, 2), (1, 2, 2), "VALID", ties=True)
rw_case("max_ties_overlap", (1, 7, 5), (1, 3, 3), (1, 1, 2), "SAME", ties=True)
rw_case("min_ties_padded", (2, 5, 6), (1, 2, 3), (1, 2, 2), ((0, 0), (1, 1), (1, 0)), ties=True)
rw_case("max_ties_base_dilation", (1, 4, 5), (1, 2, 2), (1, 1, 1), "VALID", bdil=(1, 2, 1),
        ties=True)
rw_case("err_rank", (2, 6), (2,), (1,), "VALID")
rw_case("err_strides", (2, 6), (1, 2), (1, 1, 1), "VALID", grad=False)
rw_case("err_zero_window", (2, 6), (1, 0), (1, 1), "VALID")


def flax_pool(inputs, init, reduce_fn, window_shape, strides, padding):
    # flax.linen.pooling.pool, as written in flax.
    num_batch_dims = inputs.ndim - (len(window_shape) + 1)
    strides = strides or (1,) * len(window_shape)
    strides = (1,) * num_batch_dims + tuple(strides) + (1,)
    dims = (1,) * num_batch_dims + tuple(window_shape) + (1,)
    is_single_input = False
    if num_batch_dims == 0:
        inputs = inputs[None]
        strides = (1,) + strides
        dims = (1,) + dims
        is_single_input = True
    if not isinstance(padding, str):
        padding = tuple(map(tuple, padding))
        padding = ((0, 0),) * (inputs.ndim - len(padding) - 1) + padding + ((0, 0),)
    y = lax.reduce_window(inputs, init, reduce_fn, dims, strides, padding)
    if is_single_input:
        y = jnp.squeeze(y, axis=0)
    return y


def flax_avg_pool(inputs, window_shape, strides=None, padding="VALID", count_include_pad=True):
    y = flax_pool(inputs, 0.0, lax.add, window_shape, strides, padding)
    if count_include_pad:
        y = y / np.prod(window_shape)
    else:
        div_shape = inputs.shape[:-1] + (1,)
        if len(div_shape) - 2 == len(window_shape):
            div_shape = (1,) + div_shape[1:]
        y = y / flax_pool(jnp.ones(div_shape), 0.0, lax.add, window_shape, strides, padding)
    return y


def flax_max_pool(inputs, window_shape, strides=None, padding="VALID"):
    return flax_pool(inputs, -jnp.inf, lax.max, window_shape, strides, padding)


def pool(name, op, shape, window, strides=None, padding="VALID", count_include_pad=True):
    cfg = (f"op={op} shape={ints(shape)} window={ints(window)} "
           f"strides={ints(strides or (1,) * len(window))} padding={pad_str(padding)} "
           f"count_include_pad={int(count_include_pad)}")
    add(f"pool/{name}", cfg)
    if op == "max_pool":
        f = lambda x: flax_max_pool(x, window, strides, padding)  # noqa: E731
    else:
        f = lambda x: flax_avg_pool(x, window, strides, padding, count_include_pad)  # noqa: E731
    x = gen(shape, 1)
    out, vjp = jax.vjp(f, x)
    add(f"pool/{name}#out", fmt(out))
    add(f"pool/{name}#grad", fmt(vjp(gen(out.shape, 3))[0]))


pool("max_nhwc", "max_pool", (2, 6, 6, 3), (2, 2), (2, 2))
pool("max_single", "max_pool", (5, 5, 2), (3, 3), (1, 1), "SAME")
pool("avg_nhwc", "avg_pool", (2, 6, 5, 3), (2, 2), (2, 1))
pool("avg_same_exclude_pad", "avg_pool", (1, 5, 5, 2), (3, 3), (2, 2), "SAME", False)
pool("avg_same_include_pad", "avg_pool", (1, 5, 5, 2), (3, 3), (2, 2), "SAME", True)
pool("avg_1d", "avg_pool", (2, 7, 2), (3,), (2,), ((1, 1),))


# ---- numpy convolve / correlate ----------------------------------------------------------

def np_case(name, op, a, v, mode, dtype="float32"):
    add(f"np/{name}", f"op={op} a={a} v={v} mode={mode} dtype={dtype}")
    x, y = gen((a,), 1, jnp.dtype(dtype)), gen((v,), 2, jnp.dtype(dtype))
    fn = jnp.convolve if op == "convolve" else jnp.correlate
    try:
        out = fn(x, y, mode=mode)
    except Exception as e:  # noqa: BLE001
        add(f"np/{name}#out", error_text(e))
        return
    add(f"np/{name}#out", fmt(out))
    if jnp.issubdtype(jnp.dtype(dtype), jnp.floating):
        _, vjp = jax.vjp(lambda p, q: fn(p, q, mode=mode), x, y)
        da, dv = vjp(gen(out.shape, 3))
        add(f"np/{name}#da", fmt(da))
        add(f"np/{name}#dv", fmt(dv))


for op in ("convolve", "correlate"):
    for mode in ("full", "same", "valid"):
        np_case(f"{op}_{mode}", op, 7, 3, mode)
        np_case(f"{op}_{mode}_short_first", op, 3, 6, mode)
    np_case(f"{op}_int", op, 6, 4, "full", "int32")
    np_case(f"{op}_bad_mode", op, 6, 4, "wide")


def main():
    with open(OUT, "w") as f:
        for name, text in records:
            f.write(name + "\t" + text.encode("unicode_escape").decode("ascii") + "\n")
    print(f"wrote {len(records)} records to {OUT}")


if __name__ == "__main__":
    main()
