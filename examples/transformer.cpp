// A tiny transformer (embedding lookup, layer norm, causal self-attention, GELU MLP,
// cross-entropy on integer labels) trained for a few SGD steps three ways on 8 virtual
// CPU devices: on one device, 8-way data parallel, and 4-way data x 2-way tensor parallel
// (attention heads, MLP hidden units and the vocabulary split over "model"; the embedding
// lookup from the vocabulary-sharded table is a masked local gather plus one all-reduce).
// The three loss curves agree to float32 rounding and follow JAX's
// (tests/golden/transformer_losses.txt, from tools/jax_transformer.py, which holds the
// same model). --small runs the small configuration, as CI does.
#include <parax/parax.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>

#include "loss_curves.h"

#include "transformer_model.h"

using namespace transformer;

std::vector<float> train(Params params, Array tokens, Array labels, const Config& c) {
  auto step = make_step(c.heads, c.lr);
  std::vector<float> losses;
  for (int64_t i = 0; i < c.steps; ++i) {
    auto [next, loss] = step(params, tokens, labels);
    params = next;
    losses.push_back(loss.item<float>());
  }
  return losses;
}

int main(int argc, char** argv) {
  px::config::set_num_cpu_devices(8);
  const bool small = argc > 1 && std::strcmp(argv[1], "--small") == 0;
  const Config c =
      small ? Config{64, 32, 4, 2, 16, 16, 5, 0.5f} : Config{512, 128, 4, 2, 64, 32, 5, 0.5f};
  auto [pkey, dkey] = [] {
    jr::Key k = jr::split(jr::key(0));
    return std::pair{k[0], k[1]};
  }();
  Params params = init_params(pkey, c);
  Array tokens = jr::randint(dkey, {c.batch, c.seq}, 0, c.vocab);
  Array labels = jnp::remainder(tokens + 1, c.vocab);

  const std::vector<float> single =
      train(px::device_put(params, px::devices()[0]), px::device_put(tokens, px::devices()[0]),
            px::device_put(labels, px::devices()[0]), c);
  loss_curves::print("single device", single, 28);

  auto mesh8 = px::make_mesh({8}, {"data"});
  px::NamedSharding rows8(mesh8, P("data"));
  const std::vector<float> dp = train(place(params, mesh8, false), px::device_put(tokens, rows8),
                                      px::device_put(labels, rows8), c);
  loss_curves::print("8-way data parallel", dp, 28);

  auto mesh42 = px::make_mesh({4, 2}, {"data", "model"});
  px::NamedSharding rows4(mesh42, P("data"));
  Params tp_params = place(params, mesh42, true);
  px::debug::visualize_array_sharding(tp_params.embed);
  const std::vector<float> tp =
      train(tp_params, px::device_put(tokens, rows4), px::device_put(labels, rows4), c);
  loss_curves::print("4x2 data x tensor parallel", tp, 28);

  const std::vector<float> jax =
      loss_curves::jax("transformer_losses.txt", small ? "small" : "full");
  loss_curves::print("JAX (single device)", jax, 28);
  // What CI checks: the loss fell, the parallel curves equal the single-device one to
  // float32 rounding, and all follow JAX's.
  const bool ok = single.back() < single.front() && loss_curves::close(dp, single, 1e-5f) &&
                  loss_curves::close(tp, single, 1e-5f) && loss_curves::close(single, jax, 1e-4f);
  if (!ok) std::cerr << "check failed: the curves above disagree\n";
  return ok ? 0 : 1;
}
