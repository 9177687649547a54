"""Writes tests/golden/sharding_cases.txt from JAX 0.4.35 (classic strings) on 8 CPU devices.

Run with the venv that has jax==0.4.35: /opt/jax435/bin/python tools/make_sharding_goldens.py
Each record is `name<TAB>text` with newlines in text escaped as \\n.
"""
import os
import sys

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
import jax  # noqa: E402
import numpy as np  # noqa: E402
from jax.experimental import mesh_utils  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P, PositionalSharding  # noqa: E402
from jax.sharding import SingleDeviceSharding  # noqa: E402

out = []


def rec(name, text):
    # The seeds were made with a jaxlib that reported no memory kinds on CPU (their
    # PositionalSharding prints none), so parax prints none either: drop the suffix.
    text = str(text).replace(", memory_kind=unpinned_host", "")
    out.append(f"{name}\t{text.encode('unicode_escape').decode()}")


def err(name, fn):
    try:
        fn()
        rec(name, "NO ERROR")
    except Exception as e:  # noqa: BLE001
        rec(name, f"{type(e).__name__}: {e}")


def idx_str(index):
    return "(" + ", ".join(str(s) for s in index) + ("," if len(index) == 1 else "") + ")"


devs = jax.devices()
rec("device", repr(devs[3]))
mesh42 = jax.make_mesh((4, 2), ("a", "b"))
mesh8 = jax.make_mesh((8,), ("x",))
rec("mesh42_str", str(mesh42))
rec("mesh42_repr", repr(mesh42))
rec("mesh8_str", str(mesh8))
rec("mesh8_repr", repr(mesh8))

specs42 = {
    "P(a,b)": P("a", "b"), "P(b,a)": P("b", "a"), "P(a,None)": P("a", None),
    "P(None,b)": P(None, "b"), "P(None,a)": P(None, "a"), "P((a,b),None)": P(("a", "b"), None),
    "P((b,a),None)": P(("b", "a"), None), "P()": P(), "P(a)": P("a"), "P(b)": P("b"),
    "P(None,(a,b))": P(None, ("a", "b")),
}
for name, spec in specs42.items():
    s = NamedSharding(mesh42, spec)
    rec(f"spec_repr {name}", repr(spec))
    rec(f"named_repr {name}", repr(s))
    for shape in [(8192, 8192), (16, 24), (8, 8)]:
        m = s.devices_indices_map(shape)
        text = "\n".join(f"{d.id} {idx_str(i)}" for d, i in m.items())
        rec(f"indices 4x2 {name} {shape}", text)
        rec(f"shard_shape 4x2 {name} {shape}", s.shard_shape(shape))
    rec(f"replicated 4x2 {name}", s.is_fully_replicated)

specs8 = {"P(x)": P("x"), "P(x,None)": P("x", None), "P(None,x)": P(None, "x"), "P()": P()}
for name, spec in specs8.items():
    s = NamedSharding(mesh8, spec)
    rec(f"named_repr8 {name}", repr(s))
    for shape in [(24,), (8, 16), (16, 8)] if name == "P(x)" or name == "P()" else [(8, 16), (16, 8)]:
        m = s.devices_indices_map(shape)
        text = "\n".join(f"{d.id} {idx_str(i)}" for d, i in m.items())
        rec(f"indices 8 {name} {shape}", text)

sd = SingleDeviceSharding(devs[0])
rec("single_repr", repr(sd))
rec("single_indices", "\n".join(f"{d.id} {idx_str(i)}" for d, i in sd.devices_indices_map((4, 6)).items()))

ps = PositionalSharding(mesh_utils.create_device_mesh((8,)))
rec("pos8", repr(ps))
rec("pos8x1", repr(ps.reshape(8, 1)))
rec("pos4x2", repr(ps.reshape(4, 2)))
rec("pos1x8", repr(ps.reshape(1, 8)))
s42 = ps.reshape(4, 2)
rec("pos_rep0_keep", repr(s42.replicate(axis=0, keepdims=True)))
rec("pos_rep1", repr(s42.replicate(1)))
rec("pos_rep_all", repr(s42.replicate()))
rec("pos_rep0_nokeep", repr(s42.replicate(0, keepdims=False)))
rec("pos_T", repr(s42.T))
rec("pos2x2x2", repr(ps.reshape(2, 2, 2)))
for name, s in [("4x2", s42), ("rep0", s42.replicate(0, keepdims=True)), ("8x1", ps.reshape(8, 1)),
                ("1x8", ps.reshape(1, 8)), ("T", s42.T), ("rep1", s42.replicate(1))]:
    m = s.devices_indices_map((8192, 8192))
    rec(f"pos_indices {name}", "\n".join(f"{d.id} {idx_str(i)}" for d, i in m.items()))
    rec(f"pos_replicated {name}", s.is_fully_replicated)
rec("pos_replicated all", s42.replicate().is_fully_replicated)

# Equivalence.
a = NamedSharding(mesh42, P("a"))
b = NamedSharding(mesh42, P("a", None))
rec("equiv P(a) P(a,None) 2", a.is_equivalent_to(b, 2))
rec("eq P(a) P(a,None)", a == b)
rec("equiv P(a,b) pos4x2 2", NamedSharding(mesh42, P("a", "b")).is_equivalent_to(s42, 2))
rec("equiv P(a,None) pos_rep1 2", b.is_equivalent_to(s42.replicate(1), 2))
rec("equiv P() single", NamedSharding(mesh42, P()).is_equivalent_to(sd, 2))

# Errors.
x10 = np.arange(10.0, dtype=np.float32)
mesh4 = Mesh(devs[:4], "x")
err("err_unknown_axis", lambda: NamedSharding(mesh42, P("c")))
err("err_duplicate_axis", lambda: NamedSharding(mesh42, P("a", "a")))
err("err_duplicate_axis_tuple", lambda: NamedSharding(mesh42, P(("a", "b"), "a")))
err("err_rank", lambda: jax.device_put(x10, NamedSharding(mesh42, P("a", "b"))))
err("err_rank_scalar", lambda: jax.device_put(np.float32(1), NamedSharding(mesh42, P("a"))))
err("err_indivisible", lambda: jax.device_put(x10, NamedSharding(mesh4, P("x"))))
err("err_indivisible_2d", lambda: jax.device_put(np.zeros((6, 10), np.float32), NamedSharding(mesh42, P("a", "b"))))
err("err_shard_shape", lambda: NamedSharding(mesh4, P("x")).shard_shape((10,)))
err("err_make_mesh_too_big", lambda: jax.make_mesh((4, 4), ("a", "b")))
err("err_create_device_mesh", lambda: mesh_utils.create_device_mesh((4, 2), devs[:6]))
err("err_mesh_rank", lambda: Mesh(np.array(devs).reshape(4, 2), ("a",)))
err("err_pos_empty", lambda: PositionalSharding([]))
err("err_pos_rank", lambda: jax.device_put(x10, s42))
err("err_make_mesh_names", lambda: jax.make_mesh((4, 2), ("a",)))

path = os.path.join(os.path.dirname(__file__), "..", "tests", "golden", "sharding_cases.txt")
with open(path, "w") as f:
    f.write("\n".join(out) + "\n")
print(f"wrote {len(out)} records to {path}", file=sys.stderr)
