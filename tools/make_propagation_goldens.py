"""Writes tests/golden/propagation_cases.txt: the output sharding JAX 0.4.35 chooses.

Run with the venv that has jax==0.4.35: /opt/jax435/bin/python tools/make_propagation_goldens.py
Each record is `name<TAB>sharding`. The name is the whole case, so the C++ test rebuilds it
from the name alone: `mesh | op | spec of input 0 | ... | spec of constraint 0 | ...`.
An input spec `-` means an uncommitted array (jnp.asarray, on device 0). Specs are written
over axes 'a', 'b', 'c'; on the (8,) mesh 'a' becomes 'x' and cases naming 'b' or 'c' are
left out, as are cases naming 'c' on the two-axis meshes.

The sharding is written canonically: `single` (one device), `replicated`, or the
PartitionSpec on the case's mesh whose devices_indices_map equals the output's, trailing
Nones stripped: `P('a', 'b')`, `P(None, 'b')`, `P(('a', 'b'))`; a layout no such spec gives
(a reshape can split a mesh axis) is written as its tiles (see tiles_text). JAX may return a
GSPMDSharding or a NamedSharding with a different but equivalent spec; comparing index maps
makes the text independent of that.
"""
import itertools
import os
import sys

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import NamedSharding, PartitionSpec as P  # noqa: E402

MESHES = {
    "8": ((8,), ("x",)),
    "4x2": ((4, 2), ("a", "b")),
    "2x4": ((2, 4), ("a", "b")),
    "2x2x2": ((2, 2, 2), ("a", "b", "c")),
}

M, V, T, L, S = (8, 8), (8,), (8, 8, 8), (64,), ()
wsc = jax.lax.with_sharding_constraint

# op name -> (input shapes, number of constraint specs, fn(inputs, constraints)).
OPS = {
    "negative": ([M], 0, lambda i, c: jnp.negative(i[0])),
    "sin": ([M], 0, lambda i, c: jnp.sin(i[0])),
    "tanh": ([M], 0, lambda i, c: jnp.tanh(i[0])),
    "copy": ([M], 0, lambda i, c: jnp.copy(i[0])),
    "ones_like": ([M], 0, lambda i, c: jnp.ones_like(i[0])),
    "x * 2.0": ([M], 0, lambda i, c: i[0] * 2.0),
    "2.0 + x": ([M], 0, lambda i, c: 2.0 + i[0]),
    "x + s": ([M, S], 0, lambda i, c: i[0] + i[1]),
    "add": ([M, M], 0, lambda i, c: jnp.add(i[0], i[1])),
    "multiply": ([M, M], 0, lambda i, c: jnp.multiply(i[0], i[1])),
    "maximum": ([M, M], 0, lambda i, c: jnp.maximum(i[0], i[1])),
    "matmul": ([M, M], 0, lambda i, c: jnp.matmul(i[0], i[1])),
    "dot": ([M, M], 0, lambda i, c: jnp.dot(i[0], i[1])),
    "dot matrix-vector": ([M, V], 0, lambda i, c: jnp.dot(i[0], i[1])),
    "batched matmul": ([T, T], 0, lambda i, c: jnp.matmul(i[0], i[1])),
    "transpose": ([M], 0, lambda i, c: jnp.transpose(i[0])),
    "transpose (1, 2, 0)": ([T], 0, lambda i, c: jnp.transpose(i[0], (1, 2, 0))),
    "reshape (64,)": ([M], 0, lambda i, c: i[0].reshape(64)),
    "reshape (2, 4, 8)": ([M], 0, lambda i, c: i[0].reshape(2, 4, 8)),
    "reshape (4, 16)": ([M], 0, lambda i, c: i[0].reshape(4, 16)),
    "reshape (8, 8)": ([L], 0, lambda i, c: i[0].reshape(8, 8)),
    "reshape (64, 8)": ([T], 0, lambda i, c: i[0].reshape(64, 8)),
    "x[:, None]": ([V], 0, lambda i, c: i[0][:, None]),
    "broadcast_to (8, 8)": ([V], 0, lambda i, c: jnp.broadcast_to(i[0], (8, 8))),
    "x[:, None] + y": ([V, M], 0, lambda i, c: i[0][:, None] + i[1]),
    "x[None, :] + y": ([V, M], 0, lambda i, c: i[0][None, :] + i[1]),
    "concatenate axis=0": ([M, M], 0, lambda i, c: jnp.concatenate([i[0], i[1]], axis=0)),
    "concatenate axis=1": ([M, M], 0, lambda i, c: jnp.concatenate([i[0], i[1]], axis=1)),
    "x[2:6]": ([M], 0, lambda i, c: i[0][2:6]),
    "x[:, 2:6]": ([M], 0, lambda i, c: i[0][:, 2:6]),
    "x[3]": ([M], 0, lambda i, c: i[0][3]),
    "where(x > 32, x, y)": ([M, M], 0, lambda i, c: jnp.where(i[0] > 32, i[0], i[1])),
    "where(x > 32, x, 0.0)": ([M], 0, lambda i, c: jnp.where(i[0] > 32, i[0], 0.0)),
    "jit x * 2": ([M], 0, lambda i, c: jax.jit(lambda x: x * 2)(i[0])),
    "jit sin(x) @ y + 1": ([M, M], 0, lambda i, c: jax.jit(lambda x, y: jnp.sin(x) @ y + 1)(*i)),
    "jit x + y.T": ([M, M], 0, lambda i, c: jax.jit(lambda x, y: x + y.T)(*i)),
    "jit sum(x, 0) * 2": ([M], 0, lambda i, c: jax.jit(lambda x: jnp.sum(x, 0) * 2)(i[0])),
    "jit x @ x.T": ([M], 0, lambda i, c: jax.jit(lambda x: x @ x.T)(i[0])),
    "jit wsc(x * 2)": ([M], 1, lambda i, c: jax.jit(lambda x: wsc(x * 2, c[0]))(i[0])),
    "jit sin(wsc(x))": ([M], 1, lambda i, c: jax.jit(lambda x: jnp.sin(wsc(x, c[0])))(i[0])),
    "jit wsc(x @ y)": ([M, M], 1, lambda i, c: jax.jit(lambda x, y: wsc(x @ y, c[0]))(*i)),
    "jit wsc(x) + y": ([M, M], 1, lambda i, c: jax.jit(lambda x, y: wsc(x, c[0]) + y)(*i)),
}
for _f in ("sum", "max", "mean"):
    for _axis in (0, 1, None):
        OPS[f"{_f} axis={_axis}"] = (
            [M], 0, lambda i, c, f=getattr(jnp, _f), a=_axis: f(i[0], axis=a))
OPS["sum axis=1 (3-d)"] = ([T], 0, lambda i, c: jnp.sum(i[0], axis=1))
for _axis in (0, 1, None):
    OPS[f"argmax axis={_axis}"] = ([M], 0, lambda i, c, a=_axis: jnp.argmax(i[0], axis=a))
for _axis in (0, 1):
    OPS[f"cumsum axis={_axis}"] = ([M], 0, lambda i, c, a=_axis: jnp.cumsum(i[0], axis=a))
    OPS[f"sort axis={_axis}"] = ([M], 0, lambda i, c, a=_axis: jnp.sort(i[0], axis=a))

# Specs of rank-2 inputs, rank-1 inputs and rank-3 inputs.
S2 = ["P('a', None)", "P(None, 'a')", "P('a', 'b')", "P('b', 'a')", "P(('a', 'b'), None)",
      "P(None, 'b')", "P()", "P(('a', 'b', 'c'), None)", "P('a', ('b', 'c'))", "P('c', 'a')"]
S1 = ["P('a')", "P('b')", "P(('a', 'b'))", "P()", "P(('a', 'b', 'c'))"]
S3 = ["P('a', None, None)", "P(None, 'a', None)", "P(None, None, 'a')", "P('a', 'b', None)",
      "P(None, 'a', 'b')", "P()", "P('a', 'b', 'c')"]
DOT = ["P('a', None)", "P(None, 'a')", "P(None, 'b')", "P('b', None)", "P()"]
SOME = ["P('a', None)", "P(None, 'a')", "P('a', 'b')"]
REDUCE = ["P('a', 'b')", "P(('a', 'b'), None)", "P('a', None)", "P(None, 'a')",
          "P(('a', 'b', 'c'), None)"]
DIFFERENT = [
    ("P('a', None)", "P(None, 'a')"), ("P(None, 'a')", "P('a', None)"),
    ("P('a', None)", "P(None, 'b')"), ("P(None, 'b')", "P('a', None)"),
    ("P('a')", "P()"), ("P()", "P('a')"), ("P('a', 'b')", "P('b', 'a')"),
    ("P('a', None)", "P('b', None)"), ("P(('a', 'b'), None)", "P('a', None)"),
    ("P('a', None)", "P(('a', 'b'), None)"), ("P('a', 'b')", "P()"), ("P()", "P(None, 'b')"),
    ("P('a', 'b')", "P('a', None)"), ("P('a', None)", "P('a', 'b')"),
    ("P(None, 'a')", "P(None, 'b')"), ("P('a', None)", "-"), ("-", "P(None, 'a')"),
    ("P('a', 'b')", "P('c', None)"), ("P('a', None)", "P(None, ('b', 'c'))"),
]


def cases():
    """Yields (op, specs) in a fixed order."""
    for op in ("negative", "sin", "tanh", "copy", "ones_like", "transpose", "x * 2.0",
               "2.0 + x"):
        for s in S2:
            yield op, [s]
    for s in SOME + ["P()", "P(('a', 'b'), None)"]:
        for t in ("-", "P()"):
            yield "x + s", [s, t]
    for op in ("add", "multiply", "maximum"):
        for s in S2:
            yield op, [s, s]
    for pair in DIFFERENT:
        yield "add", list(pair)
    for op in ("matmul", "dot"):
        for lhs, rhs in itertools.product(DOT, DOT):
            yield op, [lhs, rhs]
    for lhs, rhs in itertools.product(["P('a', None)", "P(None, 'a')", "P()"],
                                      ["P('a')", "P('b')", "P()"]):
        yield "dot matrix-vector", [lhs, rhs]
    for pair in [("P('a', None, None)", "P('a', None, None)"), ("P('a', None, None)", "P()"),
                 ("P(None, 'a', None)", "P(None, None, 'b')"),
                 ("P(None, None, 'a')", "P(None, 'a', None)"),
                 ("P('a', 'b', None)", "P('a', None, 'b')"),
                 ("P('a', None, 'b')", "P('a', 'b', None)"),
                 ("P()", "P(None, None, 'a')"), ("P('a', None, None)", "P('b', None, None)")]:
        yield "batched matmul", list(pair)
    for f in ("sum", "max", "mean"):
        for axis in (0, 1, None):
            for s in REDUCE:
                yield f"{f} axis={axis}", [s]
    for s in S3:
        yield "sum axis=1 (3-d)", [s]
    for axis in (0, 1, None):
        for s in SOME:
            yield f"argmax axis={axis}", [s]
    for f in ("cumsum", "sort"):
        for axis in (0, 1):
            for s in SOME:
                yield f"{f} axis={axis}", [s]
    for s in S3:
        yield "transpose (1, 2, 0)", [s]
    for s in ["P('a', None)", "P(None, 'a')", "P('a', 'b')", "P('b', 'a')",
              "P(('a', 'b'), None)"]:
        yield "reshape (64,)", [s]
    for s in SOME:
        yield "reshape (2, 4, 8)", [s]
        yield "reshape (4, 16)", [s]
    for s in S1:
        yield "reshape (8, 8)", [s]
    for s in ["P('a', None, None)", "P(None, 'a', None)", "P('a', 'b', None)",
              "P(None, None, 'a')"]:
        yield "reshape (64, 8)", [s]
    for s in S1:
        yield "x[:, None]", [s]
        yield "broadcast_to (8, 8)", [s]
    for op in ("x[:, None] + y", "x[None, :] + y"):
        for x, y in itertools.product(["P('a')", "P('b')", "P()"],
                                      ["P()", "P(None, 'b')", "P('b', None)", "P('a', None)",
                                       "P(None, 'a')"]):
            yield op, [x, y]
    for axis in (0, 1):
        for pair in [("P('a', None)", "P('a', None)"), ("P(None, 'a')", "P(None, 'a')"),
                     ("P('a', None)", "P()"), ("P('a', 'b')", "P('a', 'b')"),
                     ("P('a', None)", "P(None, 'b')")]:
            yield f"concatenate axis={axis}", list(pair)
    for op in ("x[2:6]", "x[:, 2:6]", "x[3]"):
        for s in SOME + ["P(('a', 'b'), None)"]:
            yield op, [s]
    for pair in [("P('a', None)", "P('a', None)"), ("P('a', None)", "P(None, 'b')"),
                 ("P('a', None)", "P()"), ("P()", "P(None, 'a')"), ("P('a', 'b')", "P('b', 'a')")]:
        yield "where(x > 32, x, y)", list(pair)
    for s in SOME + ["P()"]:
        yield "where(x > 32, x, 0.0)", [s]
    for s in SOME + ["-"]:
        yield "jit x * 2", [s]
        yield "jit sum(x, 0) * 2", [s]
        yield "jit x @ x.T", [s]
    for pair in [("P('a', None)", "P(None, 'b')"), ("P(None, 'a')", "P('a', None)"),
                 ("P('a', None)", "P('a', None)"), ("P('a', 'b')", "-")]:
        yield "jit sin(x) @ y + 1", list(pair)
        yield "jit x + y.T", list(pair)
    for s, c in [("P('a', None)", "P(None, 'a')"), ("P('a', 'b')", "P()"),
                 ("P('a', None)", "P('b', 'a')"), ("P()", "P('a', None)"),
                 ("-", "P(None, 'b')"), ("P(None, 'a')", "P(('a', 'b'), None)")]:
        yield "jit wsc(x * 2)", [s, c]
        yield "jit sin(wsc(x))", [s, c]
    for x, y, c in [("P('a', None)", "P(None, 'b')", "P(None, 'a')"),
                    ("P(None, 'a')", "P('a', None)", "P('a', None)"),
                    ("P(None, 'a')", "P('a', None)", "P()"),
                    ("P('a', None)", "P()", "P(None, 'b')")]:
        yield "jit wsc(x @ y)", [x, y, c]
    for x, y, c in [("P('a', None)", "P(None, 'a')", "P(None, 'a')"),
                    ("P('a', None)", "P('a', None)", "P(None, 'b')"),
                    ("-", "P('a', None)", "P('b', None)")]:
        yield "jit wsc(x) + y", [x, y, c]


def data(shape):
    """Distinct float32 values in a scrambled order (37 is coprime with every size here)."""
    n = int(np.prod(shape, dtype=np.int64))
    return ((np.arange(n, dtype=np.int32) * 37) % max(n, 1)).astype(np.float32).reshape(shape)


def candidate_specs(ndim, names):
    """Every PartitionSpec of rank ndim over distinct mesh axes, fewest axes first."""
    out = []

    def rec(d, unused, entries):
        if d == ndim:
            out.append(entries)
            return
        for k in range(len(unused) + 1):
            for axes in itertools.permutations(unused, k):
                rest = [a for a in unused if a not in axes]
                entry = None if k == 0 else (axes[0] if k == 1 else tuple(axes))
                rec(d + 1, rest, entries + [entry])

    rec(0, list(names), [])
    used = lambda e: sum(0 if x is None else (1 if isinstance(x, str) else len(x)) for x in e)
    return sorted(out, key=used)


def spec_text(entries):
    entries = list(entries)
    while entries and entries[-1] is None:
        entries.pop()
    return "P(" + ", ".join("None" if e is None else repr(e) for e in entries) + ")"


def index_map(sharding, shape):
    m = sharding.devices_indices_map(shape)
    return {d.id: tuple(s.indices(n)[:2] for s, n in zip(idx, shape)) for d, idx in m.items()}


def canonical(x, mesh):
    s = x.sharding
    if len(s.device_set) == 1:
        return "single"
    if {d.id for d in s.device_set} != {d.id for d in mesh.devices.flat}:
        return "other devices " + repr(s)
    if s.is_fully_replicated:
        return "replicated"
    want = index_map(s, x.shape)
    for entries in candidate_specs(x.ndim, mesh.axis_names):
        try:
            got = index_map(NamedSharding(mesh, P(*entries)), x.shape)
        except Exception:  # noqa: BLE001
            continue
        if got == want:
            return spec_text(entries)
    return tiles_text(want, x.shape)


def tiles_text(index_map_, shape):
    """A layout no spec on the mesh gives: tiles per dimension, then each tile's devices in
    row-major tile order, e.g. `tiles 2x4x1: 0 1 2 3 4 5 6 7` (`0,1` for replicas)."""
    starts = [sorted({idx[d][0] for idx in index_map_.values()}) for d in range(len(shape))]
    groups = {}
    for dev, idx in sorted(index_map_.items()):
        coord = tuple(starts[d].index(idx[d][0]) for d in range(len(shape)))
        groups.setdefault(coord, []).append(str(dev))
    counts = "x".join(str(len(s)) for s in starts)
    return f"tiles {counts}: " + " ".join(",".join(groups[c]) for c in sorted(groups))


def on_mesh(spec, names):
    """The spec text for this mesh, or None when it names an axis the mesh lacks."""
    if names == ("x",):
        if "'b'" in spec or "'c'" in spec:
            return None
        return spec.replace("'a'", "'x'")
    if "'c'" in spec and "c" not in names:
        return None
    return spec


def main():
    out = []
    seen = set()
    for tag, (shape, names) in MESHES.items():
        mesh = jax.make_mesh(shape, names)
        ids = [d.id for d in mesh.devices.flat]
        assert ids == list(range(8)), f"mesh {tag} is not row-major: {ids}"
        for op, specs in cases():
            specs = [on_mesh(s, names) for s in specs]
            if any(s is None for s in specs):
                continue
            name = " | ".join([tag, op] + specs)
            if name in seen:
                continue
            seen.add(name)
            shapes, n_constraints, fn = OPS[op]
            assert len(specs) == len(shapes) + n_constraints, name
            inputs = []
            for shp, spec in zip(shapes, specs):
                x = jnp.asarray(data(shp))
                if spec != "-":
                    x = jax.device_put(x, NamedSharding(mesh, eval(spec)))
                inputs.append(x)
            constraints = [NamedSharding(mesh, eval(s)) for s in specs[len(shapes):]]
            try:
                text = canonical(fn(inputs, constraints), mesh)
            except Exception as e:  # noqa: BLE001
                text = f"error {type(e).__name__}: {e}"
            out.append(f"{name}\t{text.encode('unicode_escape').decode()}")
    path = os.path.join(os.path.dirname(__file__), "..", "tests", "golden",
                        "propagation_cases.txt")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    print(f"wrote {len(out)} records to {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
