// A small convolutional net (two 3x3 convolutions with ReLU and 2x2 max pooling, then a
// dense head, cross-entropy on integer labels) trained with SGD on 8 virtual CPU devices:
// on one device and 8-way data parallel. Both loss curves agree to float32 rounding and
// follow JAX's (tests/golden/convnet_losses.txt, from tools/jax_convnet.py, which holds
// the same model). --small runs the small configuration, as CI does.
#include <parax/parax.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>

#include "loss_curves.h"

namespace px = parax;
namespace jnp = parax::numpy;
namespace jr = parax::random;
namespace nn = parax::nn;
using px::Array;
using px::P;

struct Config {
  int64_t batch, side, c1, c2, classes, steps;
  float lr;
};

struct Params {
  Array conv1, b1, conv2, b2, dense, bd;
};
PARAX_REGISTER_PYTREE(Params, conv1, b1, conv2, b2, dense, bd)

Params init_params(const jr::Key& key, const Config& c) {
  jr::Key k = jr::split(key, 3);
  const int64_t flat = c.c2 * (c.side / 4) * (c.side / 4);
  return {jr::normal(k[0], {c.c1, 1, 3, 3}) / 3.0f,
          jnp::zeros({c.c1, 1, 1}),
          jr::normal(k[1], {c.c2, c.c1, 3, 3}) / jnp::sqrt(9.0f * float(c.c1)),
          jnp::zeros({c.c2, 1, 1}),
          jr::normal(k[2], {flat, c.classes}) / jnp::sqrt(float(flat)),
          jnp::zeros({c.classes})};
}

Array max_pool(const Array& x) {
  return px::lax::reduce_window(x, -INFINITY, px::lax::max, {1, 1, 2, 2}, {1, 1, 2, 2}, "VALID");
}

Array forward(const Params& p, const Array& images) {
  Array x = nn::relu(px::lax::conv(images, p.conv1, {1, 1}, "SAME") + p.b1);
  x = max_pool(x);
  x = nn::relu(px::lax::conv(x, p.conv2, {1, 1}, "SAME") + p.b2);
  x = max_pool(x);
  return jnp::matmul(x.reshape({x.shape()[0], -1}), p.dense) + p.bd;
}

Array loss_fn(const Params& p, const Array& images, const Array& labels) {
  Array logp = nn::log_softmax(forward(p, images), -1);
  return -jnp::mean(jnp::take_along_axis(logp, jnp::expand_dims(labels, 1), 1));
}

std::pair<Array, Array> make_data(const jr::Key& key, const Config& c) {
  Array images = jr::normal(key, {c.batch, 1, c.side, c.side});
  // The class is the brightest quadrant.
  const int64_t h = c.side / 2;
  Array quadrants = jnp::mean(images.reshape({c.batch, 2, h, 2, h}), std::vector<int64_t>{2, 4})
                        .reshape({c.batch, 4});
  return {images, jnp::argmax(quadrants, 1).astype(px::DType::int32)};
}

std::vector<float> train(Params params, const Array& images, const Array& labels, const Config& c) {
  const float lr = c.lr;
  auto step = px::jit([lr](const Params& p, const Array& x, const Array& y) {
    auto [loss, grads] = px::value_and_grad(loss_fn)(p, x, y);
    Params next =
        px::tree::map([lr](const Array& w, const Array& g) { return w - lr * g; }, p, grads);
    return std::make_pair(next, loss);
  });
  std::vector<float> losses;
  for (int64_t i = 0; i < c.steps; ++i) {
    auto [next, loss] = step(params, images, labels);
    params = next;
    losses.push_back(loss.item<float>());
  }
  return losses;
}

int main(int argc, char** argv) {
  px::config::set_num_cpu_devices(8);
  const bool small = argc > 1 && std::strcmp(argv[1], "--small") == 0;
  const Config c =
      small ? Config{32, 16, 8, 16, 4, 8, 0.02f} : Config{256, 16, 16, 32, 4, 10, 0.02f};
  jr::Key keys = jr::split(jr::key(0));
  Params params = init_params(keys[0], c);
  auto [images, labels] = make_data(keys[1], c);

  px::Device d0 = px::devices()[0];
  const std::vector<float> single =
      train(px::device_put(params, d0), px::device_put(images, d0), px::device_put(labels, d0), c);
  loss_curves::print("single device", single, 22);

  auto mesh = px::make_mesh({8}, {"batch"});
  px::NamedSharding rows(mesh, P("batch"));
  const std::vector<float> dp =
      train(px::device_put(params, px::NamedSharding(mesh, P())), px::device_put(images, rows),
            px::device_put(labels, rows), c);
  loss_curves::print("8-way data parallel", dp, 22);

  const std::vector<float> jax = loss_curves::jax("convnet_losses.txt", small ? "small" : "full");
  loss_curves::print("JAX (single device)", jax, 22);
  const bool ok = single.back() < single.front() && loss_curves::close(dp, single, 1e-5f) &&
                  loss_curves::close(single, jax, 1e-4f);
  if (!ok) std::cerr << "check failed: the curves above disagree\n";
  return ok ? 0 : 1;
}
