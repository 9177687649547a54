#!/usr/bin/env python3
"""Writes tests/golden/optax_cases.txt: optax's parameter trajectories (10 steps) for the
optimizers parax::optax ports, from fixed parameters and fixed per-step gradients (both
written to the file, so the C++ test replays the same inputs). Needs optax (pip install
optax); the test suite never does.

Records (golden.h format, values as float32 printed with 9 significant digits):
  inputs#w, inputs#b              initial parameters w f32[3,4], b f32[4]
  inputs#gw<t>, inputs#gb<t>      gradients at step t (0..9)
  <case>#w<t>, <case>#b<t>        parameters after step t
"""
import os

import jax
import jax.numpy as jnp
import numpy as np
import optax

STEPS = 10


def f32(x):
    return np.asarray(x, dtype=np.float32)


def fmt(a):
    return ",".join(f"{float(v):.9g}" for v in np.ravel(a))


CASES = {
    "sgd": lambda: optax.sgd(0.1),
    "sgd_momentum": lambda: optax.sgd(0.1, momentum=0.9),
    "sgd_nesterov": lambda: optax.sgd(0.1, momentum=0.9, nesterov=True),
    "adam": lambda: optax.adam(1e-2),
    "adam_eps_root": lambda: optax.adam(1e-2, b1=0.8, b2=0.99, eps=1e-6, eps_root=1e-8),
    "adam_nesterov": lambda: optax.adam(1e-2, nesterov=True),
    "adamw": lambda: optax.adamw(1e-2, weight_decay=0.1),
    "clip_sgd": lambda: optax.chain(optax.clip_by_global_norm(1.0), optax.sgd(0.1)),
    "sgd_linear": lambda: optax.sgd(optax.linear_schedule(0.1, 0.01, 5, 2)),
    "adam_cosine": lambda: optax.adam(optax.cosine_decay_schedule(1e-2, 8, alpha=0.1)),
    "schedule_constant": lambda: optax.chain(
        optax.scale_by_schedule(optax.constant_schedule(-0.5))),
    "chain_clip_adamw_cosine": lambda: optax.chain(
        optax.clip_by_global_norm(0.5),
        optax.adamw(optax.cosine_decay_schedule(3e-2, 6), weight_decay=1e-2)),
}


def main():
    i = np.arange(12, dtype=np.float64)
    w0 = f32(np.sin(0.7 * i + 0.3).reshape(3, 4))
    b0 = f32(np.cos(1.1 * np.arange(4) + 0.2))
    grads = []
    for t in range(STEPS):
        scale = 4.0 if t % 3 == 0 else 0.3
        gw = f32(scale * np.sin(0.37 * i + 1.3 * t + 0.5).reshape(3, 4))
        gb = f32(scale * np.cos(0.91 * np.arange(4) - 0.7 * t))
        grads.append({"w": jnp.asarray(gw), "b": jnp.asarray(gb)})
    lines = [f"inputs#w\t{fmt(w0)}", f"inputs#b\t{fmt(b0)}"]
    for t, g in enumerate(grads):
        lines.append(f"inputs#gw{t}\t{fmt(g['w'])}")
        lines.append(f"inputs#gb{t}\t{fmt(g['b'])}")
    for name, make in CASES.items():
        opt = make()
        params = {"w": jnp.asarray(w0), "b": jnp.asarray(b0)}
        state = opt.init(params)
        for t, g in enumerate(grads):
            updates, state = opt.update(g, state, params)
            params = optax.apply_updates(params, updates)
            lines.append(f"{name}#w{t}\t{fmt(params['w'])}")
            lines.append(f"{name}#b{t}\t{fmt(params['b'])}")
    out = os.path.join(os.path.dirname(__file__), "..", "tests", "golden", "optax_cases.txt")
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {len(lines)} records to {os.path.normpath(out)} (optax {optax.__version__}, "
          f"jax {jax.__version__})")


if __name__ == "__main__":
    main()
