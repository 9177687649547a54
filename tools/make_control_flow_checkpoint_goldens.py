"""Writes tests/golden/control_flow_checkpoint_cases.txt: what JAX gives for jax.checkpoint
under each policy (tests/lax/control_flow/checkpoint_test.cpp computes the same cases with
parax), most of them ported from JAX's tests/api_test.py RematTest.

Run with JAX 0.10.2 (the installed python3):
    python3 tools/make_control_flow_checkpoint_goldens.py

Format: tests/support/golden.h's `name<TAB>text` records.
  <case>/<policy>         the case's values (output or gradient leaves, flattened, in
                          pytree order), comma-separated Python floats
  jaxpr/<case>/<policy>   make_jaxpr's text, literals without their type and policies by
                          name as parax prints them (unicode_escape'd)
  <case>/<policy>#count   `prim=n ...`: how often each primitive appears in the jaxpr of
                          the vjp's pullback (the backward pass: the recomputation and the
                          transposed linear part), counted as JAX's tests count them
Policies: none (policy=None), nothing, everything, dots, dots_nb (the DotsSaveable pair).
"""
import os
import re

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden",
                   "control_flow_checkpoint_cases.txt")

cp = jax.checkpoint_policies
POLICIES = {
    "none": None,
    "nothing": cp.nothing_saveable,
    "everything": cp.everything_saveable,
    "dots": cp.dots_saveable,
    "dots_nb": cp.dots_with_no_batch_dims_saveable,
}
HI = lax.Precision.HIGHEST

# The inputs, mirrored in tests/lax/control_flow/checkpoint_test.cpp.
f32 = jnp.float32
W3 = jnp.sin(jnp.arange(9, dtype=f32)).reshape(3, 3) * 0.5
X23 = jnp.cos(jnp.arange(6, dtype=f32)).reshape(2, 3)
W34 = jnp.sin(jnp.arange(12, dtype=f32)).reshape(3, 4) * 0.5
B4 = jnp.cos(jnp.arange(4, dtype=f32)) * 0.1
D22 = jnp.sin(jnp.arange(4, dtype=f32)).reshape(2, 2) * 0.5 + 0.25
D322 = jnp.sin(jnp.arange(12, dtype=f32)).reshape(3, 2, 2) * 0.5 + 0.25
XS43 = jnp.cos(jnp.arange(12, dtype=f32)).reshape(4, 3) * 0.5
C3 = jnp.sin(jnp.arange(3, dtype=f32))
V5 = jnp.cos(jnp.arange(5, dtype=f32)) * 0.5
W5 = jnp.sin(jnp.arange(25, dtype=f32)).reshape(5, 5) * 0.4


def sin2(x):  # test_remat_basic
  return jnp.sin(jnp.sin(x))


def mlp2(w, x):
  return jnp.sum(jnp.tanh(jnp.tanh(x @ w) @ w))


def dots(x):  # test_remat_checkpoint_dots
  for _ in range(3):
    x = jnp.sin(jnp.dot(x, x, precision=HI))
  return x


def dots_batched(x):  # test_remat_checkpoint_dots_with_no_batch_dims2
  for _ in range(3):
    x = jnp.sin(jnp.einsum("nij,njk->nik", x, x, precision=HI))
  return x


def layer(params, x):  # pytree arguments
  return jnp.tanh(x @ params["w"] + params["b"])


def pytree_loss(policy):
  def loss(params, x):
    return jnp.sum(jax.checkpoint(layer, policy=policy)(params, x) ** 2)
  return loss


def scan_body(c, x):
  return jnp.tanh(jnp.dot(c, W3, precision=HI) + x), jnp.sum(c)


def scan_loss(policy, remat=True):
  body = jax.checkpoint(scan_body, policy=policy) if remat else scan_body

  def loss(c0, xs):
    c, ys = lax.scan(body, c0, xs)
    return jnp.sum(c) + jnp.sum(ys)
  return loss


def binom(funs, policy):  # test_remat_binomial_checkpointing
  if len(funs) == 1:
    return funs[0]
  f1 = binom(funs[: len(funs) // 2], policy)
  f2 = binom(funs[len(funs) // 2:], policy)
  return jax.checkpoint(lambda x: f1(f2(x)), policy=policy)


def recursive(funs):  # test_remat_recursive_checkpoint_recompute_counts
  if len(funs) == 1:
    return funs[0]
  if len(funs) == 2:
    f1, f2 = funs
    return lambda x: f1(f2(x))
  f1 = recursive(funs[: len(funs) // 2])
  f2 = recursive(funs[len(funs) // 2:])
  return lambda x: f1(jax.checkpoint(f2)(x))


def dots_in_scan(w):  # test_remat_checkpoint_dots_inside_scan
  @jax.checkpoint
  def g(x):
    for _ in range(3):
      x = jnp.sin(jnp.dot(x, w, precision=HI))
    return x
  return lax.scan(lambda x, _: (g(x), None), V5, None, length=2)[0]


def dots_in_scan_policy(w):
  @jax.checkpoint
  def g(x):
    for _ in range(3):
      x = jnp.sin(jnp.dot(x, w, precision=HI))
    return x
  g = jax.checkpoint(g.__wrapped__, policy=cp.dots_saveable)
  return lax.scan(lambda x, _: (g(x), None), V5, None, length=2)[0]


def normalize(jaxpr):
  text = re.sub(r"(\d)(:[a-z0-9]+\[\])", r"\1", str(jaxpr))
  text = re.sub(r"<function (\w+) at 0x[0-9A-Fa-fX]+>", r"\1", text)
  return text.encode("unicode_escape").decode()


def flat(tree):
  return [float(v) for leaf in jax.tree_util.tree_leaves(tree)
          for v in np.asarray(leaf, np.float64).ravel()]


def counts(fn, args, prims):
  """Counts primitives in the jaxpr of fn's vjp pullback at args."""
  out, pullback = jax.vjp(fn, *args)
  ct = jax.tree_util.tree_map(jnp.ones_like, out)
  text = str(jax.make_jaxpr(pullback)(ct))
  return " ".join(f"{p}={text.count(' ' + p + ' ') + text.count(' ' + p + '[')}"
                  for p in prims)


def main():
  records = []

  def put(name, text):
    records.append(f"{name}\t{text}")

  def values(name, tree):
    put(name, ",".join(repr(v) for v in flat(tree)))

  for pname, policy in POLICIES.items():
    c = lambda f: jax.checkpoint(f, policy=policy)
    values(f"sin2/{pname}", [c(sin2)(2.0), jax.grad(c(sin2))(2.0)])
    put(f"sin2/{pname}#count", counts(c(sin2), (2.0,), ["sin", "cos"]))
    values(f"mlp2/{pname}", jax.grad(c(mlp2), argnums=(0, 1))(W3, X23))
    put(f"mlp2/{pname}#count", counts(c(mlp2), (W3, X23), ["tanh", "dot_general"]))
    values(f"dots/{pname}", jax.grad(lambda x: jnp.sum(c(dots)(x)))(D22))
    put(f"dots/{pname}#count", counts(c(dots), (D22,), ["sin", "cos", "dot_general"]))
    values(f"dots_batched/{pname}",
           jax.grad(lambda x: jnp.sum(c(dots_batched)(x)))(D322))
    put(f"dots_batched/{pname}#count",
        counts(c(dots_batched), (D322,), ["sin", "cos", "dot_general"]))
    values(f"pytree/{pname}",
           jax.grad(pytree_loss(policy), argnums=(0, 1))({"w": W34, "b": B4}, X23))
    values(f"scan/{pname}", jax.grad(scan_loss(policy), argnums=(0, 1))(C3, XS43))
    values(f"nested/{pname}",
           [binom([jnp.sin] * 4, policy)(4.0), jax.grad(binom([jnp.sin] * 4, policy))(4.0)])
    put(f"nested/{pname}#count", counts(binom([jnp.sin] * 4, policy), (4.0,), ["sin", "cos"]))
  values("scan/unsaved", jax.grad(scan_loss(None, remat=False), argnums=(0, 1))(C3, XS43))
  for n in (4, 8, 16):
    f = recursive([jnp.sin] * n)
    values(f"recursive{n}/none", [f(0.5), jax.grad(f)(0.5)])
    put(f"recursive{n}/none#count", counts(f, (0.5,), ["sin", "cos"]))
  values("dots_in_scan/none", jax.grad(lambda w: jnp.sum(dots_in_scan(w)))(W5))
  put("dots_in_scan/none#count", counts(dots_in_scan, (W5,), ["sin", "cos", "dot_general"]))
  values("dots_in_scan/dots", jax.grad(lambda w: jnp.sum(dots_in_scan_policy(w)))(W5))
  put("dots_in_scan/dots#count",
      counts(dots_in_scan_policy, (W5,), ["sin", "cos", "dot_general"]))

  # test_remat_freevars: a checkpointed function closing over a traced value.
  def freevars(x):
    y = 2 * jnp.sin(x)
    return jax.checkpoint(lambda x: jnp.cos(x) * jnp.sin(y))(x)
  values("freevars/none", [freevars(2.0), jax.grad(freevars)(2.0)])
  # test_remat_higher_order_autodiff.
  hof = jax.checkpoint(lambda x: jnp.cos(jnp.sin(x)))
  values("higher_order/none", [jax.grad(jax.grad(hof))(3.0)])
  # test_remat_vmap: vmap of a checkpoint, and its jacobians.
  xs = jnp.arange(3.0)
  values("vmap/none", [jax.vmap(jax.checkpoint(sin2))(xs),
                       jax.jacrev(jax.checkpoint(sin2))(xs),
                       jax.vmap(jax.grad(jax.checkpoint(sin2)))(xs)])

  # make_jaxpr text, in parax's dialect: literals without their type, policies by name.
  for pname, policy in POLICIES.items():
    c = jax.checkpoint(sin2, policy=policy)
    put(f"jaxpr/sin2/{pname}", normalize(jax.make_jaxpr(c)(2.0)))
    put(f"jaxpr/grad_sin2/{pname}", normalize(jax.make_jaxpr(jax.grad(c))(2.0)))

  # test_remat_no_redundant_flops counts sin's eager evaluations; parax compares the sin
  # applications in make_jaxpr(grad(g)) instead: the forward one and the recomputed one.
  f = jax.checkpoint(lambda x, y: jnp.sin(x) * y)
  g = jax.jit(lambda y: f(2.0, y))
  text = str(jax.make_jaxpr(jax.grad(g))(3.0))
  put("no_redundant_flops/none#count", f"sin={text.count(' sin ')}")

  with open(OUT, "w") as out:
    out.write("\n".join(records) + "\n")
  print(f"wrote {len(records)} records to {OUT}")


if __name__ == "__main__":
  main()
