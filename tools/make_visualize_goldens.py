"""Writes tests/golden/visualize_cases.txt from JAX 0.4.35's visualize_sharding (rich).

Run with the venv that has jax==0.4.35, rich and matplotlib:
    /opt/jax435/bin/python tools/make_visualize_goldens.py

Monochrome cases capture what JAX prints when stdout is not a terminal (redirected to a
StringIO). Colour cases patch rich's Console into a forced truecolor terminal, which is
what a user sees in a truecolor terminal with matplotlib installed.

File format (one record per case, all lines end in "\\n"):
    case <name>
    shape <d0> [<d1>]
    platform <name>
    params <scale repr> <min_width> <max_width> <color 0|1>
    devices <count>
    <device id> <start0> <stop0> [<start1> <stop1>]   (one line per device, "-" = None)
    expected <byte count>
    <exactly that many bytes of output, ending in "\\n" unless empty>
    end
"""
import contextlib
import io
import os
import sys

NUM_DEVICES = 64
os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={NUM_DEVICES}"
# rich looks at these; they must not leak the generating terminal into the goldens.
for var in ("FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "COLUMNS",
            "LINES", "JUPYTER_COLUMNS", "JUPYTER_LINES"):
    os.environ.pop(var, None)
os.environ["TERM"] = "xterm-256color"

import jax  # noqa: E402
import numpy as np  # noqa: E402
import rich.console  # noqa: E402
from jax._src import debugging  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402
from jax.sharding import PositionalSharding, SingleDeviceSharding  # noqa: E402

DEVS = jax.devices()
assert len(DEVS) == NUM_DEVICES
OUT_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden",
                        "visualize_cases.txt")

records = []
names = set()


def capture_mono(shape, sharding, kw):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        debugging.visualize_sharding(shape, sharding, **kw)
    return buf.getvalue()


def capture_color(shape, sharding, kw):
    buf = io.StringIO()
    real_console = rich.console.Console

    class TruecolorConsole(real_console):
        def __init__(self, *args, **kwargs):
            kwargs.update(file=buf, force_terminal=True, color_system="truecolor")
            super().__init__(*args, **kwargs)

    rich.console.Console = TruecolorConsole
    try:
        debugging.visualize_sharding(shape, sharding, use_color=True, **kw)
    finally:
        rich.console.Console = real_console
    return buf.getvalue()


def bound(v):
    return "-" if v is None else str(v)


def add(name, shape, sharding, scale=1.0, min_width=9, max_width=80, color=False):
    assert name not in names, name
    names.add(name)
    shape = tuple(shape)
    kw = dict(scale=scale, min_width=min_width, max_width=max_width)
    if color:
        text = capture_color(shape, sharding, kw)
    else:
        text = capture_mono(shape, sharding, dict(use_color=False, **kw))
    platform = next(iter(sharding.device_set)).platform
    lines = [f"case {name}", "shape " + " ".join(map(str, shape)), f"platform {platform}",
             f"params {scale!r} {min_width} {max_width} {int(color)}"]
    dmap = sharding.devices_indices_map(shape)
    lines.append(f"devices {len(dmap)}")
    for dev, index in dmap.items():
        parts = [str(dev.id)]
        for s in index:
            if isinstance(s, int):
                s = slice(s, s + 1)
            assert s.step is None
            parts += [bound(s.start), bound(s.stop)]
        lines.append(" ".join(parts))
    data = text.encode("utf-8")
    records.append("\n".join(lines) + f"\nexpected {len(data)}\n" + text + "end\n")


def mesh(shape, names_, devices=None, perm=None):
    n = int(np.prod(shape))
    devs = list(DEVS[:n]) if devices is None else list(devices)
    if perm is not None:
        devs = [devs[i] for i in perm]
    return Mesh(np.array(devs).reshape(shape), names_)


def named(m, *spec):
    return NamedSharding(m, P(*spec))


def single(i=0):
    return SingleDeviceSharding(DEVS[i])


class _FakeDevice:
    def __init__(self, id_, platform):
        self.id = id_
        self.platform = platform

    def __hash__(self):
        return hash(self.id)

    def __eq__(self, other):
        return self.id == other.id


class FakeSharding:
    """Just what visualize_sharding reads: a device set and an index map."""

    def __init__(self, pairs, platform="cpu"):
        self._map = {_FakeDevice(i, platform): tuple(index) for i, index in pairs}
        self.device_set = set(self._map)

    def devices_indices_map(self, shape):
        return self._map


def irregular_rows():
    # Rows 2:4 and 4:8 both count as row chunk 1, and each cell keeps the height of the
    # last device written to it, so cells of one row get different heights.
    rows = [slice(0, 2), slice(2, 4), slice(4, 8)]
    cols = [slice(0, 4), slice(4, 8)]
    pairs = [(0, (rows[0], cols[0])), (1, (rows[0], cols[1])), (2, (rows[1], cols[0])),
             (3, (rows[2], cols[1])), (4, (rows[2], cols[0])), (5, (rows[1], cols[1]))]
    return FakeSharding(pairs)


def main():
    big = (8192, 8192)
    m42 = jax.make_mesh((4, 2), ("a", "b"), devices=DEVS[:8])
    m8 = jax.make_mesh((8,), ("x",), devices=DEVS[:8])
    specs42 = {
        "P(a,b)": ("a", "b"), "P(b,a)": ("b", "a"), "P(a,None)": ("a", None),
        "P(None,b)": (None, "b"), "P(None,a)": (None, "a"),
        "P((a,b),None)": (("a", "b"), None), "P((b,a),None)": (("b", "a"), None),
        "P()": (), "P(b,None)": ("b", None), "P(None,(a,b))": (None, ("a", "b")),
        "P(None,(b,a))": (None, ("b", "a")), "P(a)": ("a",),
    }
    # jax-arrays.md 2.4 and variations.
    for name, spec in specs42.items():
        add(f"8192x8192 4x2 {name}", big, named(m42, *spec))
    add("8192x8192 single", big, single())
    add("8192x8192 single dev5", big, single(5))
    # A TPU-like device order and a reversed one: labels sort ids, cells follow chunks.
    tpu_order = mesh((4, 2), ("a", "b"), perm=[0, 1, 2, 3, 6, 7, 4, 5])
    rev = mesh((4, 2), ("a", "b"), perm=list(range(7, -1, -1)))
    for name, spec in [("P(a,b)", ("a", "b")), ("P(a,None)", ("a", None)),
                       ("P(None,b)", (None, "b")), ("P(b,a)", ("b", "a"))]:
        add(f"8192x8192 4x2tpuorder {name}", big, named(tpu_order, *spec))
        add(f"8192x8192 4x2reversed {name}", big, named(rev, *spec))

    # jax-arrays.md 2.5: 1-D.
    add("24 8 P(x)", (24,), named(m8, "x"))
    add("24 4x2 P(a)", (24,), named(m42, "a"))
    add("24 4x2 P(b)", (24,), named(m42, "b"))
    add("24 4x2 P((a,b))", (24,), named(m42, ("a", "b")))
    add("24 4x2 P((b,a))", (24,), named(m42, ("b", "a")))
    add("24 4x2 P()", (24,), named(m42))
    add("24 single", (24,), single())
    m24 = jax.make_mesh((2, 4), ("x", "y"), devices=DEVS[:8])
    add("8 2x4 P(y) (sum result)", (8,), named(m24, "y"))
    add("8 2x4 P(x)", (8,), named(m24, "x"))
    for n in [1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 12]:
        add(f"{n} single", (n,), single())
    add("2 4x2 P(b)", (2,), named(m42, "b"))
    add("4 4x2 P(a)", (4,), named(m42, "a"))
    add("4 4x2 P()", (4,), named(m42))
    add("8 4x2 P((a,b))", (8,), named(m42, ("a", "b")))
    m4 = mesh((4,), ("x",))
    add("4 4 P(x)", (4,), named(m4, "x"))
    add("8 4 P(x)", (8,), named(m4, "x"))

    # 2.5: other 2-D shapes.
    add("8x2 4x2 P(x,y)", (8, 2), named(mesh((4, 2), ("x", "y")), "x", "y"))
    add("4x8 2x4 P(x,y)", (4, 8), named(m24, "x", "y"))
    m44 = mesh((4, 4), ("x", "y"))
    add("16x16 4x4 P(x,y)", (16, 16), named(m44, "x", "y"))
    add("16x16 4x4 P(y,x)", (16, 16), named(m44, "y", "x"))
    add("16x16 4x4 P(x)", (16, 16), named(m44, "x"))
    add("16x16 4x4 P(None,y)", (16, 16), named(m44, None, "y"))
    add("16x16 4x4 P()", (16, 16), named(m44))
    add("16x16 4x4 P((x,y))", (16, 16), named(m44, ("x", "y")))
    add("16x16 4x4 P(None,(x,y))", (16, 16), named(m44, None, ("x", "y")))
    add("16 4x4 P((x,y))", (16,), named(m44, ("x", "y")))

    # PositionalSharding layouts.
    ps = PositionalSharding(DEVS[:8])
    add("8x8 pos reshape(8,1)", (8, 8), ps.reshape(8, 1))
    add("8x8 pos reshape(4,2)", (8, 8), ps.reshape(4, 2))
    add("8x8 pos reshape(1,8)", (8, 8), ps.reshape(1, 8))
    add("8x8 pos reshape(2,4)", (8, 8), ps.reshape(2, 4))
    add("8x8 pos reshape(4,2).replicate(0)", (8, 8), ps.reshape(4, 2).replicate(0))
    add("8x8 pos reshape(4,2).replicate(1)", (8, 8), ps.reshape(4, 2).replicate(1))
    add("8x8 pos reshape(4,2).replicate()", (8, 8), ps.reshape(4, 2).replicate())
    add("16 pos 8", (16,), ps)
    add("8192x8192 pos reshape(4,2)", big, ps.reshape(4, 2))
    ps16 = PositionalSharding(DEVS[:16])
    add("16x16 pos16 reshape(4,4)", (16, 16), ps16.reshape(4, 4))
    add("32x32 pos16 reshape(16,1)", (32, 32), ps16.reshape(16, 1))

    # Odd shapes.
    add("3x5 single", (3, 5), single())
    add("3x5 4x2 P()", (3, 5), named(m42))
    add("100x7 4x2 P(a)", (100, 7), named(m42, "a"))
    add("104x7 4x2 P((a,b))", (104, 7), named(m42, ("a", "b")))
    add("7x1000 4x2 P(None,b)", (7, 1000), named(m42, None, "b"))
    add("7x1000 4x2 P(None,a)", (7, 1000), named(m42, None, "a"))
    add("7x1000 single", (7, 1000), single())
    add("7x1000 4x2 P(None,(a,b))", (7, 1000), named(m42, None, ("a", "b")))
    add("1x1 single", (1, 1), single())
    add("1x1 4x2 P()", (1, 1), named(m42))
    add("1x8 4x2 P(None,(a,b))", (1, 8), named(m42, None, ("a", "b")))
    add("8x1 4x2 P((a,b))", (8, 1), named(m42, ("a", "b")))
    add("5x3 single", (5, 3), single())
    add("2x1000 4x2 P(b,a)", (2, 1000), named(m42, "b", "a"))
    add("1000x2 4x2 P(a,b)", (1000, 2), named(m42, "a", "b"))
    add("40x60 4x2 P(a,b)", (40, 60), named(m42, "a", "b"))
    add("30x36 4x2 P(b,a)", (30, 36), named(m42, "b", "a"))

    # Scales.
    for scale in [0.0, 0.1, 0.29, 0.3, 0.5, 0.7, 1.5, 2.0, 2.5, 3.0]:
        add(f"8192x8192 4x2 P(a,b) scale={scale}", big, named(m42, "a", "b"), scale=scale)
        add(f"8192x8192 4x2 P(b,a) scale={scale}", big, named(m42, "b", "a"), scale=scale)
    for scale in [0.5, 2.0, 3.0]:
        add(f"8192x8192 4x2 P() scale={scale}", big, named(m42), scale=scale)
        add(f"4x8 2x4 P(x,y) scale={scale}", (4, 8), named(m24, "x", "y"), scale=scale)
        add(f"24 8 P(x) scale={scale}", (24,), named(m8, "x"), scale=scale)
        add(f"3 single scale={scale}", (3,), single(), scale=scale)
        add(f"3x5 single scale={scale}", (3, 5), single(), scale=scale)

    # min_width / max_width.
    for lo, hi in [(0, 80), (1, 80), (5, 80), (12, 80), (20, 80), (30, 80), (9, 40),
                   (9, 30), (9, 20), (9, 12), (9, 100), (9, 120), (9, 200), (20, 15),
                   (40, 200), (0, 5)]:
        add(f"8192x8192 4x2 P(a,b) width={lo},{hi}", big, named(m42, "a", "b"),
            min_width=lo, max_width=hi)
        add(f"24 8 P(x) width={lo},{hi}", (24,), named(m8, "x"), min_width=lo, max_width=hi)
        add(f"8192x8192 4x2 P() width={lo},{hi}", big, named(m42), min_width=lo,
            max_width=hi)
    for hi in [0, 1, 2, 3, 10, 25, 26, 27]:
        add(f"8192x8192 single max_width={hi}", big, single(), max_width=hi)
    add("7x1000 single width=9,200", (7, 1000), single(), max_width=200)

    # Overflow: more columns than fit.
    for n in [10, 11, 12, 16, 20, 32, 64]:
        add(f"{n} {n} P(x) overflow", (n,), named(mesh((n,), ("x",)), "x"))
        add(f"{2 * n} {n} P(x) overflow", (2 * n,), named(mesh((n,), ("x",)), "x"))
    for n, hi in [(16, 40), (16, 20), (16, 18), (16, 17), (16, 16), (16, 15), (16, 10),
                  (8, 30), (8, 20), (8, 12), (8, 9), (32, 60), (4, 10)]:
        add(f"{n} {n} P(x) max_width={hi}", (n,), named(mesh((n,), ("x",)), "x"),
            max_width=hi)
    add("64 64 P(x) max_width=100", (64,), named(mesh((64,), ("x",)), "x"), max_width=100)
    add("16 16 P(x) width=20,80", (16,), named(mesh((16,), ("x",)), "x"), min_width=20)
    add("16 16 P(x) width=3,80", (16,), named(mesh((16,), ("x",)), "x"), min_width=3)
    m2x16 = mesh((2, 16), ("x", "y"))
    add("8x32 2x16 P(x,y)", (8, 32), named(m2x16, "x", "y"))
    add("32x32 2x16 P(y,x)", (32, 32), named(m2x16, "y", "x"))
    add("32x32 2x16 P(x,y)", (32, 32), named(m2x16, "x", "y"))
    add("8x32 2x16 P(None,y)", (8, 32), named(m2x16, None, "y"))
    add("8x32 2x16 P(None,(x,y))", (8, 32), named(m2x16, None, ("x", "y")))
    m4x8 = mesh((4, 8), ("x", "y"))
    add("32x32 4x8 P(x,y)", (32, 32), named(m4x8, "x", "y"))
    add("32x32 4x8 P(y,x)", (32, 32), named(m4x8, "y", "x"))
    add("8x1024 4x8 P(x,y)", (8, 1024), named(m4x8, "x", "y"))
    add("8x1024 4x8 P(None,(x,y))", (8, 1024), named(m4x8, None, ("x", "y")))
    m4x16 = mesh((4, 16), ("x", "y"))
    add("64x64 4x16 P(x,y)", (64, 64), named(m4x16, "x", "y"))
    add("64x64 4x16 P(x,y) max_width=40", (64, 64), named(m4x16, "x", "y"), max_width=40)
    add("8x2 1x2 P(None,y) width=80,80", (8, 2), named(mesh((1, 2), ("x", "y")), None, "y"),
        min_width=80)
    add("8x2 1x2 P(None,y) width=40,80", (8, 2), named(mesh((1, 2), ("x", "y")), None, "y"),
        min_width=40)
    add("8x3 1x3 P(None,y) width=30,80", (8, 3), named(mesh((1, 3), ("x", "y")), None, "y"),
        min_width=30)

    # Long labels: many replicas in one cell.
    for n in [16, 32, 64]:
        mn = mesh((n,), ("x",))
        add(f"16x16 {n} P()", (16, 16), named(mn))
        add(f"24 {n} P()", (24,), named(mn))
    m8x8 = mesh((8, 8), ("x", "y"))
    add("64x64 8x8 P(x)", (64, 64), named(m8x8, "x"))
    add("64 8x8 P(y)", (64,), named(m8x8, "y"))
    add("64x64 8x8 P(None,x)", (64, 64), named(m8x8, None, "x"))
    add("64x64 8x8 P(x,y)", (64, 64), named(m8x8, "x", "y"))
    add("64x64 8x8 P(y,x)", (64, 64), named(m8x8, "y", "x"))
    add("16x16 32 P() max_width=40", (16, 16), named(mesh((32,), ("x",))), max_width=40)
    add("16x16 16 P() max_width=20", (16, 16), named(mesh((16,), ("x",))), max_width=20)
    # Two-digit ids with the TPU-like permutation on a bigger mesh.
    perm16 = [0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15]
    add("16x16 4x4perm P(x,y)", (16, 16), named(mesh((4, 4), ("x", "y"), perm=perm16), "x", "y"))
    add("16 16perm P(x)", (16,), named(mesh((16,), ("x",), perm=perm16[::-1]), "x"))
    add("8192x8192 single dev12", big, single(12))
    add("8192x8192 single dev63", big, single(63))

    # Shardings no JAX sharding class produces, through the same function.
    add("8x8 irregular rows", (8, 8), irregular_rows())
    add("8x8 irregular rows scale=2.0", (8, 8), irregular_rows(), scale=2.0)
    add("8x8 irregular rows color", (8, 8), irregular_rows(), color=True)
    add("4x4 gpu platform", (4, 4), FakeSharding([(7, (slice(None), slice(None)))], "gpu"))
    add("12 three-digit ids", (12,), FakeSharding(
        [(100 + 37 * i, (slice(i, i + 1),)) for i in range(12)]))

    # Colour mode.
    add("8 4 P(x) color", (8,), named(m4, "x"), color=True)
    for name, spec in specs42.items():
        add(f"8192x8192 4x2 {name} color", big, named(m42, *spec), color=True)
    add("8192x8192 single color", big, single(), color=True)
    add("24 8 P(x) color", (24,), named(m8, "x"), color=True)
    add("24 single color", (24,), single(), color=True)
    add("16x16 4x4 P(x,y) color", (16, 16), named(m44, "x", "y"), color=True)
    add("4x8 2x4 P(x,y) color", (4, 8), named(m24, "x", "y"), color=True)
    add("3x5 single color", (3, 5), single(), color=True)
    add("7x1000 4x2 P(None,b) color", (7, 1000), named(m42, None, "b"), color=True)
    for n in [2, 3, 5, 6, 7, 9, 10, 12, 16, 20, 21, 32, 64]:
        add(f"{n} {n} P(x) color", (n,), named(mesh((n,), ("x",)), "x"), color=True)
    add("32x32 4x8 P(x,y) color", (32, 32), named(m4x8, "x", "y"), color=True)
    add("64x64 8x8 P(x,y) color", (64, 64), named(m8x8, "x", "y"), color=True)
    add("8x32 2x16 P(x,y) color", (8, 32), named(m2x16, "x", "y"), color=True)
    add("8192x8192 4x2 P(a,b) scale=2.0 color", big, named(m42, "a", "b"), scale=2.0,
        color=True)
    add("8192x8192 4x2 P(b,a) scale=0.5 color", big, named(m42, "b", "a"), scale=0.5,
        color=True)
    add("8192x8192 4x2 P(a,b) width=5,30 color", big, named(m42, "a", "b"), min_width=5,
        max_width=30, color=True)
    add("16 16 P(x) max_width=20 color", (16,), named(mesh((16,), ("x",)), "x"),
        max_width=20, color=True)
    add("16x16 32 P() color", (16, 16), named(mesh((32,), ("x",))), color=True)
    add("8192x8192 single max_width=3 color", big, single(), max_width=3, color=True)
    add("8x8 pos reshape(4,2) color", (8, 8), ps.reshape(4, 2), color=True)

    with open(OUT_PATH, "w", encoding="utf-8", newline="\n") as f:
        f.write("# Generated by tools/make_visualize_goldens.py from jax 0.4.35 + rich "
                f"{rich_version()}; do not edit.\n")
        f.write("".join(records))
    print(f"wrote {len(records)} cases to {os.path.normpath(OUT_PATH)}", file=sys.stderr)


def rich_version():
    from importlib.metadata import version
    return version("rich")


if __name__ == "__main__":
    main()
