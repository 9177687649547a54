// The "Parallel Evaluation in JAX" tutorial (seeds/jax-parallel-evaluation-pmap.txt) on 8
// virtual CPU devices: convolve under vmap and pmap, pmap outputs fed to pmap, in_axes with
// None, normalized_convolution with psum under pmap and vmap, a pmap nested in a pmap, and
// the data-parallel regression training loop with value_and_grad and pmean. The
// regression data come from parax's PRNG (the tutorial draws them with numpy).
#include <parax/parax.h>

#include <cstdio>
#include <iostream>

namespace px = parax;
namespace jnp = parax::numpy;
namespace jr = parax::random;
using px::Array;

Array convolve(const Array& x, const Array& w) {
  std::vector<Array> output;
  for (int64_t i = 1; i < x.shape()[0] - 1; ++i) {
    output.push_back(jnp::dot(x.slice({px::Slice{i - 1, i + 2}}), w));
  }
  return jnp::stack(output);
}

Array normalized_convolution(const Array& x, const Array& w) {
  Array output = convolve(x, w);
  return output / px::lax::psum(output, "p");
}

struct Params {
  Array weight;
  Array bias;
};
PARAX_REGISTER_PYTREE(Params, weight, bias)

// Returns the initial model params.
Params init(const jr::Key& rng) {
  jr::Key keys = jr::split(rng);
  return Params{jr::normal(keys[0], {}), jr::normal(keys[1], {})};
}

// The least squares error of the model's predictions on xs against ys.
Array loss_fn(const Params& params, const Array& xs, const Array& ys) {
  Array pred = params.weight * xs + params.bias;
  return jnp::mean(jnp::square(pred - ys));
}

constexpr float kLearningRate = 0.005f;

// One SGD step on each device's part of the batch; gradients and loss are averaged.
std::pair<Params, Array> update(const Params& params, const Array& xs, const Array& ys) {
  auto [loss, grads] = px::value_and_grad(loss_fn)(params, xs, ys);
  grads = px::lax::pmean(grads, "num_devices");
  loss = px::lax::pmean(loss, "num_devices");
  Params new_params = px::tree::map(
      [](const Array& param, const Array& g) { return param - g * kLearningRate; }, params, grads);
  return {new_params, loss};
}

void describe(const char* name, const Array& x) {
  std::cout << "after first `update()`, `" << name << "` is an array on " << x.devices().size()
            << " device(s), committed=" << (x.is_committed() ? "True" : "False") << "\n";
}

int main() {
  px::config::set_num_cpu_devices(8);
  Array x = jnp::arange(5);
  Array w = jnp::array({2.0f, 3.0f, 4.0f});
  std::cout << "# convolve(x, w)\n" << convolve(x, w) << "\n";

  const int64_t n_devices = px::local_device_count();
  Array xs = jnp::arange(5 * n_devices).reshape({-1, 5});
  Array ws = jnp::stack(std::vector<Array>(size_t(n_devices), w));
  std::cout << "# xs\n" << xs << "\n# ws\n" << ws << "\n";

  std::cout << "# vmap(convolve)(xs, ws)\n" << px::vmap(convolve)(xs, ws) << "\n";
  auto pconvolve = px::pmap(convolve);
  Array ys = pconvolve(xs, ws);
  std::cout << "# pmap(convolve)(xs, ws)\n" << ys << "\n";
  std::cout << "# pmap(convolve)(xs, pmap(convolve)(xs, ws))\n" << pconvolve(xs, ys) << "\n";
  std::cout << "# pmap(convolve, in_axes=(0, None))(xs, w)\n"
            << px::pmap(convolve, {.in_axes = {0, px::None}})(xs, w) << "\n";

  std::cout << "# pmap(normalized_convolution, axis_name='p')(xs, ws)\n"
            << px::pmap(normalized_convolution, {.axis_name = "p"})(xs, ws) << "\n";
  std::cout << "# vmap(normalized_convolution, axis_name='p')(xs, ws)\n"
            << px::vmap(normalized_convolution, {.axis_name = "p"})(xs, ws) << "\n";

  // pmap and vmap nest in either order; a pmap inside a pmap runs on a 2-D device grid.
  auto rows_then_cols = px::pmap(
      [](const Array& block) {
        return px::pmap(
            [](const Array& v) {
              return v / px::lax::psum(v, {"rows", "cols"});
            },
            {.axis_name = "cols"})(block);
      },
      {.axis_name = "rows"});
  Array grid = rows_then_cols(jnp::arange(1.0f, 9.0f).reshape({2, 4}));
  std::cout << "# pmap(pmap(v / psum(v, ('rows', 'cols'))))(arange(1, 9).reshape(2, 4))\n"
            << grid << "\n"
            << grid.sharding().to_string() << "\n";
  auto vmap_of_pmap = px::vmap(
      px::pmap([](const Array& v) { return px::lax::psum(v, "i") + px::lax::psum(v, "j"); },
               {.axis_name = "i"}),
      {.axis_name = "j"});
  std::cout << "# vmap(pmap(psum(v, 'i') + psum(v, 'j'), axis_name='i'), axis_name='j')"
               "(arange(8).reshape(2, 4))\n"
            << vmap_of_pmap(jnp::arange(8.0f).reshape({2, 4})) << "\n";

  // The regression: y = w*x + b + noise, its batch split over the devices.
  const float true_w = 2, true_b = -1;
  Array data_x = jr::normal(jr::key(1), {128, 1});
  Array noise = 0.5f * jr::normal(jr::key(2), {128, 1});
  Array data_y = data_x * true_w + true_b + noise;

  Params params = init(jr::key(123));
  Params replicated_params = px::tree::map(
      [&](const Array& p) { return jnp::stack(std::vector<Array>(size_t(n_devices), p)); }, params);
  auto split = [&](const Array& arr) {
    px::Shape shape = arr.shape();
    shape[0] /= n_devices;
    shape.insert(shape.begin(), n_devices);
    return arr.reshape(shape);
  };
  Array x_split = split(data_x);
  Array y_split = split(data_y);

  auto pupdate = px::pmap(update, {.axis_name = "num_devices"});
  for (int i = 0; i < 1000; ++i) {
    Array loss;
    std::tie(replicated_params, loss) = pupdate(replicated_params, x_split, y_split);
    if (i == 0) {
      describe("replicated_params.weight", replicated_params.weight);
      describe("loss", loss);
      describe("x_split", x_split);
    }
    if (i % 100 == 0) {
      std::printf("Step %3d, loss: %.3f\n", i, loss[0].item<float>());
      std::fflush(stdout);
    }
  }
  Params trained = px::tree::map([](const Array& p) { return p[0]; }, replicated_params);
  std::printf("weight %.3f, bias %.3f\n", trained.weight.item<float>(), trained.bias.item<float>());
  return 0;
}
