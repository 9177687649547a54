"""Runs the tutorial programs of examples/ in JAX 0.4.35 on 8 CPU devices and writes what
they print to examples/expected/, so CI can check the C++ examples against JAX itself.

Usage: /opt/jax435/bin/python tools/make_example_goldens.py
"""
import io
import os
import contextlib

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
import jax  # noqa: E402
import numpy as np  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.experimental import mesh_utils  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P, PositionalSharding  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
EXPECTED = os.path.join(HERE, "..", "examples", "expected")


def no_memory_kind(s):
    # parax prints shardings as the seeds' jaxlib did, without a memory kind.
    return str(s).replace(", memory_kind=unpinned_host", "")


def sharding_basics(n=16):
    vis = jax.debug.visualize_array_sharding
    x = jnp.zeros((n, n))
    print("# x on a single device")
    vis(x)
    devices = mesh_utils.create_device_mesh((8,))
    sharding = PositionalSharding(devices)
    print("# PositionalSharding(devices)\n" + no_memory_kind(sharding))
    print("# sharding.reshape(8, 1)\n" + no_memory_kind(sharding.reshape(8, 1)))
    x = jax.device_put(x, sharding.reshape(8, 1))
    vis(x)
    s42 = sharding.reshape(4, 2)
    print("# sharding.reshape(4, 2)\n" + no_memory_kind(s42))
    y = jax.device_put(x, s42)
    vis(y)
    print("# sharding.reshape(1, 8)")
    y = jax.device_put(x, sharding.reshape(1, 8))
    vis(y)
    print("# before and after replicate(axis=0, keepdims=True)")
    print(no_memory_kind(s42))
    print(no_memory_kind(s42.replicate(axis=0, keepdims=True)))
    y = jax.device_put(x, s42.replicate(axis=0, keepdims=True))
    vis(y)
    mesh = Mesh(mesh_utils.create_device_mesh((4, 2)), axis_names=("a", "b"))
    for text, spec in [("P('a', 'b')", P("a", "b")), ("P('b', 'a')", P("b", "a")),
                       ("P('a', None)", P("a", None)), ("P(None, 'b')", P(None, "b")),
                       ("P(None, 'a')", P(None, "a")),
                       ("P(('a', 'b'), None)", P(("a", "b"), None))]:
        print("# " + text)
        y = jax.device_put(x, NamedSharding(mesh, spec))
        vis(y)
    made = jax.make_mesh((4, 2), ("a", "b"))
    print(f"# make_mesh((4, 2), ('a', 'b')): {made}")
    y = jax.device_put(x, NamedSharding(made, P("a", "b")))
    print(no_memory_kind(y.sharding))
    vis(y)


def print_exception(e):
    # The tutorial's print_exception without colour. JAX 0.4.35 names the function behind
    # `+` `_add`; parax names the primitive, `add` (the text).
    import textwrap
    text = str(e).replace(" of _add ", " of add ")
    print(textwrap.fill(f"{type(e).__name__}: {text}"))


def computation_follows_data(n=16):
    """The sections "Computation follows data sharding", "When explicit shardings
    disagree" and "Constraining shardings of intermediates in jitted code"."""
    vis = jax.debug.visualize_array_sharding
    # The tutorial draws jax.random.normal values; layouts and allclose do not depend on them.
    x = jnp.arange(n * n, dtype=jnp.float32).reshape(n, n) / (n * n)
    mesh = jax.make_mesh((4, 2), ("a", "b"))
    x = jax.device_put(x, NamedSharding(mesh, P("a", "b")))
    print("input sharding:")
    vis(x)
    y = jnp.sin(x)
    print("output sharding:")
    vis(y)
    y = jax.device_put(x, NamedSharding(mesh, P("a", None)))
    z = jax.device_put(x, NamedSharding(mesh, P(None, "b")))
    print("lhs sharding:")
    vis(y)
    print("rhs sharding:")
    vis(z)
    w = jnp.dot(y, z)
    print("out sharding:")
    vis(w)
    x_single = jax.device_put(x, jax.devices()[0])
    vis(x_single)
    print(bool(np.allclose(jnp.dot(x_single, x_single), jnp.dot(y, z))))
    w_copy = jnp.copy(w)
    vis(w_copy)

    x = jnp.arange(24)
    sharding1 = NamedSharding(Mesh(jax.devices()[:4], "x"), P("x"))
    sharding2 = NamedSharding(Mesh(jax.devices()[4:], "x"), P("x"))
    y = jax.device_put(x, sharding1)
    z = jax.device_put(x, sharding2)
    try:
        y + z
    except ValueError as e:
        print_exception(e)
    devices = jax.devices()
    permuted_devices = [devices[i] for i in [0, 1, 2, 3, 6, 7, 4, 5]]
    sharding1 = NamedSharding(Mesh(devices, "x"), P("x"))
    sharding2 = NamedSharding(Mesh(permuted_devices, "x"), P("x"))
    y = jax.device_put(x, sharding1)
    z = jax.device_put(x, sharding2)
    try:
        y + z
    except ValueError as e:
        print_exception(e)
    y = jax.device_put(x, sharding1)
    y + jnp.ones_like(y)
    y + jnp.arange(y.size).reshape(y.shape)
    print("no error!")

    mesh = jax.make_mesh((4, 2), ("x", "y"))
    x = jnp.arange(n * n, dtype=jnp.float32).reshape(n, n) / (n * n)
    x = jax.device_put(x, NamedSharding(mesh, P("x", "y")))

    @jax.jit
    def f(x):
        x = x + 1
        y = jax.lax.with_sharding_constraint(x, NamedSharding(mesh, P("y", "x")))
        return y

    vis(x)
    y = f(x)
    vis(y)

    @jax.jit
    def f(x):
        x = x + 1
        y = jax.lax.with_sharding_constraint(x, NamedSharding(mesh, P()))
        return y

    vis(x)
    y = f(x)
    vis(y)


def capture(fn):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        fn()
    return buf.getvalue()


os.makedirs(EXPECTED, exist_ok=True)
with open(os.path.join(EXPECTED, "sharding_basics.txt"), "w") as f:
    f.write(capture(sharding_basics))
print("wrote", os.path.join(EXPECTED, "sharding_basics.txt"))
with open(os.path.join(EXPECTED, "computation_follows_data.txt"), "w") as f:
    f.write(capture(computation_follows_data))
print("wrote", os.path.join(EXPECTED, "computation_follows_data.txt"))
