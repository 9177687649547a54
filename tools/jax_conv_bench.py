"""Times JAX:CPU on conv_bench's layer and writes benchmarks/jax_cpu/conv.txt.

The layer (ResNet-style: N=8, C=64, 56x56, 3x3 kernel, 64 out, stride 1, SAME, NCHW/OIHW)
runs forward alone and forward+backward (the result and both operands' gradients from
one jitted vjp), best of several repetitions. parax_conv_bench reads the file and
divides. Run: python3 tools/jax_conv_bench.py (on an otherwise idle machine).
"""
import os
import time

import jax
import jax.numpy as jnp
from jax import lax

N, C, H, W, O, K = 8, 64, 56, 56, 64, 3
REPS = 10


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


def best_ms(f, *args):
    jax.block_until_ready(f(*args))
    best = float("inf")
    for _ in range(REPS):
        t = time.perf_counter()
        jax.block_until_ready(f(*args))
        best = min(best, time.perf_counter() - t)
    return best * 1e3


def main():
    k = jax.random.split(jax.random.key(0), 3)
    x = jax.random.normal(k[0], (N, C, H, W), jnp.float32)
    w = jax.random.normal(k[1], (O, C, K, K), jnp.float32)
    g = jax.random.normal(k[2], (N, O, H, W), jnp.float32)
    fwd = best_ms(forward, x, w)
    fb = best_ms(forward_backward, x, w, g)
    path = os.path.join(os.path.dirname(__file__), "..", "benchmarks", "jax_cpu", "conv.txt")
    with open(path, "w") as f:
        f.write(f"# JAX {jax.__version__} CPU, {os.cpu_count()} cores, best of {REPS} (ms);"
                f" layer N={N} C={C} {H}x{W} {K}x{K} O={O} SAME NCHW/OIHW float32\n")
        f.write(f"conv2d_forward {fwd:.3f}\n")
        f.write(f"conv2d_forward_backward {fb:.3f}\n")
    print(open(path).read())


if __name__ == "__main__":
    main()
