"""The tiny transformer of examples/transformer.cpp and benchmarks/transformer_bench.cpp, in JAX.

  python3 tools/jax_transformer.py            writes tests/golden/transformer_losses.txt,
                                               the example's loss curve (--small and full)
  python3 tools/jax_transformer.py --bench    prints JAX:CPU's best time of one training
                                               step of the benchmark's configuration
  ... --serve                                  the same step as parax_transformer_bench's
                                               same-run peer (tools/jax_peer.py)
The model, its initialisation (parax's PRNG draws JAX's bits) and the data must stay in step
with examples/transformer.cpp.
"""
import os
import sys

import jax_peer  # first: it sets XLA_FLAGS (one CPU device) before JAX starts

import jax
import jax.numpy as jnp

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CONFIGS = {
    # name: vocab, d_model, heads, layers, seq, batch, steps, learning rate
    "small": dict(vocab=64, d=32, heads=4, layers=2, seq=16, batch=16, steps=5, lr=0.5),
    "full": dict(vocab=512, d=128, heads=4, layers=2, seq=64, batch=32, steps=5, lr=0.5),
    "bench": dict(vocab=8192, d=256, heads=8, layers=4, seq=128, batch=16, steps=0, lr=0.1),
}


def init_params(key, c):
    d, v, t = c["d"], c["vocab"], c["seq"]
    keys = jax.random.split(key, 3 + 4 * c["layers"])
    normal = lambda k, shape, fan_in: jax.random.normal(k, shape) / jnp.sqrt(float(fan_in))
    params = {
        "embed": normal(keys[0], (v, d), d),
        "pos": normal(keys[1], (t, d), d),
        "unembed": normal(keys[2], (d, v), d),
        "ln_f": (jnp.ones(d), jnp.zeros(d)),
        "layers": [],
    }
    for l in range(c["layers"]):
        k = keys[3 + 4 * l: 7 + 4 * l]
        params["layers"].append({
            "ln1": (jnp.ones(d), jnp.zeros(d)),
            "wqkv": normal(k[0], (d, 3 * d), d),
            "wo": normal(k[1], (d, d), d),
            "ln2": (jnp.ones(d), jnp.zeros(d)),
            "w1": normal(k[2], (d, 4 * d), d),
            "b1": jnp.zeros(4 * d),
            "w2": normal(k[3], (4 * d, d), 4 * d),
            "b2": jnp.zeros(d),
        })
    return params


def layer_norm(x, scale_bias):
    scale, bias = scale_bias
    mean = jnp.mean(x, -1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), -1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + 1e-5) * scale + bias


def attention(x, layer, heads):
    b, t, d = x.shape
    qkv = x @ layer["wqkv"]
    q, k, v = jnp.split(qkv, 3, axis=-1)
    q, k, v = (a.reshape(b, t, heads, d // heads) for a in (q, k, v))
    scores = jnp.einsum("bthd,bshd->bhts", q, k) / jnp.sqrt(float(d // heads))
    causal = jnp.tril(jnp.ones((t, t), dtype=bool))
    scores = jnp.where(causal, scores, -1e9)
    weights = jax.nn.softmax(scores, axis=-1)
    out = jnp.einsum("bhts,bshd->bthd", weights, v).reshape(b, t, d)
    return out @ layer["wo"]


def forward(params, tokens, heads):
    x = params["embed"][tokens] + params["pos"]
    for layer in params["layers"]:
        x = x + attention(layer_norm(x, layer["ln1"]), layer, heads)
        h = layer_norm(x, layer["ln2"])
        x = x + jax.nn.gelu(h @ layer["w1"] + layer["b1"]) @ layer["w2"] + layer["b2"]
    return layer_norm(x, params["ln_f"]) @ params["unembed"]


def loss_fn(params, tokens, labels, heads):
    logp = jax.nn.log_softmax(forward(params, tokens, heads), axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, labels[..., None], axis=-1))


def make_data(key, c):
    tokens = jax.random.randint(key, (c["batch"], c["seq"]), 0, c["vocab"])
    # A pattern to learn: each label is the next token id (cyclically).
    labels = (tokens + 1) % c["vocab"]
    return tokens, labels


def make_step(c):
    def step(params, tokens, labels):
        loss, grads = jax.value_and_grad(loss_fn)(params, tokens, labels, c["heads"])
        params = jax.tree.map(lambda p, g: p - c["lr"] * g, params, grads)
        return params, loss
    return jax.jit(step)


def curve(c):
    pkey, dkey = jax.random.split(jax.random.key(0))
    params = init_params(pkey, c)
    tokens, labels = make_data(dkey, c)
    step = make_step(c)
    losses = []
    for _ in range(c["steps"]):
        params, loss = step(params, tokens, labels)
        losses.append(float(loss))
    return losses


def bench_workloads(c):
    """One training step on the same inputs each time, as parax_transformer_bench runs it."""
    pkey, dkey = jax.random.split(jax.random.key(0))
    params = init_params(pkey, c)
    tokens, labels = make_data(dkey, c)
    step = make_step(c)
    return {"step": lambda: step(params, tokens, labels)}


def main():
    if "--serve" in sys.argv or "--bench" in sys.argv:
        jax_peer.main(bench_workloads(CONFIGS["bench"]), default_reps=7)
        return
    with open(os.path.join(ROOT, "tests/golden/transformer_losses.txt"), "w") as f:
        f.write(f"# tools/jax_transformer.py, JAX {jax.__version__}: loss per training step\n")
        for name in ("small", "full"):
            f.write(name + " " + " ".join(repr(l) for l in curve(CONFIGS[name])) + "\n")


if __name__ == "__main__":
    main()
