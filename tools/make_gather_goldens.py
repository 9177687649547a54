"""Writes tests/golden/gather_cases.txt: what JAX 0.10.2 gives for lax.gather and the lax
scatters (tests/lax/gather_test.cpp runs every case with parax and compares).

Run:  python3 tools/make_gather_goldens.py

The cases are JAX's own (tests/lax_test.py testGather*, testScatter*, the shape-checking
rules' errors; tests/lax_autodiff_test.py's gradients) plus the modes, fill values,
repeated indices and dtypes. Each case is written out whole, so the C++ test needs no copy
of this list. Format: tests/support/golden.h's `name<TAB>text` records:
  <name>        the spec: `;`-separated key=value (op, operand, indices, updates,
                dnums, slice, mode, fill, sorted, unique, grad)
  <name>#out    `dtype|weak|shape|v0,v1,...`, or `!ErrorKind: message` when JAX raises
  <name>#g0 / <name>#g2   gradients of sum(result * cotangent) w.r.t. operand / updates
  shard/<name>  sharded under jit on a (2, 4) mesh ("data", "model"), axes Auto:
                `out_spec|all-reduces|all-gathers` of the result's PartitionSpec (one
                entry per dimension, `-` for None, `+` joining axes) and the collectives
                of the compiled program
Operand, updates and cotangent values come from the formulas in value_of below, mirrored
by the C++ test.
"""
import os
import re

# Eight host devices for the sharding cases (values do not depend on it).
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden",
                   "gather_cases.txt")

GD = lax.GatherDimensionNumbers
SD = lax.ScatterDimensionNumbers
MODES = {"clip": lax.GatherScatterMode.CLIP, "fill": lax.GatherScatterMode.FILL_OR_DROP,
         "promise": lax.GatherScatterMode.PROMISE_IN_BOUNDS, "none": None}
ALL = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
       "float16", "bfloat16", "float32", "float64"]
NUMERIC = ALL[1:]
FLOATS = ["float16", "bfloat16", "float32", "float64"]


def value_of(role, k, dtype):
    """Element k (row-major) of an operand ("x"), updates ("u") or cotangent ("c")."""
    if role == "x":
        v = (k * 7 + 3) % 17
    elif role == "u":
        v = (k * 5 + 1) % 13
    else:
        v = (k * 3 + 2) % 7
    if dtype == "bool":
        return v % 3 == 0
    if dtype.startswith("uint"):
        return v
    centre = {"x": 8, "u": 6, "c": 3}[role]
    if dtype.startswith("int"):
        return v - centre
    return (v - centre) * 0.5 + 0.25


def make(role, shape, dtype):
    n = int(np.prod(shape, dtype=np.int64))
    vals = [value_of(role, k, dtype) for k in range(n)]
    return jnp.asarray(np.array(vals, dtype=np.float64 if dtype not in ("bool",) and
                                not dtype.startswith(("int", "uint")) else
                                (np.bool_ if dtype == "bool" else np.int64))
                       .reshape(shape)).astype(dtype)


def ints(xs):
    return ",".join(str(int(x)) for x in xs)


def values_record(x):
    x = np.asarray(x)
    flat = x.reshape(-1)
    if x.dtype == np.bool_:
        vals = ["1" if e else "0" for e in flat]
    elif np.issubdtype(x.dtype, np.integer):
        vals = [str(int(e)) for e in flat]
    else:
        vals = [repr(float(e)) for e in flat]
    return ",".join(vals)


def array_record(x):
    weak = "w" if x.aval.weak_type else "s"
    return f"{x.dtype}|{weak}|{ints(x.shape)}|{values_record(x)}"


CASES = []  # (name, spec dict)


def gather_case(name, shape, dtype, idx, dnums, slice_sizes, mode="none", fill=None,
                idx_dtype="int32", grad=False, sorted_=False, unique=False):
    CASES.append((name, dict(op="gather", operand=(dtype, shape),
                             indices=(idx_dtype, np.asarray(idx)), dnums=tuple(dnums),
                             slice=tuple(slice_sizes), mode=mode, fill=fill, grad=grad,
                             sorted=sorted_, unique=unique)))


def scatter_case(name, op, shape, dtype, idx, update_shape, dnums, mode="none",
                 idx_dtype="int32", grad=False, unique=False, sorted_=False):
    CASES.append((name, dict(op=op, operand=(dtype, shape), indices=(idx_dtype, np.asarray(idx)),
                             updates=(dtype, update_shape), dnums=tuple(dnums), mode=mode,
                             grad=grad, unique=unique, sorted=sorted_)))


def run(spec):
    dtype, shape = spec["operand"]
    x = make("x", shape, dtype)
    idx_dtype, idx_vals = spec["indices"]
    idx = jnp.asarray(idx_vals.astype(np.int64)).astype(idx_dtype)
    mode = MODES[spec["mode"]]
    if spec["op"] == "gather":
        def f(x):
            return lax.gather(x, idx, GD(*spec["dnums"]), spec["slice"], mode=mode,
                              fill_value=spec["fill"], indices_are_sorted=spec["sorted"],
                              unique_indices=spec["unique"])
        args = (x,)
    else:
        udtype, ushape = spec["updates"]
        u = make("u", ushape, udtype)
        fn = getattr(lax, spec["op"])

        def f(x, u):
            return fn(x, idx, u, SD(*spec["dnums"]), mode=mode,
                      indices_are_sorted=spec["sorted"], unique_indices=spec["unique"])
        args = (x, u)
    return f, args


def spec_text(spec):
    dtype, shape = spec["operand"]
    idx_dtype, idx_vals = spec["indices"]
    parts = [f"op={spec['op']}", f"operand={dtype}:{ints(shape)}",
             f"indices={idx_dtype}:{ints(idx_vals.shape)}:{ints(idx_vals.reshape(-1))}"]
    if "updates" in spec:
        udtype, ushape = spec["updates"]
        parts.append(f"updates={udtype}:{ints(ushape)}")
    parts.append("dnums=" + "/".join(ints(d) for d in spec["dnums"]))
    if "slice" in spec:
        parts.append(f"slice={ints(spec['slice'])}")
    parts.append(f"mode={spec['mode']}")
    if spec.get("fill") is not None:
        parts.append(f"fill={spec['fill']!r}")
    parts.append(f"sorted={int(spec['sorted'])}")
    parts.append(f"unique={int(spec['unique'])}")
    parts.append(f"grad={int(spec['grad'])}")
    return ";".join(parts)


def record(out, name, spec):
    out.append((name, spec_text(spec)))
    try:
        f, args = run(spec)
        res = f(*args)
        out.append((name + "#out", array_record(res)))
    except Exception as e:  # noqa: BLE001 - the error is the expected result
        msg = str(e).split("\n")[0]
        out.append((name + "#out", f"!{type(e).__name__}: {msg}"))
        return
    if spec["grad"]:
        cot = make("c", res.shape, str(res.dtype))

        def loss(*a):
            return jnp.sum(f(*a) * cot)
        argnums = tuple(range(len(args)))
        grads = jax.grad(loss, argnums=argnums)(*args)
        out.append((name + "#g0", array_record(grads[0])))
        if len(grads) > 1:
            out.append((name + "#g2", array_record(grads[1])))


# lax_test.py testGather's configurations, over every dtype.
GATHER_CONFIGS = [
    ("g1", (5,), [[0], [2]], ((), (0,), (0,)), (1,)),
    ("g2", (10,), [[0], [0], [0]], ((1,), (), (0,)), (2,)),
    ("g3", (10, 5), [[0], [2], [1]], ((1,), (0,), (0,)), (1, 3)),
    ("g4", (10, 5), [[0, 2], [1, 0]], ((1,), (0,), (0, 1)), (1, 3)),
    ("g5", (2, 5), [[[0], [2]], [[1], [1]]], ((), (1,), (1,), (0,), (0,)), (1, 1)),
    ("g6", (2, 3, 10), [[[0], [1]], [[2], [3]], [[4], [5]]],
     ((2,), (), (2,), (0, 1), (1, 0)), (1, 1, 3)),
    ("g7", (0,), np.zeros((0, 1), np.int32), ((), (0,), (0,)), (1,)),
    # Rows of a table (the embedding lookup) and columns of one.
    ("rows", (6, 4), [[5], [0], [3], [3]], ((1,), (0,), (0,)), (1, 4)),
    ("cols", (3, 6), [[4], [1]], ((0,), (1,), (1,)), (3, 1)),
    ("window2d", (5, 6), [[1, 2], [3, 0], [0, 4]], ((1, 2), (), (0, 1)), (2, 3)),
    ("offsets_first", (4, 5), [[1], [3]], ((0,), (0,), (0,)), (1, 5)),
    ("batch_idx2d", (7, 3), [[[6], [1]], [[2], [2]], [[0], [5]]], ((2,), (0,), (0,)), (1, 3)),
    ("scalar_window", (4, 3), np.zeros((0, 2), np.int32), ((), (0, 1), (0, 1)), (1, 1)),
]
for cname, shape, idx, dn, ss in GATHER_CONFIGS:
    for dt in ALL:
        gather_case(f"gather/{cname}/{dt}", shape, dt, idx, dn, ss)

# Modes: out-of-bounds and negative starts.
OOB = [[-3], [0], [4], [9], [2], [-1]]
for mode in ["clip", "fill", "promise", "none"]:
    for dt in ALL:
        gather_case(f"gather/mode_{mode}/{dt}", (6, 3), dt, OOB, ((1,), (0,), (0,)), (1, 3),
                    mode=mode)
    gather_case(f"gather/mode_{mode}_window", (8,), "float32", [[-2], [0], [5], [6], [7], [3]],
                ((1,), (), (0,)), (3,), mode=mode)
    gather_case(f"gather/mode_{mode}_2d", (5, 4), "int32", [[4, 3], [5, 0], [-1, 2], [1, 1]],
                ((1,), (0,), (0, 1)), (1, 2), mode=mode)
    gather_case(f"gather/mode_{mode}_batching", (2, 5), "float32",
                [[[7], [2]], [[-1], [4]]], ((), (1,), (1,), (0,), (0,)), (1, 1), mode=mode)
for fill in [0.0, -1.0, 2.5, 7.0]:
    for dt in ["int8", "uint8", "int32", "float16", "float32", "bool"]:
        gather_case(f"gather/fill_{fill}/{dt}", (6, 3), dt, OOB, ((1,), (0,), (0,)), (1, 3),
                    mode="fill", fill=fill)
for idt in ["int8", "int16", "int64", "uint8", "uint16", "uint32", "uint64"]:
    gather_case(f"gather/index_{idt}", (6, 3), "float32", [[5], [0], [3], [2]],
                ((1,), (0,), (0,)), (1, 3), idx_dtype=idt)
    gather_case(f"gather/index_{idt}_fill", (6, 3), "float32", [[5], [0], [7], [2]],
                ((1,), (0,), (0,)), (1, 3), idx_dtype=idt, mode="fill")
gather_case("gather/flags", (6, 3), "float32", [[0], [2], [5]], ((1,), (0,), (0,)), (1, 3),
            sorted_=True, unique=True)

# lax_autodiff_test.py testGatherGrad's configurations, with out-of-bounds starts outside
# PROMISE_IN_BOUNDS (fill_value -1, as JAX's test).
rng = np.random.RandomState(0)
GRAD_GATHERS = [
    ((5,), (2, 1), ((), (0,), (0,)), (1,), 5),
    ((10,), (3, 1), ((1,), (), (0,)), (2,), 9),
    ((10, 5), (3, 1), ((1,), (0,), (0,)), (1, 3), 3),
    ((2, 5), (2, 2, 1), ((), (1,), (1,), (0,), (0,)), (1, 1), 5),
    ((2, 3, 10), (3, 2, 1), ((2,), (), (2,), (0, 1), (1, 0)), (1, 1, 3), 8),
]
for k, (shape, ishape, dn, ss, max_idx) in enumerate(GRAD_GATHERS):
    for mode in ["clip", "fill", "promise"]:
        for it in range(2):
            if mode == "promise":
                idx = rng.randint(0, max_idx, ishape)
            else:
                idx = rng.randint(-max_idx, 2 * max_idx, ishape)
            for dt in ["float32", "float64"]:
                gather_case(f"gather_grad/{k}/{mode}/{it}/{dt}", shape, dt, idx, dn, ss,
                            mode=mode, fill=-1.0, grad=True)

# lax_test.py's scatter configurations.
SCATTER_CONFIGS = [
    ("s1", (5,), [[0], [2]], (2,), ((), (0,), (0,))),
    ("s2", (10,), [[0], [0], [0]], (3, 2), ((1,), (), (0,))),
    ("s3", (10, 5), [[0], [2], [1]], (3, 3), ((1,), (0,), (0,))),
    ("s4", (2, 5), [[[0], [2]], [[1], [1]]], (2, 2), ((), (1,), (1,), (0,), (0,))),
    ("s5", (2, 3, 10), [[[0], [1]], [[2], [3]], [[4], [5]]], (3, 2, 3),
     ((2,), (), (2,), (0, 1), (1, 0))),
    ("rows", (6, 4), [[5], [0], [3], [3], [0]], (5, 4), ((1,), (0,), (0,))),
    ("window2d", (5, 6), [[1, 2], [3, 0], [1, 2]], (3, 2, 3), ((1, 2), (), (0, 1))),
    ("empty", (4, 3), np.zeros((0, 1), np.int32), (0, 3), ((1,), (0,), (0,))),
    ("batch_idx2d", (7, 3), [[[6], [1]], [[2], [2]], [[0], [5]]], (3, 2, 3),
     ((2,), (0,), (0,))),
]
SCATTER_OPS = ["scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max"]
for op in SCATTER_OPS:
    for cname, shape, idx, ushape, dn in SCATTER_CONFIGS:
        for dt in ALL:
            scatter_case(f"{op}/{cname}/{dt}", op, shape, dt, idx, ushape, dn)
    SOOB = [[-3], [0], [4], [9], [2], [-1], [5]]
    for mode in ["clip", "fill", "promise", "none"]:
        for dt in ["int32", "float32", "uint8", "bool"]:
            scatter_case(f"{op}/mode_{mode}/{dt}", op, (6, 3), dt, SOOB, (7, 3),
                         ((1,), (0,), (0,)), mode=mode)
        scatter_case(f"{op}/mode_{mode}_window", op, (8,), "float32",
                     [[-2], [0], [5], [6], [7], [3]], (6, 3), ((1,), (), (0,)), mode=mode)
        scatter_case(f"{op}/mode_{mode}_2d", op, (5, 4), "int32",
                     [[4, 3], [5, 0], [-1, 2], [1, 1]], (4, 2), ((1,), (0,), (0, 1)),
                     mode=mode)
    for idt in ["int8", "uint8", "int64", "uint64"]:
        scatter_case(f"{op}/index_{idt}", op, (6, 3), "float32", [[5], [0], [3], [0]], (4, 3),
                     ((1,), (0,), (0,)), idx_dtype=idt)

# Gradients: lax_autodiff_test.py's testScatterAddGrad, testScatterGrad, testScatterMax/Min,
# plus scatter_mul with unique indices and each combiner over the batching configurations.
GRAD_SCATTERS = [
    ((5,), (2, 1), (2,), ((), (0,), (0,)), 4),
    ((10,), (3, 1), (3, 2), ((1,), (), (0,)), 9),
    ((10, 5), (3, 1), (3, 3), ((1,), (0,), (0,)), 3),
    ((2, 5), (2, 2, 1), (2, 2), ((), (1,), (1,), (0,), (0,)), 5),
    ((2, 3, 10), (3, 2, 1), (3, 2, 3), ((2,), (), (2,), (0, 1), (1, 0)), 8),
]
UNIQUE = [[[3], [0]], [[6], [0], [2]], [[2], [0], [1]], [[[4], [1]], [[0], [3]]],
          [[[7], [0]], [[2], [5]], [[4], [1]]]]
for k, (shape, ishape, ushape, dn, max_idx) in enumerate(GRAD_SCATTERS):
    for mode in ["clip", "fill", "promise"]:
        for it in range(2):
            if mode == "promise":
                idx = rng.randint(0, max_idx, ishape)
            else:
                idx = rng.randint(-max_idx, 2 * max_idx, ishape)
            scatter_case(f"scatter_add_grad/{k}/{mode}/{it}", "scatter_add", shape, "float32",
                         idx, ushape, dn, mode=mode, grad=True)
    for it in range(3):
        # Repeats are likely: min/max average the tied winners' tangents; scatter takes the
        # last write.
        idx = rng.randint(0, max_idx, ishape)
        for op in ["scatter_min", "scatter_max", "scatter"]:
            scatter_case(f"{op}_grad/{k}/{it}", op, shape, "float32", idx, ushape, dn,
                         grad=True)
    # Windows that do not overlap (JAX's test multiplies starts to keep them apart).
    uniq = UNIQUE[k]
    for op in ["scatter_mul", "scatter"]:
        scatter_case(f"{op}_grad_unique/{k}", op, shape, "float32", uniq, ushape, dn,
                     unique=True, grad=True)

# Ties for the extremal scatters' averaged gradients.
scatter_case("scatter_max_grad/ties", "scatter_max", (4,), "float32", [[1], [1], [2], [1]], (4,),
             ((), (0,), (0,)), grad=True)
scatter_case("scatter_min_grad/ties", "scatter_min", (4,), "float32", [[3], [3], [0], [0]], (4,),
             ((), (0,), (0,)), grad=True)

# Errors: lax_test.py testGatherShapeCheckingRule / testScatterShapeCheckingRule, and the
# dtype rules.
GATHER_ERRORS = [
    ("NonAscendingWindowIndices", (10, 9, 8, 7, 6), (5, 4, 3, 2, 1),
     ((4, 5, 6, 8, 7), (), (0, 1, 2, 3, 4)), (10, 9, 8, 7, 6)),
    ("RepeatedWindowIndices", (10, 9, 8, 7, 6), (5, 4, 3, 2, 1),
     ((4, 5, 6, 7, 7), (), (0, 1, 2, 3, 4)), (10, 9, 8, 7, 6)),
    ("WindowIndexOutOfBounds", (10, 9, 8, 7, 6), (5, 4, 3, 2, 1),
     ((4, 5, 100, 101, 102), (), (0, 1, 2, 3, 4)), (10, 9, 8, 7, 6)),
    ("WindowIndexBarelyOutOfBounds", (10, 9, 8, 7, 6), (5, 4, 3, 2, 1),
     ((4, 5, 6, 7, 9), (), (0, 1, 2, 3, 4)), (10, 9, 8, 7, 6)),
    ("MismatchingElidedWindowDims", (10, 9, 8, 7, 6), (5, 4, 3, 2, 5),
     ((4, 5, 6, 7, 8), (4,), (0, 1, 2, 3, 4)), (10, 9, 8, 7, 6)),
    ("MismatchingElidedWindowDimsV2", (10, 9, 8, 7, 6, 5), (10, 4, 3, 2, 4),
     ((4, 5, 6, 7, 8), (4,), (1, 2, 3, 4), (0,), (0,)), (10, 9, 8, 7, 6, 5)),
    ("OutOfBoundsWindowToInputMapping", (10, 9, 8, 7, 6), (5, 4, 3, 2, 5),
     ((4, 5, 6, 7, 8), (0, 1, 2, 3, 19), (0, 1, 2, 3, 4)), (10, 9, 8, 7, 6)),
    ("RepeatedWindowToInputMapping", (10, 9, 8, 7, 6), (5, 4, 3, 2, 5),
     ((4, 5, 6, 7, 8), (0, 1, 2, 3, 3), (0, 1, 2, 3, 4)), (10, 9, 8, 7, 6)),
    ("MismatchingGatherToInputMapping", (10, 9, 8, 7, 6), (5, 4, 3, 2, 5),
     ((4, 5, 6, 7, 8), (), (0, 1, 2, 3)), (10, 9, 8, 7, 6)),
    ("OutOfBoundsGatherToInputMapping", (10, 9, 8, 7, 6), (5, 4, 3, 2, 5),
     ((4, 5, 6, 7, 8), (), (0, 1, 2, 3, 7)), (10, 9, 8, 7, 6)),
    ("RepeatedGatherToInputMapping", (10, 9, 8, 7, 6), (5, 4, 3, 2, 5),
     ((4, 5, 6, 7, 8), (), (0, 1, 2, 3, 3)), (10, 9, 8, 7, 6)),
    ("NonAscendingElidedWindowDims", (10, 9, 8, 7, 6), (5, 4, 3, 2, 5),
     ((4, 5, 6, 7, 8), (2, 1), (0, 1, 2, 3, 4)), (10, 9, 8, 7, 6)),
    ("WindowBoundsTooLarge", (10, 9, 8, 7, 6), (5, 4, 3, 2, 5),
     ((4, 5, 6, 7), (2,), (0, 1, 2, 3, 4)), (10, 9, 8, 100, 6)),
    ("MismatchingNumberOfWindowBounds", (10, 9, 8, 7, 6), (5, 4, 3, 2, 5),
     ((4, 5, 6, 7), (), (0, 1, 2, 3, 4)), (10, 9, 8, 7)),
    ("WindowBoundsNot1ForElidedDim", (10, 9, 8, 7, 6), (5, 4, 3, 2, 5),
     ((4, 5, 6, 7), (1,), (0, 1, 2, 3, 4)), (10, 9, 8, 7, 6)),
    ("RepeatedOperandBatchingDims", (10, 9, 8, 7, 6), (5, 4, 3, 2, 3),
     ((4, 5, 6), (0, 1), (0, 1, 4), (2, 3, 3)), (10, 9, 8, 7, 6)),
    ("NonAscendingOperandBatchingDims", (10, 9, 8, 7, 6), (5, 4, 3, 2, 3),
     ((4, 5, 6), (0, 1), (0, 1, 4), (3, 2)), (10, 9, 8, 7, 6)),
    ("OutOfBoundsOperandBatchingDims", (10, 9, 8, 7, 6), (5, 4, 3, 2, 5),
     ((4, 5, 6), (0, 1), (0, 1, 2, 3, 4), (0, 10)), (10, 9, 8, 7, 6)),
    ("NonDisjointCollapsedAndBatchingDims", (10, 9, 8, 7, 6), (5, 4, 3, 2, 3),
     ((4, 5, 6), (0, 1, 2), (0, 1, 4), (2, 3)), (10, 9, 8, 7, 6)),
    ("NonDisjointStartIndexMapAndBatchingDims", (10, 9, 8, 7, 6), (5, 4, 3, 2, 4),
     ((4, 5, 6), (0, 1), (0, 1, 2, 4), (2, 3)), (10, 9, 8, 7, 6)),
    ("WindowBoundsNot1ForBatchingDim", (10, 9, 8, 7, 6), (9, 4, 3, 2, 4),
     ((4, 5, 6, 7), (), (0, 2, 3, 4), (1,), (0,)), (10, 9, 8, 7, 6)),
    ("RepeatedStartIndicesBatchingDims", (10, 9, 8, 7, 6), (5, 4, 3, 2, 5),
     ((4, 5, 6), (0, 1), (0, 1, 2, 3, 4), (), (0, 1, 0)), (10, 9, 8, 7, 6)),
    ("OutOfBoundsStartIndicesBatchingDims", (10, 9, 8, 7, 6), (5, 4, 3, 2, 5),
     ((4, 5, 6), (0, 1), (0, 1, 2, 3, 4), (), (0, 5)), (10, 9, 8, 7, 6)),
    ("IndexVectorDimInStartIndicesBatchingDims", (10, 9, 8, 7, 6), (5, 4, 3, 2, 5),
     ((4, 5, 6), (0, 1), (0, 1, 2, 3, 4), (), (0, 4)), (10, 9, 8, 7, 6)),
    ("MismatchingNumberOfBatchingDims", (10, 9, 8, 7, 6), (5, 4, 3, 2, 4),
     ((4, 5, 6), (1, 2), (1, 2, 3, 4), (0,), (0, 1)), (10, 9, 8, 7, 6)),
    ("MismatchingBatchingDimSizes", (10, 9, 8, 7, 6), (10, 9, 3, 2, 3),
     ((4, 5, 6, 7, 8), (2, 3, 4), (2, 3, 4), (0, 1), (1, 0)), (10, 9, 8, 7, 6)),
    ("ScalarIndices", (4,), (), ((), (0,), (0,)), (1,)),
]
for ename, oshape, ishape, dn, ss in GATHER_ERRORS:
    dn = tuple(dn) + ((),) * (5 - len(dn))
    gather_case(f"gather_error/{ename}", oshape, "int32", np.ones(ishape, np.int32), dn, ss)
gather_case("gather_error/float_indices", (5,), "float32", [[0], [2]], ((), (0,), (0,)), (1,),
            idx_dtype="float32")

SCATTER_ERRORS = [
    ("ScatterWithUpdatesBiggerThanInput", (64, 48), (32, 1), (65, 32), ((0,), (1,), (1,))),
    ("ScatterWithUpdatesBiggerThanInputV2", (64, 48), (32, 1), (32, 49), ((1,), (0,), (1,))),
    ("ScatterWithUpdatesNotMatchingIndices", (64, 48), (32, 1), (64, 31), ((1,), (0,), (1,))),
    ("ScatterWithUpdatesNotMatchingIndicesV2", (64, 48), (32, 1), (31, 48),
     ((1,), (0,), (1,))),
    ("ScatterNdWithUpdatesBiggerThanInput", (64, 48), (10, 9, 8, 7, 1), (10, 9, 8, 7, 65),
     ((4,), (1,), (1,))),
    ("ScatterNdWithUpdatesNotMatchingIndices", (64, 48), (10, 9, 8, 7, 1), (9, 9, 8, 7, 64),
     ((4,), (1,), (0,))),
    ("InvalidUpdates", (50, 49, 48, 47, 46), (10, 9, 8, 7, 5), (10, 9, 8, 7, 3, 2, 4, 1),
     ((4, 5, 6), (1, 2), (0, 1, 2, 3, 4))),
    ("NonAscendingUpdateWindowDims", (6, 5, 4, 3, 2), (5, 4, 3, 2, 1),
     (10, 9, 8, 7, 6, 5, 4, 3, 2), ((4, 5, 6, 8, 7), (), (0, 1, 2, 3, 4))),
    ("RepeatedUpdateWindowDims", (6, 5, 4, 3, 2), (5, 4, 3, 2, 1),
     (10, 9, 8, 7, 6, 5, 4, 3, 2), ((4, 5, 6, 7, 7), (), (0, 1, 2, 3, 4))),
    ("OutOfBoundsUpdateWindowDims", (6, 5, 4, 3, 2), (5, 4, 3, 2, 1),
     (10, 9, 8, 7, 6, 5, 4, 3, 2), ((4, 5, 6, 7, 9), (), (0, 1, 2, 3, 4))),
    ("NonAscendingInsertedWindowDims", (50, 49, 48, 47, 46), (10, 9, 8, 7, 5),
     (10, 9, 8, 7, 3, 2, 4), ((4, 5, 6), (2, 1), (0, 1, 2, 3, 4))),
    ("RepeatedInsertedWindowDims", (50, 49, 48, 47, 46), (10, 9, 8, 7, 5),
     (10, 9, 8, 7, 3, 2, 4), ((4, 5, 6), (1, 1), (0, 1, 2, 3, 4))),
    ("OutOfBoundsInsertedWindowDims", (50, 49, 48, 47, 46), (10, 9, 8, 7, 5),
     (10, 9, 8, 7, 3, 2, 4), ((4, 5, 6), (1, 5), (0, 1, 2, 3, 4))),
    ("MismatchingScatterDimsToOperandDims", (50, 49, 48, 47, 46), (10, 9, 8, 7, 5),
     (10, 9, 8, 7, 3, 2, 4), ((4, 5, 6), (1, 2), (0, 1, 2, 3))),
    ("OutOfBoundsScatterDimsToOperandDims", (50, 49, 48, 47, 46), (10, 9, 8, 7, 5),
     (10, 9, 8, 7, 3, 2, 4), ((4, 5, 6), (1, 2), (0, 1, 2, 3, 10))),
    ("RepeatedValuesInScatterDimsToOperandDims", (50, 49, 48, 47, 46), (10, 9, 8, 7, 5),
     (10, 9, 8, 7, 3, 2, 4), ((4, 5, 6), (1, 2), (0, 1, 2, 2, 3))),
    ("InsufficientWindowDims", (50, 49, 48, 47, 46), (10, 9, 8, 7, 4),
     (10, 9, 8, 7, 3, 2, 4), ((4, 5, 6), (1,), (0, 1, 2, 3))),
    ("InsufficientWindowDimsV2", (10, 49, 48, 47, 46, 45), (10, 9, 8, 7, 3),
     (10, 9, 8, 7, 3, 2, 4), ((4, 5, 6), (1,), (1, 2, 3), (0,), (0,))),
    ("RepeatedOperandBatchingDims", (50, 49, 48, 47, 46), (10, 9, 8, 7, 5),
     (10, 9, 8, 7, 3, 2, 4), ((4, 5, 6), (0, 1), (0, 1, 4), (2, 3, 3))),
    ("NonAscendingOperandBatchingDims", (50, 49, 48, 47, 46), (10, 9, 8, 7, 5),
     (10, 9, 8, 7, 3, 2, 4), ((4, 5, 6), (0, 1), (0, 1, 4), (3, 2))),
    ("OutOfBoundsOperandBatchingDims", (50, 49, 48, 47, 46), (10, 9, 8, 7, 5),
     (10, 9, 8, 7, 3, 2, 4), ((4, 5, 6), (), (0, 1, 2, 3, 4), (0, 10))),
    ("NonDisjointCollapsedAndBatchingDims", (50, 49, 48, 47, 46, 45), (10, 9, 8, 7, 5),
     (10, 9, 8, 7, 3, 2, 4), ((4, 5, 6), (0, 1), (0, 1, 4), (1, 2))),
    ("NonDisjointScatterDimsToOperandDimsAndBatchingDims", (50, 49, 48, 47, 46),
     (10, 9, 8, 7, 5), (10, 9, 8, 7, 3, 2, 4), ((4, 5, 6), (0, 1), (0, 1, 2, 4), (2, 3))),
    ("RepeatedScatterIndicesBatchingDims", (50, 49, 48, 47, 46), (10, 9, 8, 7, 5),
     (10, 9, 8, 7, 3, 2, 4), ((4, 5, 6), (0, 1), (0, 1, 2, 3, 4), (), (0, 1, 0))),
    ("OutOfBoundsScatterIndicesBatchingDims", (50, 49, 48, 47, 46), (10, 9, 8, 7, 5),
     (10, 9, 8, 7, 3, 2, 4), ((4, 5, 6), (0, 1), (0, 1, 2, 3, 4), (), (0, 5))),
    ("IndexVectorDimInScatterIndicesBatchingDims", (50, 49, 48, 47, 46), (10, 9, 8, 7, 5),
     (10, 9, 8, 7, 3, 2, 4), ((4, 5, 6), (0, 1), (0, 1, 2, 3, 4), (), (0, 4))),
    ("MismatchingNumberOfBatchingDims", (50, 49, 48, 47, 46, 45), (10, 9, 8, 7, 4),
     (10, 9, 8, 7, 3, 2, 4), ((4, 5, 6), (1, 2), (1, 2, 3, 4), (0,), (0, 1))),
    ("MismatchingBatchingDimSizes", (10, 9, 48, 47, 46, 45), (10, 9, 8, 7, 2),
     (10, 9, 8, 7, 3, 2, 4), ((4, 5, 6), (2,), (2, 3), (0, 1), (1, 0))),
]


class Abstract:
    """Shape-only stand-ins so the big error cases need no data (jax.eval_shape)."""


def scatter_error(name, oshape, ishape, ushape, dn, op="scatter", dtype="int32",
                  udtype="int32", idtype="int32"):
    dn = tuple(dn) + ((),) * (5 - len(dn))
    spec = dict(op=op, operand=(dtype, oshape), indices=(idtype, np.zeros(ishape, np.int32)),
                updates=(udtype, ushape), dnums=dn, mode="none", grad=False, unique=False,
                sorted=False)
    CASES.append((name, spec))


for ename, oshape, ishape, ushape, dn in SCATTER_ERRORS:
    scatter_error(f"scatter_error/{ename}", oshape, ishape, ushape, dn)
scatter_error("scatter_error/float_indices", (5,), (2, 1), (2,), ((), (0,), (0,)),
              idtype="float32")
scatter_error("scatter_error/dtype_mismatch", (5,), (2, 1), (2,), ((), (0,), (0,)),
              op="scatter_add", dtype="float32", udtype="int32")
scatter_error("scatter_error/ScalarIndices", (5,), (), (), ((), (0,), (0,)))


def abstract_run(spec):
    """Errors of big shapes: jax.eval_shape with ShapeDtypeStructs."""
    dtype, shape = spec["operand"]
    idx_dtype, idx_vals = spec["indices"]
    x = jax.ShapeDtypeStruct(shape, dtype)
    i = jax.ShapeDtypeStruct(idx_vals.shape, idx_dtype)
    if spec["op"] == "gather":
        return jax.eval_shape(lambda x, i: lax.gather(x, i, GD(*spec["dnums"]), spec["slice"]),
                              x, i)
    udtype, ushape = spec["updates"]
    u = jax.ShapeDtypeStruct(ushape, udtype)
    fn = getattr(lax, spec["op"])
    return jax.eval_shape(lambda x, i, u: fn(x, i, u, SD(*spec["dnums"])), x, i, u)



# Sharding: jit on a (data=2, model=4) mesh; the case names the function (C++ mirrors
# them) and the layouts of its arguments.
SHARD_V, SHARD_D, SHARD_N = 64, 16, 32
SHARD_CASES = [
    # (name, fn, [arg specs])
    ("gather_vocab_model_idx_data", "gather", [("model", None), ("data",)]),
    ("gather_vocab_model_idx_data_clip", "gather_clip", [("model", None), ("data",)]),
    ("gather_vocab_model_idx_data_fill", "gather_fill", [("model", None), ("data",)]),
    ("gather_vocab_model_idx_repl", "gather", [("model", None), ()]),
    ("gather_repl_idx_data", "gather", [(), ("data",)]),
    ("gather_cols_model_idx_data", "gather", [(None, "model"), ("data",)]),
    ("scatter_add_batch", "scatter_add", [(), ("data",), ("data", None)]),
    ("scatter_add_vocab", "scatter_add", [("model", None), (), ()]),
    ("scatter_add_vocab_batch", "scatter_add", [("model", None), ("data",), ("data", None)]),
    ("scatter_add_cols", "scatter_add", [(None, "model"), (), (None, "model")]),
    ("scatter_mul_batch", "scatter_mul", [(), ("data",), ("data", None)]),
    ("scatter_min_batch", "scatter_min", [(), ("data",), ("data", None)]),
    ("scatter_max_vocab_batch", "scatter_max", [("model", None), ("data",), ("data", None)]),
    ("scatter_vocab", "scatter", [("model", None), (), ()]),
    ("scatter_cols", "scatter", [(None, "model"), (), (None, "model")]),
]


def shard_fn(kind):
    gd = GD(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    sd = SD(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
    if kind.startswith("gather"):
        mode = {"gather": None, "gather_clip": "clip", "gather_fill": "fill"}[kind]
        return lambda t, i: lax.gather(t, i[:, None], gd, (1, SHARD_D), mode=mode)
    op = getattr(lax, kind)
    return lambda o, i, u: op(o, i[:, None], u, sd)


def shard_args():
    # Indices reach past the table (-5, V + 3, ...) so the modes matter.
    table = (jnp.arange(SHARD_V * SHARD_D, dtype=jnp.float32).reshape(SHARD_V, SHARD_D) % 37
             ) * 0.5 - 4.0
    idx = (jnp.arange(SHARD_N, dtype=jnp.int32) * 7) % (SHARD_V + 8) - 5
    upd = (jnp.arange(SHARD_N * SHARD_D, dtype=jnp.float32).reshape(SHARD_N, SHARD_D) % 11
           ) * 0.25 - 1.0
    return table, idx, upd


def spec_str(spec, ndim):
    entries = list(spec) + [None] * (ndim - len(spec))
    out = []
    for e in entries:
        if e is None:
            out.append("-")
        elif isinstance(e, tuple):
            out.append("+".join(e))
        else:
            out.append(e)
    return ",".join(out)


def shard_records(out):
    from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
    mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(AxisType.Auto, AxisType.Auto))
    table, idx, upd = shard_args()
    for name, kind, specs in SHARD_CASES:
        f = shard_fn(kind)
        vals = [table, idx] if kind.startswith("gather") else [table * 0.0 + 1.5, idx, upd]
        args = [jax.device_put(v, NamedSharding(mesh, P(*sp))) for v, sp in zip(vals, specs)]
        res = jax.jit(f)(*args)
        text = jax.jit(f).lower(*args).compile().as_text()
        counts = [len(re.findall(k + r"(-start)?\(", text)) for k in ("all-reduce", "all-gather")]
        out.append((f"shard/{name}",
                    f"{spec_str(res.sharding.spec, res.ndim)}|{counts[0]}|{counts[1]}"))
        out.append((f"shard/{name}#out", array_record(res)))

def main():
    out = []
    for name, spec in CASES:
        if "_error/" in name:
            out.append((name, spec_text(spec)))
            try:
                abstract_run(spec)
                out.append((name + "#out", "!none"))
            except Exception as e:  # noqa: BLE001
                msg = str(e).split("\n")[0]
                out.append((name + "#out", f"!{type(e).__name__}: {msg}"))
            continue
        record(out, name, spec)
    shard_records(out)
    with open(OUT, "w") as fh:
        for name, text in out:
            fh.write(name + "\t" + text.encode("unicode_escape").decode("ascii") + "\n")
    print(f"wrote {len(out)} records ({len(CASES)} cases) to {OUT}")


if __name__ == "__main__":
    main()
