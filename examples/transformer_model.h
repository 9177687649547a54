// The tiny transformer of examples/transformer.cpp and benchmarks/transformer_bench.cpp
// (tools/jax_transformer.py holds the same model in JAX): embedding lookup, layer norm,
// causal self-attention with softmax, a GELU MLP, cross-entropy on integer labels.
#pragma once

#include <parax/parax.h>

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace transformer {

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

inline Array normal(const jr::Key& key, px::Shape shape, int64_t fan_in) {
  return jr::normal(key, shape) / jnp::sqrt(float(fan_in));
}

inline LayerNorm unit_norm(int64_t d) { return {jnp::ones({d}), jnp::zeros({d})}; }

inline Params init_params(const jr::Key& key, const Config& c) {
  const int64_t d = c.d;
  jr::Key keys = jr::split(key, 3 + 4 * c.layers);
  Params p{normal(keys[0], {c.vocab, d}, d),
           normal(keys[1], {c.seq, d}, d),
           normal(keys[2], {d, c.vocab}, d),
           unit_norm(d),
           {}};
  for (int64_t l = 0; l < c.layers; ++l) {
    const int64_t k = 3 + 4 * l;
    p.layers.push_back({unit_norm(d), normal(keys[k], {d, 3 * d}, d),
                        normal(keys[k + 1], {d, d}, d), unit_norm(d),
                        normal(keys[k + 2], {d, 4 * d}, d), jnp::zeros({4 * d}),
                        normal(keys[k + 3], {4 * d, d}, 4 * d), jnp::zeros({d})});
  }
  return p;
}

inline Array layer_norm(const Array& x, const LayerNorm& ln) {
  Array mean = jnp::mean(x, -1, true);
  Array var = jnp::mean(jnp::square(x - mean), -1, true);
  return (x - mean) * px::lax::rsqrt(var + 1e-5f) * ln.scale + ln.bias;
}

inline Array attention(const Array& x, const Block& layer, int64_t heads) {
  const int64_t b = x.shape()[0], t = x.shape()[1], d = x.shape()[2];
  std::vector<Array> qkv = jnp::split(jnp::matmul(x, layer.wqkv), 3, -1);
  for (Array& a : qkv) a = a.reshape({b, t, heads, d / heads});
  Array scores = jnp::einsum("bthd,bshd->bhts", qkv[0], qkv[1]) / std::sqrt(float(d / heads));
  Array causal = jnp::tril(jnp::ones({t, t}, px::DType::bool_));
  Array weights = nn::softmax(jnp::where(causal, scores, -1e9f), -1);
  Array out = jnp::einsum("bhts,bshd->bthd", weights, qkv[2]).reshape({b, t, d});
  return jnp::matmul(out, layer.wo);
}

inline Array forward(const Params& p, const Array& tokens, int64_t heads) {
  Array x = jnp::take(p.embed, tokens, 0) + p.pos;
  for (const Block& layer : p.layers) {
    x = x + attention(layer_norm(x, layer.ln1), layer, heads);
    Array h = layer_norm(x, layer.ln2);
    x = x + jnp::matmul(nn::gelu(jnp::matmul(h, layer.w1) + layer.b1), layer.w2) + layer.b2;
  }
  return jnp::matmul(layer_norm(x, p.ln_f), p.unembed);
}

inline Array loss_fn(const Params& p, const Array& tokens, const Array& labels, int64_t heads) {
  Array logp = nn::log_softmax(forward(p, tokens, heads), -1);
  return -jnp::mean(jnp::take_along_axis(logp, jnp::expand_dims(labels, -1), -1));
}

// Places every parameter: replicated, except (with a "model" axis) the tensor-parallel
// splits: qkv and the MLP's first layer by columns, their output projections by rows, and
// the embedding and unembedding tables by vocabulary.
inline Params place(const Params& p, const px::Mesh& mesh, bool tensor_parallel) {
  auto put = [&](const Array& a, px::PartitionSpec spec) {
    return px::device_put(a, px::NamedSharding(mesh, tensor_parallel ? spec : P()));
  };
  auto put_norm = [&](const LayerNorm& ln) {
    return LayerNorm{put(ln.scale, P()), put(ln.bias, P())};
  };
  Params out{put(p.embed, P("model", None)),
             put(p.pos, P()),
             put(p.unembed, P(None, "model")),
             put_norm(p.ln_f),
             {}};
  for (const Block& l : p.layers) {
    out.layers.push_back({put_norm(l.ln1), put(l.wqkv, P(None, "model")),
                          put(l.wo, P("model", None)), put_norm(l.ln2), put(l.w1, P(None, "model")),
                          put(l.b1, P("model")), put(l.w2, P("model", None)), put(l.b2, P())});
  }
  return out;
}

// Returns the jitted SGD step: (params, tokens, labels) -> (params', loss).
inline auto make_step(int64_t heads, float lr) {
  return px::jit([heads, lr](const Params& p, const Array& x, const Array& y) {
    auto loss = [heads](const Params& q, const Array& a, const Array& b) {
      return loss_fn(q, a, b, heads);
    };
    auto [value, grads] = px::value_and_grad(loss)(p, x, y);
    Params next =
        px::tree::map([lr](const Array& w, const Array& g) { return w - lr * g; }, p, grads);
    return std::make_pair(next, value);
  });
}

}  // namespace transformer
