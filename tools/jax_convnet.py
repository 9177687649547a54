"""The small convolutional net of examples/convnet.cpp, in JAX: writes its loss curve to
tests/golden/convnet_losses.txt. The model, its initialisation (parax's PRNG draws JAX's
bits) and the data must stay in step with examples/convnet.cpp.

Usage: python3 tools/jax_convnet.py
"""
import os

import jax
import jax.numpy as jnp

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIGS = {
    # name: batch, image side, channels of the two conv layers, classes, steps, lr
    "small": dict(batch=32, side=16, c1=8, c2=16, classes=4, steps=8, lr=0.02),
    "full": dict(batch=256, side=16, c1=16, c2=32, classes=4, steps=10, lr=0.02),
}


def init_params(key, c):
    k = jax.random.split(key, 3)
    flat = c["c2"] * (c["side"] // 4) ** 2
    return {
        "conv1": jax.random.normal(k[0], (c["c1"], 1, 3, 3)) / 3.0,
        "b1": jnp.zeros((c["c1"], 1, 1)),
        "conv2": jax.random.normal(k[1], (c["c2"], c["c1"], 3, 3)) / jnp.sqrt(9.0 * c["c1"]),
        "b2": jnp.zeros((c["c2"], 1, 1)),
        "dense": jax.random.normal(k[2], (flat, c["classes"])) / jnp.sqrt(float(flat)),
        "bd": jnp.zeros(c["classes"]),
    }


def max_pool(x):
    return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")


def forward(p, images):
    x = jax.nn.relu(jax.lax.conv(images, p["conv1"], (1, 1), "SAME") + p["b1"])
    x = max_pool(x)
    x = jax.nn.relu(jax.lax.conv(x, p["conv2"], (1, 1), "SAME") + p["b2"])
    x = max_pool(x)
    return x.reshape(x.shape[0], -1) @ p["dense"] + p["bd"]


def loss_fn(p, images, labels):
    logp = jax.nn.log_softmax(forward(p, images))
    return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))


def make_data(key, c):
    images = jax.random.normal(key, (c["batch"], 1, c["side"], c["side"]))
    # The class is the brightest quadrant.
    h = c["side"] // 2
    quadrants = images.reshape(c["batch"], 2, h, 2, h).mean(axis=(2, 4)).reshape(c["batch"], 4)
    return images, jnp.argmax(quadrants, axis=1).astype(jnp.int32)


def curve(c):
    pkey, dkey = jax.random.split(jax.random.key(0))
    params = init_params(pkey, c)
    images, labels = make_data(dkey, c)

    @jax.jit
    def step(p, x, y):
        loss, g = jax.value_and_grad(loss_fn)(p, x, y)
        return jax.tree.map(lambda a, b: a - c["lr"] * b, p, g), loss

    losses = []
    for _ in range(c["steps"]):
        params, loss = step(params, images, labels)
        losses.append(float(loss))
    return losses


def main():
    with open(os.path.join(ROOT, "tests/golden/convnet_losses.txt"), "w") as f:
        f.write(f"# tools/jax_convnet.py, JAX {jax.__version__}: loss per training step\n")
        for name, c in CONFIGS.items():
            f.write(name + " " + " ".join(repr(l) for l in curve(c)) + "\n")


if __name__ == "__main__":
    main()
