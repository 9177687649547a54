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
    # `+` `_add`; parax names the primitive, `add`.
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


def parallel_evaluation():
    """The pmap tutorial as examples/parallel_evaluation.cpp runs it (regression data drawn
    with jax.random instead of numpy, so parax can draw the same)."""
    from typing import NamedTuple
    from jax import lax
    jax.config.update("jax_threefry_partitionable", True)  # parax's default, as JAX >= 0.5

    x = np.arange(5)
    w = np.array([2., 3., 4.], dtype=np.float32)

    def convolve(x, w):
        output = []
        for i in range(1, len(x) - 1):
            output.append(jnp.dot(x[i - 1:i + 2], w))
        return jnp.array(output)

    print("# convolve(x, w)")
    print(repr(convolve(x, w)))
    n_devices = jax.local_device_count()
    xs = jnp.arange(5 * n_devices).reshape(-1, 5)
    ws = jnp.stack([w] * n_devices)
    print("# xs\n" + repr(xs) + "\n# ws\n" + repr(ws))
    print("# vmap(convolve)(xs, ws)\n" + repr(jax.vmap(convolve)(xs, ws)))
    ys = jax.pmap(convolve)(xs, ws)
    print("# pmap(convolve)(xs, ws)\n" + repr(ys))
    print("# pmap(convolve)(xs, pmap(convolve)(xs, ws))\n" + repr(jax.pmap(convolve)(xs, ys)))
    print("# pmap(convolve, in_axes=(0, None))(xs, w)\n" +
          repr(jax.pmap(convolve, in_axes=(0, None))(xs, w)))

    def normalized_convolution(x, w):
        output = convolve(x, w)
        return output / lax.psum(output, axis_name='p')

    print("# pmap(normalized_convolution, axis_name='p')(xs, ws)\n" +
          repr(jax.pmap(normalized_convolution, axis_name='p')(xs, ws)))
    print("# vmap(normalized_convolution, axis_name='p')(xs, ws)\n" +
          repr(jax.vmap(normalized_convolution, axis_name='p')(xs, ws)))

    inner = jax.pmap(lambda v: v / lax.psum(v, ('rows', 'cols')), axis_name='cols')
    grid = jax.pmap(lambda b: inner(b), axis_name='rows')(
        jnp.arange(1.0, 9.0, dtype=jnp.float32).reshape(2, 4))
    print("# pmap(pmap(v / psum(v, ('rows', 'cols'))))(arange(1, 9).reshape(2, 4))")
    print(repr(grid))
    # JAX 0.4.35 returns a PmapSharding here; parax's pmap is shard_map over a 2-D mesh,
    # as current JAX's pmap is.
    mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("rows", "cols"))
    print(no_memory_kind(NamedSharding(mesh, P("rows", "cols"))))
    vp = jax.vmap(jax.pmap(lambda v: lax.psum(v, 'i') + lax.psum(v, 'j'), axis_name='i'),
                  axis_name='j')
    print("# vmap(pmap(psum(v, 'i') + psum(v, 'j'), axis_name='i'), axis_name='j')"
          "(arange(8).reshape(2, 4))")
    print(repr(vp(jnp.arange(8.0, dtype=jnp.float32).reshape(2, 4))))

    class Params(NamedTuple):
        weight: jnp.ndarray
        bias: jnp.ndarray

    def init(rng):
        weights_key, bias_key = jax.random.split(rng)
        return Params(jax.random.normal(weights_key, ()), jax.random.normal(bias_key, ()))

    def loss_fn(params, xs, ys):
        pred = params.weight * xs + params.bias
        return jnp.mean((pred - ys) ** 2)

    LEARNING_RATE = 0.005

    def update(params, xs, ys):
        loss, grads = jax.value_and_grad(loss_fn)(params, xs, ys)
        grads = jax.lax.pmean(grads, axis_name='num_devices')
        loss = jax.lax.pmean(loss, axis_name='num_devices')
        new_params = jax.tree_util.tree_map(
            lambda param, g: param - g * LEARNING_RATE, params, grads)
        return new_params, loss

    update = jax.pmap(update, axis_name='num_devices')
    true_w, true_b = 2, -1
    data_x = jax.random.normal(jax.random.key(1), (128, 1))
    noise = 0.5 * jax.random.normal(jax.random.key(2), (128, 1))
    data_y = data_x * true_w + true_b + noise
    params = init(jax.random.key(123))
    replicated_params = jax.tree_util.tree_map(lambda x: jnp.array([x] * n_devices), params)

    def split(arr):
        return arr.reshape(n_devices, arr.shape[0] // n_devices, *arr.shape[1:])

    x_split = split(data_x)
    y_split = split(data_y)

    def describe(name, obj):
        print(f"after first `update()`, `{name}` is an array on {len(obj.devices())} "
              f"device(s), committed={obj.committed}")

    for i in range(1000):
        replicated_params, loss = update(replicated_params, x_split, y_split)
        if i == 0:
            describe('replicated_params.weight', replicated_params.weight)
            describe('loss', loss)
            describe('x_split', x_split)
        if i % 100 == 0:
            print(f"Step {i:3d}, loss: {loss[0]:.3f}")
    trained = jax.tree_util.tree_map(lambda x: x[0], replicated_params)
    print(f"weight {trained.weight:.3f}, bias {trained.bias:.3f}")


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
with open(os.path.join(EXPECTED, "parallel_evaluation.txt"), "w") as f:
    f.write(capture(parallel_evaluation))
print("wrote", os.path.join(EXPECTED, "parallel_evaluation.txt"))
