"""Writes tests/golden/control_flow_vmap_cases.txt: what JAX 0.10.2 gives for control flow
under vmap, and inside shard_map and pmap bodies with named-axis collectives
(tests/lax/control_flow/vmap_test.cpp computes the same cases with parax, same inputs).

Run: python3 tools/make_control_flow_vmap_goldens.py

Format: tests/support/golden.h's `name<TAB>text` records.
  <case>[k]        `dtype|shape|v0,v1,...` of the case's k-th result (values as Python
                   floats/ints).
  <case>[k]#spec   str() of the k-th result's PartitionSpec, for cases over a mesh.
Cases marked (JAX test) port a case of JAX's tests/lax_control_flow_test.py.
"""
import os

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden",
                   "control_flow_vmap_cases.txt")

f32 = jnp.float32
# The inputs, mirrored by tests/lax/control_flow/vmap_test.cpp.
X = jnp.array([[1.0, 2.0, 3.0], [-1.0, -2.0, -3.0], [0.5, -1.0, 0.25], [-0.5, 0.1, 0.2]], f32)
Y = jnp.array([0.5, -1.5, 2.0], f32)
V = jnp.array([1.0, 3.0, 20.0], f32)
IDX = jnp.array([0, 1, 2, 5, -1], jnp.int32)
X5 = jnp.arange(15, dtype=f32).reshape(5, 3) / 4.0 - 1.0
N = jnp.array([1, 3, 5], jnp.int32)
XS = jnp.arange(12, dtype=f32).reshape(3, 4) / 2.0 - 1.0  # [batch 3, length 4]
R8 = jnp.arange(8, dtype=f32) + 1.0
M8 = jnp.arange(16, dtype=f32).reshape(8, 2) / 4.0


def sin_or_cos(x):
    return lax.cond(x.sum() > 0, jnp.sin, jnp.cos, x)


def branches3():
    return [lambda x: x * 2.0, lambda x: jnp.sin(x), lambda x: -x + 1.0]


def mesh8():
    return jax.make_mesh((8,), ("i",), axis_types=(jax.sharding.AxisType.Auto,))


def on(mesh, x, spec):
    return jax.device_put(x, NamedSharding(mesh, spec))


def ring(c, n):
    return lax.ppermute(c, "i", [(j, (j + 1) % n) for j in range(n)])


def sm_psum_fori(x):
    def body(i, c):
        return c + lax.psum(x, "i") * i.astype(f32)
    return lax.fori_loop(0, 3, body, jnp.zeros_like(x))


def sm_psum_fori_replicated(x):
    return lax.fori_loop(0, 4, lambda i, c: c + lax.psum(x.sum(), "i"), jnp.float32(0.0))


def sm_ring_scan(x):
    def step(c, _):
        nxt = ring(c, 8)
        return nxt, nxt.sum()
    return lax.scan(step, x, None, length=3)


def sm_while_pmean(x):
    def body(c):
        return c[0] + 1, lax.pmean(c[1], "i") * 2.0 + c[1]
    return lax.while_loop(lambda c: c[0] < 3, body, (0, x))[1]


def sm_cond(x):
    return lax.cond(x.sum() > 3.0, lambda y: y * 2.0, lambda y: -y, x)


def sm_cond_psum_pred(x):
    return lax.cond(lax.psum(x.sum(), "i") > 0.0, lambda y: lax.psum(y * 2.0, "i"),
                    lambda y: lax.pmax(y, "i"), x)


def sm_scan_all_gather(x):
    def step(c, _):
        g = lax.all_gather(c, "i", tiled=True)
        return c + g.sum(), g.max()
    return lax.scan(step, x, None, length=2)


def cases():
    c = {}
    # cond and switch.
    c["cond_batched_pred"] = lambda: jax.vmap(sin_or_cos)(X)
    c["cond_unbatched_pred"] = lambda: jax.vmap(
        lambda x, y, p: lax.cond(p, lambda a, b: a * b, lambda a, b: b + 1.0, x, y),
        in_axes=(0, None, None))(X, Y, True)
    c["cond_unbatched_pred_false"] = lambda: jax.vmap(
        lambda x, y, p: lax.cond(p, lambda a, b: a * b, lambda a, b: b + 1.0, x, y),
        in_axes=(0, None, None))(X, Y, False)
    c["cond_batched_pred_unbatched_operand"] = lambda: jax.vmap(
        lambda p, y: lax.cond(p > 0, lambda b: b * 3.0, lambda b: b - 1.0, y),
        in_axes=(0, None))(V - 5.0, Y)
    c["switch_batched_index"] = lambda: jax.vmap(
        lambda i, x: lax.switch(i, branches3(), x))(IDX, X5)
    c["switch_unbatched_index"] = lambda: jax.vmap(
        lambda x, i: lax.switch(i, branches3(), x), in_axes=(0, None))(X5, 2)
    # (JAX test) testCondBatched: a batched predicate and a batched operand, nested.
    c["cond_batched_nested"] = lambda: jax.vmap(
        lambda x: lax.cond(x[0] < 0.5, lambda y: lax.cond(y[1] > 0, jnp.sin, jnp.cos, y),
                           lambda y: y * 2.0, x))(X)
    # while_loop.
    c["while_batched_pred"] = lambda: jax.vmap(
        lambda y: lax.while_loop(lambda c: c < 10.0, lambda c: c * 2.0, y))(V)
    # (JAX test) testWhileLoopBatched: the count is shared, the carry becomes batched.
    c["while_unbatched_pred_batched_carry"] = lambda: jax.vmap(
        lambda x: lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * x),
                                 (0, jnp.float32(1.0))))(Y)
    # (JAX test) testWhileLoopCondConstsBatched: the predicate's constant is batched.
    c["while_cond_consts_batched"] = lambda: jax.vmap(
        lambda b, x: lax.while_loop(lambda c: c[0] < b, lambda c: (c[0] + 1, c[1] + x),
                                    (0, jnp.float32(0.0))), in_axes=(0, None))(N, jnp.float32(1.5))
    # fori_loop: static bounds (a scan) and traced ones (a while).
    c["fori_static_batched"] = lambda: jax.vmap(
        lambda x: lax.fori_loop(0, 5, lambda i, c: c * 0.5 + i.astype(f32), x))(X)
    # (JAX test) testForiLoopBatched: a batched bound.
    c["fori_batched_bound"] = lambda: jax.vmap(
        lambda n, x: lax.fori_loop(0, n, lambda i, c: c + i.astype(f32) * x, jnp.float32(0.0)))(
            N, Y)
    # scan.
    c["scan_batched_xs"] = lambda: jax.vmap(
        lambda xs: lax.scan(lambda c, x: (c + x, c * x), jnp.float32(0.0), xs))(XS)
    c["scan_batched_carry"] = lambda: jax.vmap(
        lambda c0: lax.scan(lambda c, x: (c * 0.5 + x, c - x), c0, jnp.arange(4, dtype=f32)))(Y)
    c["scan_batched_consts"] = lambda: jax.vmap(
        lambda w: lax.scan(lambda c, x: (c + w * x, w * c), jnp.float32(0.0),
                           jnp.arange(4, dtype=f32)))(Y)
    c["scan_reverse"] = lambda: jax.vmap(
        lambda xs: lax.scan(lambda c, x: (c * 0.5 + x, c), jnp.float32(1.0), xs,
                            reverse=True))(XS)
    c["scan_xs_batched_at_1"] = lambda: jax.vmap(
        lambda xs: lax.scan(lambda c, x: (c + x, c * x), jnp.float32(0.0), xs), in_axes=1,
        out_axes=(0, 1))(XS.T)
    # (JAX test) testScanVmap: a vector carry, a matrix const, ys of two kinds.
    c["scan_vector_carry"] = lambda: jax.vmap(
        lambda c0, xs: lax.scan(lambda c, x: (jnp.tanh(c * x + Y), (c.sum(), c)), c0, xs))(
            X[:3], XS)
    c["map_batched"] = lambda: jax.vmap(lambda xs: lax.map(lambda x: x * x + 1.0, xs))(XS)
    # Nesting and naming.
    c["nested_vmap_while"] = lambda: jax.vmap(jax.vmap(
        lambda y: lax.while_loop(lambda c: c < 4.0, lambda c: c * c + 1.0, y)))(X)
    c["nested_vmap_scan"] = lambda: jax.vmap(jax.vmap(
        lambda x: lax.scan(lambda c, _: (c * x, c), jnp.float32(1.0), None, length=3)))(X)
    c["vmap_named_psum_in_scan"] = lambda: jax.vmap(
        lambda xs: lax.scan(lambda c, x: (c + lax.psum(x, "b"), c * 2.0), jnp.float32(0.0),
                            xs), axis_name="b")(XS)
    c["nested_named_vmap_psum_in_scan"] = lambda: jax.vmap(jax.vmap(
        lambda xs: lax.scan(lambda c, x: (c + lax.psum(x, "a") * lax.pmax(x, ("a", "b")), c),
                            jnp.float32(0.0), xs), axis_name="a"), axis_name="b")(
                                XS.reshape(3, 2, 2) * 0.5)
    c["vmap_named_pmean_in_while"] = lambda: jax.vmap(
        lambda y: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] -
                                 lax.pmean(c[1], "b")), (0, y)), axis_name="b")(Y)[1]
    # A collective over the vmapped axis inside a loop none of whose operands is batched.
    c["vmap_named_psum_of_constant_in_scan"] = lambda: jax.vmap(
        lambda x: (x, lax.scan(lambda c, _: (c + lax.psum(1.0, "b"), c), jnp.float32(0.0), None,
                               length=3)), axis_name="b")(V)
    c["jit_vmap_cond_scan"] = lambda: jax.jit(jax.vmap(
        lambda xs: lax.scan(lambda c, x: (lax.cond(x > 0, lambda a: a + x, lambda a: a * 0.5, c),
                                          c), jnp.float32(1.0), xs)))(XS)
    c["vmap_checkpoint"] = lambda: jax.vmap(
        jax.checkpoint(lambda x: jnp.sin(x) * jnp.cos(x).sum()))(X)
    c["vmap_checkpoint_unbatched_arg"] = lambda: jax.vmap(
        jax.checkpoint(lambda x, y: jnp.sin(x) * y), in_axes=(0, None))(X, Y)
    # Over a mesh: vmap of a batch sharded over 'i', under jit.
    c["jit_vmap_scan_sharded_batch"] = lambda: jax.jit(jax.vmap(
        lambda xs: lax.scan(lambda c, x: (c + x, c * x), jnp.float32(0.0), xs)))(
            on(mesh8(), jnp.arange(32, dtype=f32).reshape(8, 4) / 8.0, P("i")))
    c["jit_vmap_while_sharded_batch"] = lambda: jax.jit(jax.vmap(
        lambda y: lax.while_loop(lambda c: c < 10.0, lambda c: c * 2.0, y)))(
            on(mesh8(), R8, P("i")))
    # shard_map bodies with loops and collectives.
    c["shard_map_vmap_scan_psum"] = lambda: jax.shard_map(
        lambda x: jax.vmap(lambda r: lax.scan(lambda c, v: (c + lax.psum(v, "i"), c),
                                              jnp.float32(0.0), r))(x),
        mesh=mesh8(), in_specs=P("i"), out_specs=(P(), P()))(on(mesh8(), M8, P("i")))
    c["shard_map_psum_in_fori"] = lambda: jax.shard_map(
        sm_psum_fori, mesh=mesh8(), in_specs=P("i"), out_specs=P("i"))(on(mesh8(), R8, P("i")))
    c["shard_map_psum_in_fori_replicated"] = lambda: jax.shard_map(
        sm_psum_fori_replicated, mesh=mesh8(), in_specs=P("i"), out_specs=P())(
            on(mesh8(), R8, P("i")))
    c["shard_map_ring_scan"] = lambda: jax.shard_map(
        sm_ring_scan, mesh=mesh8(), in_specs=P("i"), out_specs=(P("i"), P("i")))(
            on(mesh8(), M8, P("i")))
    c["shard_map_while_pmean"] = lambda: jax.shard_map(
        sm_while_pmean, mesh=mesh8(), in_specs=P("i"), out_specs=P("i"))(on(mesh8(), M8, P("i")))
    c["shard_map_while_varying_pred"] = lambda: jax.shard_map(
        lambda x: lax.while_loop(lambda c: c.sum() < 10.0, lambda c: c * 2.0, x), mesh=mesh8(),
        in_specs=P("i"), out_specs=P("i"))(on(mesh8(), R8, P("i")))
    c["shard_map_cond"] = lambda: jax.shard_map(
        sm_cond, mesh=mesh8(), in_specs=P("i"), out_specs=P("i"))(on(mesh8(), M8, P("i")))
    c["shard_map_cond_psum_pred"] = lambda: jax.shard_map(
        sm_cond_psum_pred, mesh=mesh8(), in_specs=P("i"), out_specs=P())(on(mesh8(), R8, P("i")))
    c["shard_map_scan_all_gather"] = lambda: jax.shard_map(
        sm_scan_all_gather, mesh=mesh8(), in_specs=P("i"), out_specs=(P("i"), P("i")))(
            on(mesh8(), M8, P("i")))
    c["jit_shard_map_psum_in_fori"] = lambda: jax.jit(jax.shard_map(
        sm_psum_fori, mesh=mesh8(), in_specs=P("i"), out_specs=P("i")))(on(mesh8(), R8, P("i")))
    c["pmap_pmean_in_fori"] = lambda: jax.pmap(
        lambda x: lax.fori_loop(0, 3, lambda i, c: lax.pmean(c * x, "i") + i.astype(f32), x),
        axis_name="i")(R8 / 4.0)
    c["pmap_psum_in_while"] = lambda: jax.pmap(
        lambda x: lax.while_loop(lambda c: c[0] < 2, lambda c: (c[0] + 1, lax.psum(c[1], "i")),
                                 (0, x))[1], axis_name="i")(R8 / 8.0)
    return c


def values(x):
    x = np.asarray(x)
    flat = [repr(float(v)) if x.dtype.kind == "f" else str(int(v)) for v in x.reshape(-1)]
    return "%s|%s|%s" % (x.dtype.name, ",".join(str(d) for d in x.shape), ",".join(flat))


def main():
    lines = []
    for name, fn in cases().items():
        out = fn()
        leaves = jax.tree_util.tree_leaves(out)
        for k, leaf in enumerate(leaves):
            lines.append("%s[%d]\t%s" % (name, k, values(leaf)))
            if isinstance(leaf.sharding, NamedSharding) and leaf.sharding.mesh.size > 1:
                lines.append("%s[%d]#spec\t%s" % (name, k, str(leaf.sharding.spec)))
    with open(OUT, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote %d records to %s" % (len(lines), OUT))


if __name__ == "__main__":
    main()
