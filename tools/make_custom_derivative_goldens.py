"""Writes tests/golden/custom_derivative_cases.txt: what JAX gives for custom_jvp,
custom_vjp, jacfwd, jacrev, hessian, linearize and has_aux (ports of tests/api_test.py's
and tests/custom_api_test.py's cases). tests/transforms/custom_derivatives_test.cpp and
jacobian_test.cpp compute the same cases with parax.

Run:  XLA_FLAGS=--xla_force_host_platform_device_count=8 python3 tools/make_custom_derivative_goldens.py

Format: tests/support/golden.h's `name<TAB>text` records (text unicode_escape'd).
  <case>[k]   leaf k of the result (jax.tree.leaves order): `dtype|weak|shape|v0,v1,...`
  <case>#n    the number of leaves
  <case>      `!ErrorKind: message` when JAX raises
  jaxpr/<case>  make_jaxpr's text
"""
import functools
import os

import jax
import jax.numpy as jnp
from jax import lax
import numpy as np
from jax.sharding import PartitionSpec as P

jax.config.update("jax_platforms", "cpu")

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden",
                   "custom_derivative_cases.txt")

CASES = {}


def case(name):
  def deco(fn):
    CASES[name] = fn
    return fn
  return deco


JAXPRS = {}

# ---- custom_jvp ----


@jax.custom_jvp
def sin_jvp(x):
  return jnp.sin(x)


@sin_jvp.defjvp
def sin_jvp_rule(primals, tangents):
  x, = primals
  g, = tangents
  return sin_jvp(x), 2 * jnp.cos(x) * g


x3 = jnp.float32(3.)
ar3 = jnp.arange(3.)
xx = jnp.arange(6.).reshape(2, 3)

case("jvp/basic/value")(lambda: sin_jvp(x3))
case("jvp/basic/jvp")(lambda: jax.jvp(sin_jvp, (x3,), (jnp.float32(1.),)))
case("jvp/basic/grad")(lambda: jax.grad(sin_jvp)(x3))
case("jvp/basic/grad_grad")(lambda: jax.grad(jax.grad(sin_jvp))(x3))
case("jvp/basic/grad3")(lambda: jax.grad(jax.grad(jax.grad(sin_jvp)))(x3))
case("jvp/basic/grad4")(lambda: jax.grad(jax.grad(jax.grad(jax.grad(sin_jvp))))(x3))
case("jvp/basic/value_and_grad")(lambda: jax.value_and_grad(sin_jvp)(x3))
case("jvp/jit/value")(lambda: jax.jit(sin_jvp)(x3))
case("jvp/jit/jit")(lambda: jax.jit(jax.jit(sin_jvp))(x3))
case("jvp/jit/jit_of_jvp")(lambda: jax.jit(lambda x: jax.jvp(sin_jvp, (x,), (x,)))(x3))
case("jvp/jit/jvp_of_jit")(lambda: jax.jvp(jax.jit(sin_jvp), (x3,), (x3,)))
case("jvp/jit/jit_of_grad")(lambda: jax.jit(jax.grad(sin_jvp))(x3))
case("jvp/jit/grad_of_jit")(lambda: jax.grad(jax.jit(sin_jvp))(x3))
case("jvp/vmap/value")(lambda: jax.vmap(sin_jvp)(ar3))
case("jvp/vmap/vmap_vmap")(lambda: jax.vmap(jax.vmap(sin_jvp))(xx))
case("jvp/vmap/vmap_of_jvp")(lambda: jax.vmap(lambda x: jax.jvp(sin_jvp, (x,), (x,)))(ar3))
case("jvp/vmap/vmap_vmap_of_jvp")(
    lambda: jax.vmap(jax.vmap(lambda x: jax.jvp(sin_jvp, (x,), (x,))))(xx))
case("jvp/vmap/jvp_of_vmap")(lambda: jax.jvp(jax.vmap(sin_jvp), (ar3,), (ar3,)))
case("jvp/vmap/jvp_of_vmap_vmap")(lambda: jax.jvp(jax.vmap(jax.vmap(sin_jvp)), (xx,), (xx,)))
case("jvp/vmap/vmap_jvp_vmap")(
    lambda: jax.vmap(lambda x: jax.jvp(jax.vmap(sin_jvp), (x,), (x,)))(xx))
case("jvp/vmap/vmap_of_grad")(lambda: jax.vmap(jax.grad(sin_jvp))(ar3))
case("jvp/vmap/grad_of_vmap")(lambda: jax.grad(lambda x: jax.vmap(sin_jvp)(x).sum())(ar3))
case("jvp/vmap/axis1")(lambda: jax.vmap(sin_jvp, in_axes=1)(xx))
case("jvp/vmap/grad_axis1")(lambda: jax.grad(lambda x: jax.vmap(sin_jvp, in_axes=1, out_axes=1)(x).sum())(xx))
case("jvp/vmap/jit_vmap_grad")(lambda: jax.jit(jax.vmap(jax.grad(sin_jvp)))(ar3))


@jax.custom_jvp
def cos_half(x):
  return jnp.cos(2 * x) / 2.


@cos_half.defjvp
def cos_half_rule(primals, tangents):
  x, = primals
  g, = tangents
  return cos_half(x), 3 * g


def f2(x):
  y, _ = jax.jvp(cos_half, (x,), (x,))
  return y


def f3(x):
  y, _ = jax.jvp(f2, (x,), (x,))
  return y


x1 = jnp.float32(1.)
case("jvp/invariance/f")(lambda: jax.jvp(cos_half, (x1,), (x1,)))
case("jvp/invariance/f2")(lambda: jax.jvp(f2, (x1,), (x1,)))
case("jvp/invariance/f3")(lambda: jax.jvp(f3, (x1,), (x1,)))


@jax.custom_jvp
def tree_fn(x):
  return {'b': jnp.sin(x['a'])}


@tree_fn.defjvp
def tree_fn_rule(primals, tangents):
  x, = primals
  g, = tangents
  return tree_fn(x), {'b': 2 * jnp.cos(x['a']) * g['a']}


case("jvp/pytrees/value")(lambda: tree_fn({'a': x3}))
case("jvp/pytrees/jvp")(lambda: jax.jvp(tree_fn, ({'a': x3},), ({'a': x3},)))
case("jvp/pytrees/grad")(lambda: jax.grad(lambda x: tree_fn(x)['b'])({'a': x3}))

# Two arguments, one an integer (its tangent is float0; parax's stand-in is its dtype).
@jax.custom_jvp
def scale_pow(x, n):
  return x * n.astype(jnp.float32)


@scale_pow.defjvp
def scale_pow_rule(primals, tangents):
  x, n = primals
  tx, _ = tangents
  return scale_pow(x, n), 10. * tx * n


xv = jnp.array([1., 2., 3.], jnp.float32)
n2 = jnp.int32(2)
case("jvp/int_arg/value")(lambda: scale_pow(xv, n2))
case("jvp/int_arg/grad")(lambda: jax.grad(lambda x, n: scale_pow(x, n).sum())(xv, n2))
case("jvp/int_arg/vmap")(lambda: jax.vmap(scale_pow, (0, None))(xv, n2))

# A closure: the function and its rule capture an array.
cvec = jnp.array([0.5, -1., 2.], jnp.float32)


@jax.custom_jvp
def closure_fn(x):
  return cvec * jnp.sin(x)


@closure_fn.defjvp
def closure_rule(primals, tangents):
  x, = primals
  g, = tangents
  return closure_fn(x), cvec * 3. * g


case("jvp/closure/grad")(lambda: jax.grad(lambda x: closure_fn(x).sum())(xv))
case("jvp/closure/vmap_grad")(
    lambda: jax.vmap(jax.grad(lambda x: closure_fn(x).sum()))(jnp.stack([xv, 2 * xv])))
case("jvp/closure/jit_grad")(lambda: jax.jit(jax.grad(lambda x: closure_fn(x).sum()))(xv))


# The docs' log1pexp: the naive derivative is nan at 100.
@jax.custom_jvp
def log1pexp(x):
  return jnp.log(1. + jnp.exp(x))


@log1pexp.defjvp
def log1pexp_jvp(primals, tangents):
  x, = primals
  x_dot, = tangents
  ans = log1pexp(x)
  ans_dot = (1 - 1 / (1 + jnp.exp(x))) * x_dot
  return ans, ans_dot


case("jvp/log1pexp/grad100")(lambda: jax.grad(log1pexp)(jnp.float32(100.)))
case("jvp/log1pexp/vmap_jit_grad")(
    lambda: jax.vmap(jax.jit(jax.grad(log1pexp)))(jnp.arange(3.)))
case("jvp/log1pexp/grad_grad")(lambda: jax.grad(jax.grad(log1pexp))(jnp.float32(2.)))


# The docs' f(x) = x / (1 + sqrt(x)) with a rule defined at 0.
@jax.custom_jvp
def safe_div(x):
  return x / (1 + jnp.sqrt(x))


@safe_div.defjvp
def safe_div_jvp(primals, tangents):
  x, = primals
  x_dot, = tangents
  ans = safe_div(x)
  ans_dot = ((jnp.sqrt(x) + 2) / (2 * (jnp.sqrt(x) + 1)**2)) * x_dot
  return ans, ans_dot


case("jvp/safe_div/grad0")(lambda: jax.grad(safe_div)(jnp.float32(0.)))


# safe log: log where positive, with a gradient that is 0 (not nan) elsewhere.
@jax.custom_jvp
def safe_log(x):
  return jnp.log(jnp.where(x > 0, x, 1.))


@safe_log.defjvp
def safe_log_jvp(primals, tangents):
  x, = primals
  t, = tangents
  return safe_log(x), jnp.where(x > 0, t / jnp.where(x > 0, x, 1.), 0.)


sl = jnp.array([-1., 0., 0.5, 2.], jnp.float32)
case("jvp/safe_log/value")(lambda: safe_log(sl))
case("jvp/safe_log/grad")(lambda: jax.grad(lambda x: safe_log(x).sum())(sl))
case("jvp/safe_log/jacfwd")(lambda: jax.jacfwd(safe_log)(sl))
case("jvp/safe_log/jacrev")(lambda: jax.jacrev(safe_log)(sl))


# Two results, two arguments.
@jax.custom_jvp
def two_out(x, y):
  return x * y, x + y


@two_out.defjvp
def two_out_rule(primals, tangents):
  x, y = primals
  tx, ty = tangents
  return two_out(x, y), (y * tx + x * ty + 1. * tx, tx + ty)


case("jvp/two/grad01")(lambda: jax.grad(lambda x, y: two_out(x, y)[0] * two_out(x, y)[1],
                                        (0, 1))(x3, jnp.float32(2.)))
case("jvp/two/jacrev")(lambda: jax.jacrev(two_out, (0, 1))(xv, 2 * xv))


# A rule that does not call f: the primal out is the rule's.
@jax.custom_jvp
def plain(x):
  return jnp.sin(x)


@plain.defjvp
def plain_jvp(primals, tangents):
  x, = primals
  g, = tangents
  return jnp.sin(x), 2. * jnp.cos(x) * g


JAXPRS["grad_plain"] = lambda: jax.make_jaxpr(jax.grad(plain))(1.)
JAXPRS["jvp_plain"] = lambda: jax.make_jaxpr(lambda x, t: jax.jvp(plain, (x,), (t,)))(1., 1.)


# Errors (JAX checks a rule when it runs it: calling f alone works).
@jax.custom_jvp
def err_struct(x):
  return (x**2,)


@err_struct.defjvp
def err_struct_jvp(primals, tangents):
  x, = primals
  t, = tangents
  return err_struct(x), [2 * x * t, x]


case("jvp/err/structure_call")(lambda: err_struct(jnp.float32(2.)))
case("jvp/err/structure")(lambda: jax.jvp(err_struct, (jnp.float32(2.),), (jnp.float32(1.),)))


@jax.custom_jvp
def err_aval(x):
  return x**2


@err_aval.defjvp
def err_aval_jvp(primals, tangents):
  x, = primals
  t, = tangents
  return err_aval(x), jnp.reshape(t, (1,))


case("jvp/err/aval_call")(lambda: err_aval(jnp.float32(2.)))
case("jvp/err/aval")(lambda: jax.jvp(err_aval, (jnp.float32(2.),), (jnp.float32(1.),)))


@jax.custom_jvp
def err_primal(x):
  return x


@err_primal.defjvp
def err_primal_jvp(primals, tangents):
  (x,), (xdot,) = primals, tangents
  return (x, x), (xdot, xdot)


def scan_apply(f, x):
  # As JAX's test: f runs before its rule, so the rule's primal output is checked.
  y, _ = jax.lax.scan(lambda x, _: (f(x), None), x, None, length=1)
  return y


case("jvp/err/primal_structure")(
    lambda: jax.jvp(lambda x: scan_apply(err_primal, x), (jnp.float32(1.),), (jnp.float32(1.),)))


@jax.custom_jvp
def err_primal2(x):
  return x


@err_primal2.defjvp
def err_primal2_jvp(primals, tangents):
  (x,), (xdot,) = primals, tangents
  return jnp.zeros((3, *x.shape), x.dtype), xdot


case("jvp/err/primal_shape")(
    lambda: jax.jvp(lambda x: scan_apply(err_primal2, x), (jnp.float32(1.),), (jnp.float32(1.),)))


@jax.custom_jvp
def foo(x):
  return x**2


case("jvp/err/missing")(lambda: foo(jnp.float32(2.)))

# ---- custom_vjp ----


@jax.custom_vjp
def vsin(x):
  return jnp.sin(x)


def vsin_fwd(x):
  return vsin(x), jnp.cos(x)


def vsin_bwd(cos_x, g):
  return (2 * cos_x * g,)


vsin.defvjp(vsin_fwd, vsin_bwd)

case("vjp/basic/value")(lambda: vsin(x3))
case("vjp/basic/grad")(lambda: jax.grad(vsin)(x3))
case("vjp/basic/value_and_grad")(lambda: jax.value_and_grad(vsin)(x3))
case("vjp/basic/grad_grad")(lambda: jax.grad(jax.grad(vsin))(x3))
case("vjp/basic/grad3")(lambda: jax.grad(jax.grad(jax.grad(vsin)))(x3))
case("vjp/err/hessian")(lambda: jax.hessian(lambda x: vsin(x).sum())(ar3))
case("vjp/basic/vjp")(lambda: jax.vjp(vsin, x3)[1](jnp.float32(2.)))
case("vjp/jit/value")(lambda: jax.jit(vsin)(x3))
case("vjp/jit/jit_of_grad")(lambda: jax.jit(jax.grad(vsin))(x3))
case("vjp/jit/grad_of_jit")(lambda: jax.grad(jax.jit(vsin))(x3))
case("vjp/vmap/value")(lambda: jax.vmap(vsin)(ar3))
case("vjp/vmap/vmap_vmap")(lambda: jax.vmap(jax.vmap(vsin))(xx))
case("vjp/vmap/vmap_of_grad")(lambda: jax.vmap(jax.grad(vsin))(ar3))
case("vjp/vmap/vmap_vmap_grad")(lambda: jax.vmap(jax.vmap(jax.grad(vsin)))(xx))
case("vjp/vmap/grad_of_vmap")(lambda: jax.grad(lambda x: jax.vmap(vsin)(x).sum())(ar3))
case("vjp/vmap/grad_of_vmap_vmap")(
    lambda: jax.grad(lambda x: jax.vmap(jax.vmap(vsin))(x).sum())(xx))
case("vjp/vmap/axis1")(lambda: jax.vmap(vsin, in_axes=1)(xx))
case("vjp/vmap/grad_axis1")(lambda: jax.grad(lambda x: jax.vmap(vsin, in_axes=1, out_axes=1)(x).sum())(xx))
case("vjp/vmap/grad_of_vmap_closure")(
    lambda: jax.grad(lambda x: jax.vmap(lambda r: vmul(r, x[0]))(xx).sum())(ar3))
case("vjp/err/jvp")(lambda: jax.jvp(vsin, (x3,), (jnp.float32(1.),)))
case("vjp/err/jvp_vmap")(lambda: jax.jvp(jax.vmap(vsin), (ar3,), (jnp.ones(3),)))
case("vjp/err/jvp_jit")(lambda: jax.jvp(jax.jit(vsin), (x3,), (jnp.float32(1.),)))
case("vjp/err/jacfwd")(lambda: jax.jacfwd(vsin)(ar3))


@jax.custom_vjp
def vtree(x):
  return {'b': jnp.sin(x['a'])}


def vtree_fwd(x):
  return vtree(x), {'r': jnp.cos(x['a'])}


def vtree_bwd(res, g):
  cos_x = res['r']
  return ({'a': 2 * cos_x * g['b']},)


vtree.defvjp(vtree_fwd, vtree_bwd)
case("vjp/pytrees/value")(lambda: vtree({'a': x3}))
case("vjp/pytrees/grad")(lambda: jax.grad(lambda x: vtree(x)['b'])({'a': x3}))


@jax.custom_vjp
def vmul(x, y):
  return jnp.sin(x) * y


def vmul_fwd(x, y):
  return vmul(x, y), (jnp.cos(x), jnp.sin(x), y)


def vmul_bwd(res, g):
  c, s, y = res
  return (c * g * y, s * g)


vmul.defvjp(vmul_fwd, vmul_bwd)
case("vjp/two/grad01")(lambda: jax.grad(vmul, (0, 1))(x3, jnp.float32(2.)))
case("vjp/two/vmap_grad")(lambda: jax.vmap(jax.grad(vmul, (0, 1)), (0, None))(ar3, jnp.float32(2.)))
case("vjp/two/grad_vmap_shared")(
    lambda: jax.grad(lambda x, y: jax.vmap(vmul, (0, None))(x, y).sum(), (0, 1))(ar3,
                                                                               jnp.float32(2.)))
case("vjp/two/jacrev")(lambda: jax.jacrev(vmul, (0, 1))(xv, 2 * xv))


# clip_gradient, whose bounds get no cotangent: None cotangents for lo and hi.
@jax.custom_vjp
def _clip_gradient(lo, hi, x):
  return x


def clip_gradient_fwd(lo, hi, x):
  return x, (lo, hi)


def clip_gradient_bwd(res, g):
  lo, hi = res
  return (None, None, jnp.clip(g, lo, hi))


_clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)


def clip_gradient(x):
  lo = -0.1
  hi = x + 0.1
  return _clip_gradient(lo, hi, x)


case("vjp/clip_gradient/grad")(lambda: jax.grad(clip_gradient)(jnp.float32(0.1)))
case("vjp/clip_gradient/grad_big")(
    lambda: jax.grad(lambda x: 5. * clip_gradient(x))(jnp.float32(0.1)))


# Gradient checkpointing by hand: fwd saves the input only, bwd recomputes with vjp.
def sin2(x):
  return jnp.sin(jnp.sin(x))


@jax.custom_vjp
def ckpt(x):
  return sin2(x)


def ckpt_fwd(x):
  return ckpt(x), x


def ckpt_bwd(x, g):
  _, pullback = jax.vjp(sin2, x)
  return pullback(g)


ckpt.defvjp(ckpt_fwd, ckpt_bwd)
case("vjp/checkpoint/grad")(lambda: jax.grad(lambda x: ckpt(x).sum())(xv))
case("vjp/checkpoint/jit_grad")(lambda: jax.jit(jax.grad(lambda x: ckpt(x).sum()))(xv))
case("vjp/checkpoint/vmap_grad")(lambda: jax.vmap(jax.grad(ckpt))(xv))


# Closed-over values under vmap (test_closed_over_vmap_tracer, test_closed_over_tracer3).
def outer(x):
  @jax.custom_vjp
  def f(y):
    return x * y

  def f_fwd(y):
    return f(y), jnp.cos(y)

  def f_rev(cos_y, g):
    return (cos_y * g,)

  f.defvjp(f_fwd, f_rev)
  return f


def outer3(x):
  @jax.custom_vjp
  def f(y):
    return x * y

  def f_fwd(y):
    return f(y), (x, jnp.cos(y))

  def f_rev(res, g):
    x, cos_y = res
    return (cos_y * g * x,)

  f.defvjp(f_fwd, f_rev)
  return jax.grad(f)


case("vjp/closure/vmap")(lambda: jax.vmap(lambda x: outer(x)(jnp.float32(3.)))(ar3))
case("vjp/closure/vmap_grad")(lambda: jax.vmap(lambda x: outer3(x)(jnp.float32(3.)))(ar3))


# Errors.
@jax.custom_vjp
def ident(x):
  return x


def ident_fwd(x):
  return x, None


def ident_bwd(_, g):
  return (g, g)


ident.defvjp(ident_fwd, ident_bwd)
case("vjp/err/bwd_structure_call")(lambda: ident(jnp.float32(2.)))
case("vjp/err/bwd_structure")(lambda: jax.grad(ident)(jnp.float32(2.)))


@jax.custom_vjp
def two_ident(x, y):
  return x * y


def two_ident_fwd(x, y):
  return two_ident(x, y), None


def two_ident_bwd(_, g):
  return 2. * g


two_ident.defvjp(two_ident_fwd, two_ident_bwd)
case("vjp/err/bwd_not_tuple")(lambda: jax.grad(two_ident)(jnp.float32(3.), jnp.float32(1.)))


@jax.custom_vjp
def shape_foo(x, y):
  return x


def shape_foo_fwd(x, y):
  return x, None


def shape_foo_bwd(_, g):
  return jnp.zeros(3), jnp.zeros(3)


shape_foo.defvjp(shape_foo_fwd, shape_foo_bwd)
case("vjp/err/bwd_shape")(
    lambda: jax.grad(lambda x, y: shape_foo(x, y * y).sum(), 1)(jnp.ones(3), jnp.ones(4)))


@jax.custom_vjp
def fwd_bad(x):
  return x


def fwd_bad_fwd(x):
  return (x, x), None


def fwd_bad_bwd(_, g):
  return g


fwd_bad.defvjp(fwd_bad_fwd, fwd_bad_bwd)
case("vjp/err/fwd_structure")(lambda: jax.grad(lambda x: scan_apply(fwd_bad, x))(jnp.float32(1.)))


@jax.custom_vjp
def fwd_bad2(x):
  return x


def fwd_bad2_fwd(x):
  return jnp.zeros((3, *x.shape), x.dtype), None


fwd_bad2.defvjp(fwd_bad2_fwd, fwd_bad_bwd)
case("vjp/err/fwd_shape")(lambda: jax.grad(lambda x: scan_apply(fwd_bad2, x))(jnp.float32(1.)))


@jax.custom_vjp
def vfoo(x):
  return x**2


case("vjp/err/missing")(lambda: vfoo(jnp.float32(2.)))

# ---- inside control flow (JAX's test_initial_style, test_multiple_rule_invocations) ----
def in_scan(f):
  def g(x):
    out, _ = jax.lax.scan(lambda c, _: (f(c), None), x, None, length=2)
    return out
  return g


def in_cond(f):
  return lambda x: jax.lax.cond(x > 0, f, lambda y: 2. * y, x)


case("cf/jvp/scan_grad")(lambda: jax.grad(in_scan(sin_jvp))(x3))
case("cf/jvp/scan_grad_grad")(lambda: jax.grad(jax.grad(in_scan(sin_jvp)))(x3))
case("cf/jvp/scan_jit_grad")(lambda: jax.jit(jax.grad(in_scan(sin_jvp)))(x3))
case("cf/jvp/scan_vmap_grad")(lambda: jax.vmap(jax.grad(in_scan(sin_jvp)))(ar3))
case("cf/jvp/scan_jvp")(lambda: jax.jvp(in_scan(sin_jvp), (x3,), (x1,)))
case("cf/jvp/cond_grad")(lambda: jax.grad(in_cond(sin_jvp))(x3))
case("cf/jvp/cond_vmap_grad")(lambda: jax.vmap(jax.grad(in_cond(sin_jvp)))(ar3 - 1.))
case("cf/vjp/scan_grad")(lambda: jax.grad(in_scan(vsin))(x3))
case("cf/vjp/scan_jit_grad")(lambda: jax.jit(jax.grad(in_scan(vsin)))(x3))
case("cf/vjp/scan_vmap_grad")(lambda: jax.vmap(jax.grad(in_scan(vsin)))(ar3))
case("cf/vjp/cond_grad")(lambda: jax.grad(in_cond(vsin))(x3))


@jax.custom_jvp
def expit(x):
  return 1 / (1 + jax.lax.exp(-x))


@expit.defjvp
def _expit_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  ans = expit(x)
  t_out = t * ans * (1 - ans)
  return ans, t_out


def scanned_fun(c, _):
  return [expit(c[0])] + [c[i - 1] + c[i] for i in range(1, len(c))], None


def expit_foo(x):
  zero = jnp.zeros_like(x)
  c, _ = jax.lax.scan(scanned_fun, [x, zero, zero, zero, zero], None, length=10)
  return c[-1]


case("cf/expit/value")(lambda: expit_foo(x3))
case("cf/expit/grad")(lambda: jax.grad(expit_foo)(x3))
case("cf/expit/grad_vmap")(lambda: jax.grad(lambda x: jax.vmap(expit_foo)(x).sum())(ar3))

# A collective over the vmapped axis inside the function and its rule
# (test_initial_style_vmap_with_collective).
@jax.custom_jvp
def psum_fn(x):
  return jax.lax.psum(x, 'foo')


@psum_fn.defjvp
def psum_fn_jvp(xs, ts):
  x, = xs
  t, = ts
  return jax.lax.psum(x, 'foo'), 3. * t


case("cf/collective/vmap")(lambda: jax.vmap(lambda _, x: psum_fn(x), axis_name='foo',
                                            in_axes=(0, None), out_axes=None)(ar3, x1))
case("cf/collective/vmap_jvp")(lambda: jax.vmap(
    lambda x: jax.jvp(psum_fn, (x,), (x,)), axis_name='foo')(ar3))
case("cf/collective/vmap_grad")(lambda: jax.vmap(jax.grad(psum_fn), axis_name='foo')(ar3))

@jax.custom_vjp
def psum_vjp(x):
  return jax.lax.psum(x, 'foo')


psum_vjp.defvjp(lambda x: (jax.lax.psum(x, 'foo'), x), lambda x, g: (3. * g * x,))
case("cf/collective/vjp_vmap")(lambda: jax.vmap(lambda _, x: psum_vjp(x), axis_name='foo',
                                                in_axes=(0, None), out_axes=None)(ar3, x1))
case("cf/collective/vjp_vmap_grad")(
    lambda: jax.vmap(jax.grad(psum_vjp), axis_name='foo')(ar3))

# ---- inside shard_map over 8 devices: the rules see each device's block ----
mesh = jax.make_mesh((8,), ('i',), axis_types=(jax.sharding.AxisType.Auto,))
x16 = jax.device_put(jnp.arange(16., dtype=jnp.float32) / 4,
                     jax.sharding.NamedSharding(mesh, P('i')))


@jax.custom_jvp
def normed(x):
  return x / jax.lax.psum(jnp.sum(x), 'i')


@normed.defjvp
def normed_jvp(primals, tangents):
  x, = primals
  t, = tangents
  s = jax.lax.psum(jnp.sum(x), 'i')
  return normed(x), 2. * t / s


def sm(f):
  return jax.shard_map(f, mesh=mesh, in_specs=P('i'), out_specs=P('i'))


case("shard/jvp/value")(lambda: sm(normed)(x16))
case("shard/jvp/grad")(lambda: jax.grad(lambda x: (sm(normed)(x) * x16).sum())(x16))
case("shard/jvp/jit_grad")(lambda: jax.jit(jax.grad(lambda x: (sm(normed)(x) * x16).sum()))(x16))
case("shard/jvp/jvp")(lambda: jax.jvp(sm(normed), (x16,), (jnp.ones(16),)))
case("shard/vjp/value")(lambda: sm(vsin)(x16))
case("shard/vjp/grad")(lambda: jax.grad(lambda x: sm(vsin)(x).sum())(x16))
case("shard/vjp/jit_grad")(lambda: jax.jit(jax.grad(lambda x: sm(vsin)(x).sum()))(x16))
case("shard/vjp/grad_inside")(lambda: sm(jax.grad(lambda x: vsin(x).sum()))(x16))

# ---- jacobians ----
jx = jnp.array([0.5, -1., 2.], jnp.float32)
jy = jnp.array([1.5, 0.25], jnp.float32)
jA = jnp.array([[1., 2.], [3., -1.]], jnp.float32)


def jf(x):
  return jnp.sin(x) * jnp.sum(x**2)


def jg(x, y):
  return jnp.outer(x, y) + jnp.sum(jnp.sin(x))


case("jac/fwd/vec")(lambda: jax.jacfwd(jf)(jx))
case("jac/rev/vec")(lambda: jax.jacrev(jf)(jx))
case("jac/fwd/mat")(lambda: jax.jacfwd(lambda a: a @ a)(jA))
case("jac/rev/mat")(lambda: jax.jacrev(lambda a: a @ a)(jA))
case("jac/fwd/argnums01")(lambda: jax.jacfwd(jg, (0, 1))(jx, jy))
case("jac/rev/argnums01")(lambda: jax.jacrev(jg, (0, 1))(jx, jy))
case("jac/fwd/argnum1")(lambda: jax.jacfwd(jg, 1)(jx, jy))
case("jac/rev/argnum1")(lambda: jax.jacrev(jg, 1)(jx, jy))
case("jac/rev/scalar")(lambda: jax.jacrev(lambda x: jnp.sum(jnp.sin(x)))(jx))
case("jac/fwd/scalar_in")(lambda: jax.jacfwd(lambda s: jnp.array([s, s * s, jnp.sin(s)]))(
    jnp.float32(2.)))


def tree_f(d):
  return (d['a'] * jnp.sum(d['b']), jnp.sum(d['a']) * d['b'][0])


tree_in = {'a': jx, 'b': jy}
case("jac/fwd/tree")(lambda: jax.jacfwd(tree_f)(tree_in))
case("jac/rev/tree")(lambda: jax.jacrev(tree_f)(tree_in))
case("jac/hessian/vec")(lambda: jax.hessian(lambda x: jnp.sum(jnp.sin(x) * x**2))(jx))
case("jac/hessian/mat")(lambda: jax.hessian(lambda a: jnp.sum(jnp.tanh(a @ a)))(jA))
case("jac/hessian/argnums")(
    lambda: jax.hessian(lambda x, y: jnp.sum(jnp.outer(x, y)**2), (0, 1))(jx, jy))
case("jac/jit_jacfwd")(lambda: jax.jit(jax.jacfwd(jf))(jx))
case("jac/vmap_jacrev")(lambda: jax.vmap(jax.jacrev(jf))(jnp.stack([jx, 2 * jx])))
case("jac/fwd_custom_jvp")(lambda: jax.jacfwd(sin_jvp)(ar3))
case("jac/rev_custom_vjp")(lambda: jax.jacrev(vsin)(ar3))
case("jac/hessian_custom_jvp")(lambda: jax.hessian(lambda x: jnp.sum(log1pexp(x) * x))(jx))

ai3 = jnp.arange(3)
case("jac/err/fwd_int_in")(lambda: jax.jacfwd(lambda x: x * 2.)(ai3))
case("jac/err/rev_int_in")(lambda: jax.jacrev(lambda x: x * 2.)(ai3))
case("jac/err/hessian_int_in")(lambda: jax.hessian(lambda x: x * 2.)(ai3))
case("jac/err/rev_int_out")(lambda: jax.jacrev(lambda x: (x * 2).astype(jnp.int32))(ar3))
case("jac/fwd_int_out")(lambda: jax.jacfwd(lambda x: (x * 2).astype(jnp.int32))(ar3))

# linearize and has_aux
case("lin/basic")(lambda: (lambda r: (r[0], r[1](jnp.ones(3))))(
    jax.linearize(lambda x: jnp.sin(x) * jnp.cos(x), jx)))
case("lin/two")(lambda: (lambda r: (r[0], r[1](jx, 2 * jx)))(
    jax.linearize(lambda x, y: x * y + jnp.sin(x), jx, jx)))
case("lin/custom_jvp")(lambda: (lambda r: (r[0], r[1](jnp.ones(3))))(
    jax.linearize(sin_jvp, ar3)))
case("lin/custom_vjp")(lambda: jax.linearize(vsin, ar3)[1](jnp.ones(3)))


def aux_f(x):
  return jnp.sum(jnp.sin(x)), {'sq': x * x}


case("aux/grad")(lambda: jax.grad(aux_f, has_aux=True)(jx))
case("aux/value_and_grad")(lambda: jax.value_and_grad(aux_f, has_aux=True)(jx))
case("aux/grad_argnums")(
    lambda: jax.grad(lambda x, y: (jnp.sum(x * y), x + y), (0, 1), has_aux=True)(jx, jx))
case("aux/vjp")(lambda: (lambda r: (r[0], r[1](jnp.float32(2.)), r[2]))(
    jax.vjp(aux_f, jx, has_aux=True)))
case("aux/jvp")(lambda: jax.jvp(aux_f, (jx,), (jnp.ones(3),), has_aux=True))


# has_aux on the Jacobians: (jacobian of out, aux), aux not differentiated (an int leaf too).
def jac_aux(x):
  return jnp.sin(x) * jnp.sum(x * x), {'sq': x * x, 'n': jnp.sum(x > 0)}


def jac_aux2(x, y):
  return (jnp.outer(x, y), x * 2.), jnp.sum(x) + jnp.sum(y)


case("aux/jacfwd")(lambda: jax.jacfwd(jac_aux, has_aux=True)(jx))
case("aux/jacrev")(lambda: jax.jacrev(jac_aux, has_aux=True)(jx))
case("aux/jacfwd_argnums01")(lambda: jax.jacfwd(jac_aux2, (0, 1), has_aux=True)(jx, jy))
case("aux/jacrev_argnums01")(lambda: jax.jacrev(jac_aux2, (0, 1), has_aux=True)(jx, jy))
case("aux/jacfwd_argnum1")(lambda: jax.jacfwd(jac_aux2, 1, has_aux=True)(jx, jy))
case("aux/jacrev_argnum1")(lambda: jax.jacrev(jac_aux2, 1, has_aux=True)(jx, jy))
case("aux/hessian")(
    lambda: jax.hessian(lambda x: (jnp.sum(jnp.sin(x) * x * x), x * 3.), has_aux=True)(jx))
case("aux/hessian_argnums01")(lambda: jax.hessian(
    lambda x, y: (jnp.sum(jnp.outer(x, y)**2), {'y': y}), (0, 1), has_aux=True)(jx, jy))
case("aux/jit_jacfwd")(lambda: jax.jit(jax.jacfwd(jac_aux, has_aux=True))(jx))
case("aux/jacrev_of_jit")(lambda: jax.jacrev(jax.jit(jac_aux), has_aux=True)(jx))
case("aux/vmap_jacrev")(
    lambda: jax.vmap(jax.jacrev(jac_aux, has_aux=True))(jnp.stack([jx, 2 * jx])))
case("aux/vmap_jacfwd")(
    lambda: jax.vmap(jax.jacfwd(jac_aux, has_aux=True))(jnp.stack([jx, -jx])))
case("aux_err/not_pair")(lambda: jax.grad(lambda x: (jnp.sum(x), x, x), has_aux=True)(jx))


# ---- nondiff_argnums (test_nondiff_argnums, test_nondiff_arg_vmap_tracer, ...) ----


@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
def app(f, x):
  return f(x)


def app_jvp(f, primals, tangents):
  (x,), (t,) = primals, tangents
  return app(f, x), 3 * t


app.defjvp(app_jvp)
double = lambda y: 2 * y
case("nondiff/jvp/value")(lambda: app(double, x3))
case("nondiff/jvp/jvp")(lambda: jax.jvp(lambda x: app(double, x), (x1,), (x1,)))
case("nondiff/jvp/grad")(lambda: jax.grad(lambda x: app(jnp.sin, x))(x3))
case("nondiff/jvp/jit_grad")(lambda: jax.jit(jax.grad(lambda x: app(jnp.sin, x)))(x3))
case("nondiff/jvp/vmap_grad")(lambda: jax.vmap(jax.grad(lambda x: app(jnp.sin, x)))(ar3))
case("nondiff/jvp/grad_grad")(lambda: jax.grad(jax.grad(lambda x: app(jnp.sin, x)))(x3))


@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
def nd_mul(x, y):
  return x * y


def nd_mul_jvp(x, primals, tangents):
  (y,), (t_y,) = primals, tangents
  return nd_mul(x, y), 5 * t_y


nd_mul.defjvp(nd_mul_jvp)
case("nondiff/jvp/vmap_tracer")(lambda: jax.jvp(
    lambda y: jax.vmap(nd_mul)(jnp.array([2.]), y), (jnp.array([3.]),), (jnp.array([1.]),)))
# The nondiff array is held constant (JAX stops its gradient).
case("nondiff/jvp/held_constant")(lambda: jax.grad(lambda x: nd_mul(x, x))(x3))


@functools.partial(jax.custom_jvp, nondiff_argnums=(0, 2))
def scaled(k, x, g):
  return g(k * x)


def scaled_jvp(k, g, primals, tangents):
  (x,), (t,) = primals, tangents
  return scaled(k, x, g), k * t + 1.


scaled.defjvp(scaled_jvp)
case("nondiff/jvp/two_static")(lambda: jax.value_and_grad(lambda x: scaled(2., x, jnp.sin))(x3))


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def vapp(f, x):
  return f(x)


def vapp_fwd(f, x):
  return vapp(f, x), jnp.cos(x)


def vapp_rev(f, cos_x, g):
  return (cos_x * g,)


vapp.defvjp(vapp_fwd, vapp_rev)
case("nondiff/vjp/value")(lambda: vapp(double, x3))
case("nondiff/vjp/value_and_grad")(lambda: jax.value_and_grad(lambda x: vapp(double, x))(x1))


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def lst_f(lst, x):
  return lst[0] * jnp.sin(x)


def lst_fwd(lst, x):
  return lst_f(lst, x), jnp.cos(x)


def lst_bwd(lst, cos_x, g):
  return (lst[0] * cos_x * g,)


lst_f.defvjp(lst_fwd, lst_bwd)
lst = [2.]
case("nondiff/vjp/list_value")(lambda: lst_f(lst, x3))
case("nondiff/vjp/list_grad")(lambda: jax.grad(lst_f, argnums=1)(lst, x3))
case("nondiff/vjp/list_jit_grad")(lambda: jax.jit(lambda x: jax.grad(lst_f, argnums=1)(lst, x))(x3))
case("nondiff/vjp/list_vmap_grad")(lambda: jax.vmap(jax.grad(lambda x: lst_f(lst, x)))(ar3))


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def tr_f(x, y):
  return x * y


def tr_fwd(x, y):
  return tr_f(x, y), jnp.cos(y)


def tr_rev(x, cos_y, g):
  return (cos_y * g,)


tr_f.defvjp(tr_fwd, tr_rev)
case("nondiff/vjp/concrete_array")(lambda: jax.grad(lambda y: tr_f(x3, y))(x1))
case("nondiff/vjp/err/jit_tracer")(lambda: jax.jit(lambda x, y: tr_f(x, y))(x3, x1))
case("nondiff/vjp/err/grad_jit_tracer")(
    lambda: jax.grad(jax.jit(lambda x, y: tr_f(x, y)), 1)(x3, x1))


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def tr_nested(xs, y):
  return xs[0] * y


tr_nested.defvjp(lambda xs, y: (tr_nested(xs, y), jnp.cos(y)), lambda xs, cos_y, g: (cos_y * g,))
case("nondiff/vjp/err/nested_tracer")(lambda: jax.jit(lambda x, y: tr_nested((x,), y))(x3, x1))

# ---- symbolic zeros (test_symbolic_zero_custom_jvp and friends) ----


def sz_f(static_scalar, static_array, dyn_scalar, dyn_array):
  return static_scalar + dyn_scalar, static_array + dyn_array


sz_f = jax.custom_jvp(sz_f)


@functools.partial(sz_f.defjvp, symbolic_zeros=True)
def sz_f_jvp(primals, tangents):
  static_scalar, *_ = primals
  t_static, t_static_arr, t_dyn_scalar, t_dyn_array = tangents
  assert type(t_static) is jax.custom_derivatives.SymbolicZero
  assert type(t_static_arr) is jax.custom_derivatives.SymbolicZero
  return sz_f(*primals), (static_scalar + 90, t_dyn_array + 91)


def sz_vmap(fun):
  def _fun(*args):
    args = jax.tree.map(lambda x: lax.broadcast(x, (1,)), args)
    out = jax.vmap(fun)(*args)
    return jax.tree.map(lambda x: x[0], out)
  return _fun


def sz_run(maybe_jit, maybe_vmap):
  def g(dyn_scalar, dyn_array):
    f_ = sz_vmap(sz_f) if maybe_vmap else sz_f
    return f_(jnp.float32(1.), jnp.array([2., 3.]), dyn_scalar, dyn_array)
  run = lambda p, t: jax.jvp(g, p, t)
  if maybe_jit:
    run = jax.jit(run)
  return run((jnp.float32(4.), jnp.array([5., 6.])), (jnp.float32(7.), jnp.array([8., 9.])))


for jit_, vmap_ in [(False, False), (True, False), (False, True), (True, True)]:
  case(f"symzero/jvp/{'jit' if jit_ else 'nojit'}_{'vmap' if vmap_ else 'novmap'}")(
      functools.partial(sz_run, jit_, vmap_))


@jax.custom_jvp
def sz_mul(x, y):
  return x * y


@functools.partial(sz_mul.defjvp, symbolic_zeros=True)
def sz_mul_jvp(primals, tangents):
  x, y = primals
  tx, ty = tangents
  Zero = jax.custom_derivatives.SymbolicZero
  return sz_mul(x, y), (ty if type(tx) is Zero else tx if type(ty) is Zero else tx + ty)


x2 = jnp.float32(2.)
case("symzero/jvp/jacfwd_jit")(lambda: jax.jacfwd(jax.jit(sz_mul))(jnp.float32(.1), jnp.float32(.2)))
case("symzero/jvp/grad_x")(lambda: jax.grad(sz_mul)(x3, x2))
case("symzero/jvp/grad_both")(lambda: jax.grad(sz_mul, (0, 1))(x3, x2))
case("symzero/jvp/jvp_y_only")(lambda: jax.jvp(lambda y: sz_mul(x3, y), (x2,), (x1,)))


@jax.custom_jvp
def sz_out(x, y):
  return x * y


@functools.partial(sz_out.defjvp, symbolic_zeros=True)
def sz_out_jvp(primals, tangents):
  x, y = primals
  _, y_dot = tangents
  return sz_out(x, y), y_dot


case("symzero/jvp/zero_output_grad_vmap")(
    lambda: jax.grad(lambda x, y: jax.vmap(sz_out)(x, y).sum())(jnp.ones(3), jnp.ones(3)))
case("symzero/jvp/zero_output_jvp")(lambda: jax.jvp(lambda x: sz_out(x, x3), (x2,), (x1,)))


def sz_body(x_y, _):
  x, y = x_y
  return (sz_first(x, y), x), None


@jax.custom_jvp
def sz_first(x, y):
  return x


@functools.partial(sz_first.defjvp, symbolic_zeros=True)
def sz_first_jvp(primals, tangents):
  x, _ = primals
  x_dot, _ = tangents
  return x, x_dot


case("symzero/jvp/scan_grad")(
    lambda: jax.grad(lambda x: lax.scan(sz_body, (x, 1.), xs=None, length=2)[0][0])(x1))



@jax.custom_jvp
def sz_bad(x, y):
  return x * y


@functools.partial(sz_bad.defjvp, symbolic_zeros=True)
def sz_bad_jvp(primals, tangents):
  x, y = primals
  tx, ty = tangents
  Zero = jax.custom_derivatives.SymbolicZero
  if type(tx) is Zero:  # a bad output only for this pattern: raised when it is traced
    return sz_bad(x, y), jnp.reshape(ty, (1,))
  return sz_bad(x, y), tx * y if type(ty) is Zero else tx * y + ty * x


case("symzero/err/pattern_shape")(lambda: jax.jvp(lambda y: sz_bad(x3, y), (x2,), (x1,)))
case("symzero/err/pattern_ok")(lambda: jax.grad(sz_bad)(x3, x2))

# ---- bwd returning None (test_bwd_nones, _vmap, _pytree) ----


@jax.custom_vjp
def bn_f(x, y):
  return x * jnp.sin(y)


bn_f.defvjp(lambda x, y: (bn_f(x, y), jnp.cos(y)), lambda cos, g: (None, 2 * cos * g))
case("bwd_none/grad")(lambda: jax.grad(lambda x: bn_f(x, x))(x3))
case("bwd_none/grad_vmap")(lambda: jax.grad(lambda x: jax.vmap(bn_f)(x, x).sum())(ar3))
case("bwd_none/grad_both")(lambda: jax.grad(bn_f, (0, 1))(x3, x2))


@jax.custom_vjp
def bn_tree(xs, y):
  x1_, x2_ = xs
  return x1_ * x2_ * jnp.sin(y)


bn_tree.defvjp(lambda xs, y: (bn_tree(xs, y), jnp.cos(y)), lambda cos, g: (None, 2 * cos * g))
case("bwd_none/pytree")(lambda: jax.grad(lambda x: bn_tree((x, x), x))(x3))
case("bwd_none/pytree_argnums")(lambda: jax.grad(bn_tree, (0, 1))((x3, x2), x1))

# ---- printed programs ----
JAXPRS["custom_jvp_call"] = lambda: jax.make_jaxpr(sin_jvp)(1.)
JAXPRS["custom_vjp_call"] = lambda: jax.make_jaxpr(vsin)(1.)
JAXPRS["custom_jvp_call_nondiff"] = lambda: jax.make_jaxpr(lambda x: app(jnp.sin, x))(1.)
JAXPRS["custom_jvp_call_symbolic"] = lambda: jax.make_jaxpr(sz_mul)(1., 2.)


def record(x):
  a = np.asarray(x)
  dt = x.dtype.name if hasattr(x, "dtype") else a.dtype.name
  weak = "w" if getattr(x, "weak_type", False) else "s"
  shape = ",".join(str(d) for d in a.shape)
  vals = ",".join(repr(float(v)) if a.dtype.kind == "f" else str(int(v)) for v in a.ravel())
  return f"{dt}|{weak}|{shape}|{vals}"


def esc(s):
  return s.encode("unicode_escape").decode("ascii")


def main():
  lines = []
  for name, fn in CASES.items():
    try:
      out = fn()
    except Exception as e:  # noqa: BLE001
      kind = type(e).__name__
      if kind == "UnexpectedTracerError":
        kind = "UnexpectedTracerError"
      lines.append(f"{name}\t{esc('!' + kind + ': ' + str(e))}")
      continue
    leaves = jax.tree.leaves(out)
    lines.append(f"{name}#n\t{len(leaves)}")
    for k, leaf in enumerate(leaves):
      lines.append(f"{name}[{k}]\t{esc(record(leaf))}")
  for name, fn in JAXPRS.items():
    lines.append(f"jaxpr/{name}\t{esc(str(fn()))}")
  with open(OUT, "w") as f:
    f.write("\n".join(lines) + "\n")
  print(f"wrote {len(lines)} records to {OUT}")


if __name__ == "__main__":
  main()
