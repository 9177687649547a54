#!/usr/bin/env python3
"""Writes tests/golden/control_flow_grad_cases.txt: JAX's values, jvp tangents and
gradients through cond, switch, scan, fori_loop and while_loop, for
tests/lax/control_flow/grad_test.cpp (which writes the same functions in C++).

One record a line: `name<TAB>v0,v1,...`, the flattened float32 values in row-major order
(several arrays one after the other). Run with JAX 0.10.2: python3 tools/make_control_flow_grad_goldens.py
"""
import os

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "golden",
                   "control_flow_grad_cases.txt")
records = []


def put(name, *arrays):
  flat = []
  for a in jax.tree_util.tree_leaves(arrays):
    flat.extend(float(v) for v in np.asarray(a, dtype=np.float64).ravel())
  records.append(name + "\t" + ",".join(repr(v) for v in flat))


X3 = jnp.array([0.5, 1.0, 1.5], jnp.float32)
XS = jnp.array([[0.1, -0.2], [0.3, 0.4], [-0.5, 0.6], [0.7, -0.8]], jnp.float32)
W2 = jnp.array([0.9, -1.1], jnp.float32)
C2 = jnp.array([0.2, 0.3], jnp.float32)


# testCondGrad: both branches taken.
def cond_f(x):
  return jnp.sum(lax.cond(jnp.sum(x) > 0, lambda y: jnp.sin(y) * y, lambda y: jnp.cos(y) + y, x))


for tag, x in (("true", X3), ("false", -X3)):
  put("cond_" + tag + ":out", cond_f(x))
  put("cond_" + tag + ":grad", jax.grad(cond_f)(x))
  put("cond_" + tag + ":jvp", jax.jvp(cond_f, (x,), (jnp.ones_like(x),))[1])
  put("cond_" + tag + ":gradgrad", jax.grad(lambda x: jnp.sum(jax.grad(cond_f)(x) * x))(x))

# Two operands, a captured constant, an output one branch gives no tangent to.
CONST = jnp.array([2.0, -1.0, 0.5], jnp.float32)


def cond2_f(x, y):
  a, b = lax.cond(x[0] > 0, lambda x, y: (x * y + CONST, jnp.float32(1.0) + 0 * y[0]),
                  lambda x, y: (x - y, jnp.sum(y * y)), x, y)
  return jnp.sum(a * a) + b


for tag, x in (("true", X3), ("false", -X3)):
  y = X3[::-1] * 0.5
  put("cond2_" + tag + ":out", cond2_f(x, y))
  put("cond2_" + tag + ":grad", jax.grad(cond2_f, argnums=(0, 1))(x, y))
  put("cond2_" + tag + ":jvp", jax.jvp(cond2_f, (x, y), (jnp.ones_like(x), -jnp.ones_like(y)))[1])


# switch with 3 branches (and an index clamped into range).
def switch_f(x, i):
  return jnp.sum(lax.switch(i, [jnp.sin, jnp.cos, lambda x: x * x * x], x))


for i in (0, 1, 2, 5):
  put("switch_%d:out" % i, switch_f(X3, i))
  put("switch_%d:grad" % i, jax.grad(switch_f)(X3, i))


# testScanGrad: consts, several ys, the ys in the loss; forward and reverse.
def scan_f(c, xs, w, reverse):
  def body(carry, x):
    return carry * w + jnp.sin(x), (carry * x, jnp.cos(carry))
  carry, (ys, zs) = lax.scan(body, c, xs, reverse=reverse)
  return jnp.sum(carry) + jnp.sum(ys * ys) + jnp.sum(zs)


for tag, rev in (("fwd", False), ("rev", True)):
  put("scan_" + tag + ":out", scan_f(C2, XS, W2, rev))
  put("scan_" + tag + ":grad", jax.grad(scan_f, argnums=(0, 1, 2))(C2, XS, W2, rev))
  put("scan_" + tag + ":jvp",
      jax.jvp(lambda c, xs, w: scan_f(c, xs, w, rev), (C2, XS, W2),
              (jnp.ones_like(C2), jnp.ones_like(XS), -jnp.ones_like(W2)))[1])

put("scan_fwd:gradgrad",
    jax.grad(lambda w: jnp.sum(jax.grad(scan_f, argnums=2)(C2, XS, w, False) * w))(W2))


# A pytree carry; a carry without a tangent at first that the body gives one.
def scan_tree_f(x, xs):
  def body(carry, x_):
    a, b = carry
    return (a + b * x_, b * jnp.cos(x_) + x), a * b
  (a, b), ys = lax.scan(body, (jnp.zeros(2, jnp.float32), jnp.ones(2, jnp.float32)), xs)
  return jnp.sum(a) + jnp.sum(b) + jnp.sum(ys * ys)


put("scan_tree:out", scan_tree_f(W2, XS))
put("scan_tree:grad", jax.grad(scan_tree_f, argnums=(0, 1))(W2, XS))


# testScanRnn-style: h = tanh(W h + x), the loss on the ys.
WR = jnp.array([[0.5, -0.3], [0.2, 0.8]], jnp.float32)


def rnn_f(w, h0, xs):
  def step(h, x):
    h = jnp.tanh(jnp.dot(w, h) + x)
    return h, h
  _, hs = lax.scan(step, h0, xs)
  return jnp.sum(hs * hs)


put("rnn:out", rnn_f(WR, C2, XS))
put("rnn:grad", jax.grad(rnn_f, argnums=(0, 1, 2))(WR, C2, XS))


# testForiLoopGrad: static bounds (a scan).
def fori_f(x):
  return jnp.sum(lax.fori_loop(0, 5, lambda i, c: c * x + jnp.sin(c) * i, x))


put("fori:out", fori_f(X3))
put("fori:grad", jax.grad(fori_f)(X3))
put("fori:gradgrad", jax.grad(lambda x: jnp.sum(jax.grad(fori_f)(x) * x))(X3))


# Nested: a scan inside a scan, a cond inside a scan.
def nested_f(w, xs):
  def outer(c, row):
    def inner(d, v):
      return d * w[0] + jnp.sin(v * c), d * v
    d, ys = lax.scan(inner, c, row)
    return d + w[1], jnp.sum(ys)
  c, ys = lax.scan(outer, jnp.float32(0.5), xs)
  return c + jnp.sum(ys * ys)


put("nested_scan:out", nested_f(W2, XS))
put("nested_scan:grad", jax.grad(nested_f, argnums=(0, 1))(W2, XS))


def scan_cond_f(w, xs):
  def body(c, x):
    c = lax.cond(x[0] > 0, lambda c: c * w + x, lambda c: jnp.sin(c) - x, c)
    return c, c[0] * x[1]
  c, ys = lax.scan(body, C2, xs)
  return jnp.sum(c) + jnp.sum(ys)


put("scan_cond:out", scan_cond_f(W2, XS))
put("scan_cond:grad", jax.grad(scan_cond_f, argnums=(0, 1))(W2, XS))


# testWhileJVP: forward mode through a while loop.
def while_f(x):
  def body(c):
    i, y = c
    return i + 1, y * x + jnp.sin(y)
  return lax.while_loop(lambda c: c[0] < 4, body, (0, x))[1]


put("while:out", while_f(X3))
put("while:jvp", jax.jvp(while_f, (X3,), (jnp.ones_like(X3),))[1])
put("while:jacfwd", jax.jacfwd(while_f)(X3))


# vjp with a cotangent for some outputs only (the others zero).
def vjp_f(c, xs):
  return lax.scan(lambda c, x: (c * x, jnp.sin(c + x)), c, xs)


out, pullback = jax.vjp(vjp_f, C2, XS)
put("vjp:out", out)
put("vjp:ys_only", pullback((jnp.zeros_like(C2), jnp.ones_like(XS))))
put("vjp:carry_only", pullback((jnp.ones_like(C2), jnp.zeros_like(XS))))

# A scan with psum in its body inside shard_map, differentiated.
MESH = jax.make_mesh((4,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))


def psum_body(w, xs):
  def step(c, x):
    s = lax.psum(c * x * w, "x")
    return s, jnp.sin(s)
  c, ys = lax.scan(step, jnp.ones(2, jnp.float32), xs)
  return jnp.sum(ys) + jnp.sum(c)


psum_f = jax.shard_map(psum_body, mesh=MESH, in_specs=(jax.P(), jax.P(None, "x")),
                       out_specs=jax.P(), check_vma=False)
XS38 = jnp.linspace(-1, 1, 24).reshape(3, 8).astype(jnp.float32)
put("shard_map_psum:out", psum_f(W2 * 0 + jnp.array([0.3, 0.5], jnp.float32), XS38))
put("shard_map_psum:grad", jax.grad(psum_f)(jnp.array([0.3, 0.5], jnp.float32), XS38))

with open(OUT, "w") as f:
  f.write("\n".join(records) + "\n")
print("wrote", len(records), "records to", os.path.normpath(OUT))
