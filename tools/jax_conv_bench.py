"""JAX:CPU's side of parax_conv_bench (benchmarks/conv_bench.cpp): its layer, in JAX.

The layer (ResNet-style: N=8, C=64, 56x56, 3x3 kernel, 64 out, stride 1, SAME, NCHW/OIHW,
float32) runs forward alone (`forward`) and forward+backward (`forward_backward`: the
result and both operands' gradients from one jitted vjp). parax_conv_bench starts this
script with --serve and times both, interleaved with its own variants (tools/jax_peer.py).
Run alone: python3 tools/jax_conv_bench.py [--reps=N] prints JAX's best of N.
"""
import jax_peer  # first: it sets XLA_FLAGS before JAX starts

import jax
import jax.numpy as jnp
from jax import lax

N, C, H, W, O, K = 8, 64, 56, 56, 64, 3


def conv(x, w):
    return lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                    dimension_numbers=("NCHW", "OIHW", "NCHW"))


@jax.jit
def forward(x, w):
    return conv(x, w)


@jax.jit
def forward_backward(x, w, g):
    out, vjp = jax.vjp(conv, x, w)
    dx, dw = vjp(g)
    return out, dx, dw


def main():
    k = jax.random.split(jax.random.key(0), 3)
    x = jax.random.normal(k[0], (N, C, H, W), jnp.float32)
    w = jax.random.normal(k[1], (O, C, K, K), jnp.float32)
    g = jax.random.normal(k[2], (N, O, H, W), jnp.float32)
    jax_peer.main({
        "forward": lambda: forward(x, w),
        "forward_backward": lambda: forward_backward(x, w, g),
    })


if __name__ == "__main__":
    main()
