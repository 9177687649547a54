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

namespace px = parax;
namespace jnp = parax::numpy;
namespace jr = parax::random;
namespace nn = parax::nn;
using px::Array;
using px::None;
using px::P;

struct Config {
  int64_t vocab, d, heads, layers, seq, batch, steps;
  float lr;
};

struct LayerNorm {
  Array scale, bias;
};
PARAX_REGISTER_PYTREE(LayerNorm, scale, bias)

struct Block {
  LayerNorm ln1;
  Array wqkv, wo;
  LayerNorm ln2;
  Array w1, b1, w2, b2;
};
PARAX_REGISTER_PYTREE(Block, ln1, wqkv, wo, ln2, w1, b1, w2, b2)

struct Params {
  Array embed, pos, unembed;
  LayerNorm ln_f;
  std::vector<Block> layers;
};
PARAX_REGISTER_PYTREE(Params, embed, pos, unembed, ln_f, layers)

Array normal(const jr::Key& key, px::Shape shape, int64_t fan_in) {
  return jr::normal(key, shape) / jnp::sqrt(float(fan_in));
}

LayerNorm unit_norm(int64_t d) { return {jnp::ones({d}), jnp::zeros({d})}; }

Params init_params(const jr::Key& key, const Config& c) {
  const int64_t d = c.d;
  jr::Key keys = jr::split(key, 3 + 4 * c.layers);
  Params p{normal(keys[0], {c.vocab, d}, d), normal(keys[1], {c.seq, d}, d),
           normal(keys[2], {d, c.vocab}, d), unit_norm(d), {}};
  for (int64_t l = 0; l < c.layers; ++l) {
    const int64_t k = 3 + 4 * l;
    p.layers.push_back({unit_norm(d), normal(keys[k], {d, 3 * d}, d),
                        normal(keys[k + 1], {d, d}, d), unit_norm(d),
                        normal(keys[k + 2], {d, 4 * d}, d), jnp::zeros({4 * d}),
                        normal(keys[k + 3], {4 * d, d}, 4 * d), jnp::zeros({d})});
  }
  return p;
}

Array layer_norm(const Array& x, const LayerNorm& ln) {
  Array mean = jnp::mean(x, -1, true);
  Array var = jnp::mean(jnp::square(x - mean), -1, true);
  return (x - mean) * px::lax::rsqrt(var + 1e-5f) * ln.scale + ln.bias;
}

Array attention(const Array& x, const Block& layer, int64_t heads) {
  const int64_t b = x.shape()[0], t = x.shape()[1], d = x.shape()[2];
  std::vector<Array> qkv = jnp::split(jnp::matmul(x, layer.wqkv), 3, -1);
  for (Array& a : qkv) a = a.reshape({b, t, heads, d / heads});
  Array scores = jnp::einsum("bthd,bshd->bhts", qkv[0], qkv[1]) / std::sqrt(float(d / heads));
  Array causal = jnp::tril(jnp::ones({t, t}, px::DType::bool_));
  Array weights = nn::softmax(jnp::where(causal, scores, -1e9f), -1);
  Array out = jnp::einsum("bhts,bshd->bthd", weights, qkv[2]).reshape({b, t, d});
  return jnp::matmul(out, layer.wo);
}

Array forward(const Params& p, const Array& tokens, int64_t heads) {
  Array x = jnp::take(p.embed, tokens, 0) + p.pos;
  for (const Block& layer : p.layers) {
    x = x + attention(layer_norm(x, layer.ln1), layer, heads);
    Array h = layer_norm(x, layer.ln2);
    x = x + jnp::matmul(nn::gelu(jnp::matmul(h, layer.w1) + layer.b1), layer.w2) + layer.b2;
  }
  return jnp::matmul(layer_norm(x, p.ln_f), p.unembed);
}

Array loss_fn(const Params& p, const Array& tokens, const Array& labels, int64_t heads) {
  Array logp = nn::log_softmax(forward(p, tokens, heads), -1);
  return -jnp::mean(jnp::take_along_axis(logp, jnp::expand_dims(labels, -1), -1));
}

// Places every parameter: replicated, except (with a "model" axis) the tensor-parallel
// splits: qkv and the MLP's first layer by columns, their output projections by rows, and
// the embedding and unembedding tables by vocabulary.
Params place(const Params& p, const px::Mesh& mesh, bool tensor_parallel) {
  auto put = [&](const Array& a, px::PartitionSpec spec) {
    return px::device_put(a, px::NamedSharding(mesh, tensor_parallel ? spec : P()));
  };
  auto put_norm = [&](const LayerNorm& ln) { return LayerNorm{put(ln.scale, P()), put(ln.bias, P())}; };
  Params out{put(p.embed, P("model", None)), put(p.pos, P()), put(p.unembed, P(None, "model")),
             put_norm(p.ln_f), {}};
  for (const Block& l : p.layers) {
    out.layers.push_back({put_norm(l.ln1), put(l.wqkv, P(None, "model")),
                          put(l.wo, P("model", None)), put_norm(l.ln2),
                          put(l.w1, P(None, "model")), put(l.b1, P("model")),
                          put(l.w2, P("model", None)), put(l.b2, P())});
  }
  return out;
}

std::vector<float> train(Params params, Array tokens, Array labels, const Config& c) {
  const int64_t heads = c.heads;
  const float lr = c.lr;
  auto step = px::jit([heads, lr](const Params& p, const Array& x, const Array& y) {
    auto [loss, grads] = px::value_and_grad([heads](const Params& q, const Array& a,
                                                   const Array& b) { return loss_fn(q, a, b, heads); })(p, x, y);
    Params next = px::tree::map([lr](const Array& w, const Array& g) { return w - lr * g; },
                                p, grads);
    return std::make_pair(next, loss);
  });
  std::vector<float> losses;
  for (int64_t i = 0; i < c.steps; ++i) {
    auto [next, loss] = step(params, tokens, labels);
    params = next;
    losses.push_back(loss.item<float>());
  }
  return losses;
}

std::vector<float> jax_losses(const std::string& name) {
  std::ifstream in(std::string(PARAX_GOLDEN_DIR) + "/transformer_losses.txt");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    std::string key;
    s >> key;
    if (key != name) continue;
    std::vector<float> out;
    for (double v; s >> v;) out.push_back(float(v));
    return out;
  }
  return {};
}

void print(const std::string& what, const std::vector<float>& losses) {
  std::cout << std::left << std::setw(28) << what << std::fixed << std::setprecision(4);
  for (float l : losses) std::cout << " " << l;
  std::cout << "\n";
}

bool close(const std::vector<float>& a, const std::vector<float>& b, float rtol) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::abs(a[i] - b[i]) > rtol * std::abs(b[i])) return false;
  }
  return true;
}

int main(int argc, char** argv) {
  px::config::set_num_cpu_devices(8);
  const bool small = argc > 1 && std::strcmp(argv[1], "--small") == 0;
  const Config c = small ? Config{64, 32, 4, 2, 16, 16, 5, 0.5f}
                         : Config{512, 128, 4, 2, 64, 32, 5, 0.5f};
  auto [pkey, dkey] = [] {
    jr::Key k = jr::split(jr::key(0));
    return std::pair{k[0], k[1]};
  }();
  Params params = init_params(pkey, c);
  Array tokens = jr::randint(dkey, {c.batch, c.seq}, 0, c.vocab);
  Array labels = jnp::remainder(tokens + 1, c.vocab);

  const std::vector<float> single = train(px::device_put(params, px::devices()[0]),
                                          px::device_put(tokens, px::devices()[0]),
                                          px::device_put(labels, px::devices()[0]), c);
  print("single device", single);

  auto mesh8 = px::make_mesh({8}, {"data"});
  px::NamedSharding rows8(mesh8, P("data"));
  const std::vector<float> dp = train(place(params, mesh8, false), px::device_put(tokens, rows8),
                                      px::device_put(labels, rows8), c);
  print("8-way data parallel", dp);

  auto mesh42 = px::make_mesh({4, 2}, {"data", "model"});
  px::NamedSharding rows4(mesh42, P("data"));
  Params tp_params = place(params, mesh42, true);
  px::debug::visualize_array_sharding(tp_params.embed);
  const std::vector<float> tp = train(tp_params, px::device_put(tokens, rows4),
                                      px::device_put(labels, rows4), c);
  print("4x2 data x tensor parallel", tp);

  const std::vector<float> jax = jax_losses(small ? "small" : "full");
  print("JAX (single device)", jax);
  // What CI checks: the loss fell, the parallel curves equal the single-device one to
  // float32 rounding, and all follow JAX's.
  const bool ok = single.back() < single.front() && close(dp, single, 1e-5f) &&
                  close(tp, single, 1e-5f) && close(single, jax, 1e-4f);
  if (!ok) std::cerr << "check failed: the curves above disagree\n";
  return ok ? 0 : 1;
}
