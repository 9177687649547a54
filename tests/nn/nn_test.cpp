// parax::nn against jax.nn: the cases of tools/make_nn_goldens.py's first part (values over
// float32 and the halves, weak types, JAX's derivatives including its custom_jvp ones,
// vmap, jit of grad, errors), then sharded softmax, which stays local.
#include "nn/nn_golden.h"

#include "core/program.h"

namespace parax {
namespace {

namespace jnp = parax::numpy;
using nn_testing::check_cases;
using nn_testing::Inputs;
using nn_testing::weighted_sum;

}  // namespace

std::vector<nn_testing::Case> nn_testing::nn_cases(const Inputs& in) {
  const auto& [X, XH, XB, W, R6, V, G, BIG, NANS, INFS, I, LABELS, M, T3, P, TIES, ZEROS, SORTED, Q,
               A1, B1, IM, W4, P2, SPECIAL, X4, M4, MASK5, L5] = in;
  auto fn = [](Array (*f)(const ArrayLike&)) { return [f](const Array& x) { return f(x); }; };
  auto lse1 = [](const Array& x) { return nn::logsumexp(x, 1); };
  return {
      NN_CASE("relu", nn::relu(X)),
      NN_CASE("relu_int", nn::relu(I)),
      NN_CASE("relu_h", nn::relu(XH)),
      NN_CASE("relu_grad", grad(weighted_sum(fn(nn::relu), W))(X)),
      NN_CASE("relu_nan_inf",
              nn::relu(jnp::array({nn_testing::kNan, -nn_testing::kInf, nn_testing::kInf, -0.0f}))),
      NN_CASE("relu6", nn::relu6(R6)),
      NN_CASE("relu6_grad", grad([](const Array& x) { return jnp::sum(nn::relu6(x)); })(R6)),
      NN_CASE("gelu", nn::gelu(X)),
      NN_CASE("gelu_exact", nn::gelu(X, false)),
      NN_CASE("gelu_h", nn::gelu(XH)),
      NN_CASE("gelu_b", nn::gelu(XB)),
      NN_CASE("gelu_int", nn::gelu(I)),
      NN_CASE("gelu_grad", grad(weighted_sum([](const Array& x) { return nn::gelu(x); }, W))(X)),
      NN_CASE("gelu_exact_grad",
              grad(weighted_sum([](const Array& x) { return nn::gelu(x, false); }, W))(X)),
      NN_CASE("sigmoid", nn::sigmoid(X)),
      NN_CASE("sigmoid_grad", grad(weighted_sum(fn(nn::sigmoid), W))(X)),
      NN_CASE("silu", nn::silu(X)),
      NN_CASE("swish_h", nn::swish(XH)),
      NN_CASE("silu_grad", grad(weighted_sum(fn(nn::silu), W))(X)),
      NN_CASE("softplus", nn::softplus(X)),
      NN_CASE("softplus_big", nn::softplus(BIG)),
      NN_CASE("softplus_grad", grad(weighted_sum(fn(nn::softplus), W))(X)),
      NN_CASE("softplus_int", nn::softplus(I)),
      NN_CASE("log_sigmoid", nn::log_sigmoid(X)),
      NN_CASE("log_sigmoid_grad", grad(weighted_sum(fn(nn::log_sigmoid), W))(X)),
      NN_CASE("elu", nn::elu(X)),
      NN_CASE("elu_alpha", nn::elu(X, 0.5)),
      NN_CASE("elu_grad", grad(weighted_sum([](const Array& x) { return nn::elu(x); }, W))(X)),
      NN_CASE("celu", nn::celu(X, 1.5)),
      NN_CASE("celu_grad",
              grad(weighted_sum([](const Array& x) { return nn::celu(x, 1.5); }, W))(X)),
      NN_CASE("selu", nn::selu(X)),
      NN_CASE("selu_grad", grad(weighted_sum(fn(nn::selu), W))(X)),
      NN_CASE("leaky_relu", nn::leaky_relu(X)),
      NN_CASE("leaky_relu_slope", nn::leaky_relu(X, 0.2)),
      NN_CASE("leaky_relu_grad",
              grad(weighted_sum([](const Array& x) { return nn::leaky_relu(x); }, W))(X)),
      NN_CASE("leaky_relu_int", nn::leaky_relu(I)),
      NN_CASE("hard_tanh", nn::hard_tanh(X)),
      NN_CASE("hard_tanh_grad", grad(weighted_sum(fn(nn::hard_tanh), W))(X)),
      NN_CASE("hard_sigmoid", nn::hard_sigmoid(X)),
      NN_CASE("hard_silu", nn::hard_silu(X)),
      NN_CASE("soft_sign", nn::soft_sign(X)),
      NN_CASE("sparse_plus", nn::sparse_plus(X)),
      NN_CASE("sparse_plus_grad", grad(weighted_sum(fn(nn::sparse_plus), W))(X)),
      NN_CASE("squareplus", nn::squareplus(X)),
      NN_CASE("mish", nn::mish(X)),
      NN_CASE("glu", nn::glu(M)),
      NN_CASE("glu_axis0", nn::glu(jnp::arange(8, DType::float32).reshape({4, 2}) / 4, 0)),
      NN_CASE("glu_grad", grad([](const Array& x) {
                return jnp::sum(nn::glu(x) * jnp::array({1.0f, -2.0f}));
              })(P)),
      NN_CASE("softmax", nn::softmax(X)),
      NN_CASE("softmax_axis0", nn::softmax(X, 0)),
      NN_CASE("softmax_all", nn::softmax(X, None)),
      NN_CASE("softmax_axes", nn::softmax(T3 / 10, {0, 2})),
      NN_CASE("softmax_h", nn::softmax(XH)),
      NN_CASE("softmax_b", nn::softmax(XB)),
      NN_CASE("softmax_int", nn::softmax(I)),
      NN_CASE("softmax_inf", nn::softmax(INFS)),
      NN_CASE("softmax_grad",
              grad(weighted_sum([](const Array& x) { return nn::softmax(x); }, W))(X)),
      NN_CASE("softmax_grad_axis0",
              grad(weighted_sum([](const Array& x) { return nn::softmax(x, 0); }, W))(X)),
      NN_CASE(
          "softmax_jvp",
          jvp([](const Array& x) { return nn::softmax(x); }, std::tuple{X}, std::tuple{W}).second),
      NN_CASE("softmax_vmap", vmap([](const Array& x) { return nn::softmax(x); })(T3 / 7)),
      NN_CASE("log_softmax", nn::log_softmax(X)),
      NN_CASE("log_softmax_axis0", nn::log_softmax(X, 0)),
      NN_CASE("log_softmax_h", nn::log_softmax(XH)),
      NN_CASE("log_softmax_inf", nn::log_softmax(INFS)),
      NN_CASE("log_softmax_grad",
              grad(weighted_sum([](const Array& x) { return nn::log_softmax(x); }, W))(X)),
      NN_CASE("log_softmax_vmap",
              vmap([](const Array& x) { return nn::log_softmax(x, 0); }, {.in_axes = 1})(T3 / 5)),
      NN_CASE("logsumexp", nn::logsumexp(X)),
      NN_CASE("logsumexp_axis", nn::logsumexp(X, 1)),
      NN_CASE("logsumexp_keepdims", nn::logsumexp(X, 0, true)),
      NN_CASE("logsumexp_inf", nn::logsumexp(INFS, 1)),
      NN_CASE("logsumexp_b", nn::logsumexp(X, 1, false, W)),
      NN_CASE("logsumexp_int", nn::logsumexp(I, 0)),
      NN_CASE("logsumexp_h", nn::logsumexp(XH, 1)),
      NN_CASE("logsumexp_grad", grad([&](const Array& x) {
                return jnp::sum(lse1(x) * jnp::array({1.0f, -2.0f}));
              })(X)),
      NN_CASE("logsumexp_grad_inf", grad([&](const Array& x) {
                Array l = lse1(x);
                return jnp::sum(jnp::where(jnp::isfinite(l), l, 0.0));
              })(INFS)),
      NN_CASE("logmeanexp", nn::logmeanexp(X, 1)),
      NN_CASE("standardize", nn::standardize(X)),
      NN_CASE("standardize_axis0", nn::standardize(X, 0)),
      NN_CASE("standardize_given",
              nn::standardize(X, 1, jnp::array({{0.5f}, {1.0f}}), jnp::array({{2.0f}, {4.0f}}))),
      NN_CASE("standardize_eps", nn::standardize(X, -1, std::nullopt, std::nullopt, 0.5)),
      NN_CASE("standardize_grad",
              grad(weighted_sum([](const Array& x) { return nn::standardize(x); }, W))(X)),
      NN_CASE("one_hot", nn::one_hot(LABELS, 4)),
      NN_CASE("one_hot_axis0", nn::one_hot(LABELS, 3, std::nullopt, 0)),
      NN_CASE("one_hot_int", nn::one_hot(I, 5, DType::int32)),
      NN_CASE("one_hot_bf16", nn::one_hot(LABELS, 4, DType::bfloat16)),
      NN_CASE("one_hot_2d_axis1", nn::one_hot(I, 6, std::nullopt, 1)),
      NN_CASE("one_hot_vmap", vmap([](const Array& l) { return nn::one_hot(l, 6); })(I)),
      NN_CASE("relu_vmap", vmap([](const Array& x) { return nn::relu(x); }, {.in_axes = 1})(X)),
      NN_CASE("gelu_jit_grad",
              jit(grad(weighted_sum([](const Array& x) { return nn::gelu(x); }, W)))(X)),
      NN_CASE("softplus_grad_special", vmap(grad(fn(nn::softplus)))(SPECIAL)),
      NN_CASE("mish_grad_special", vmap(grad(fn(nn::mish)))(SPECIAL)),
      NN_CASE("squareplus_grad_special",
              vmap(grad([](const Array& x) { return nn::squareplus(x); }))(SPECIAL)),
      NN_CASE("sparse_plus_grad_special",
              vmap(grad(fn(nn::sparse_plus)))(jnp::array({-1.0f, 0.0f, 1.0f, -2.0f, 2.0f}))),
      NN_CASE("relu_grad_special", vmap(grad(fn(nn::relu)))(SPECIAL)),
      NN_CASE("softplus_zero_i8", nn::softplus(jnp::array(0, DType::int8))),
      NN_CASE("softmax_empty", nn::softmax(jnp::zeros({0}))),
      NN_CASE("log_softmax_empty", nn::log_softmax(jnp::zeros({0}))),
      NN_CASE("softmax_where", nn::softmax(X4, -1, M4)),
      NN_CASE("softmax_empty_mask", nn::softmax(X4, -1, jnp::zeros({4}, DType::bool_))),
      NN_CASE("log_softmax_where", nn::log_softmax(X4, -1, M4)),
      NN_CASE("log_softmax_empty_mask", nn::log_softmax(X4, -1, jnp::zeros({4}, DType::bool_))),
      NN_CASE("softmax_where_bcast", nn::softmax(X, -1, MASK5)),
      NN_CASE("softmax_where_grad", grad([](const Array& x) {
                return nn::softmax(x, -1, x < 1000)[0];
              })(jnp::array({36.0f, 10000.0f}))),
      NN_CASE("log_softmax_where_grad", grad([](const Array& x) {
                return nn::log_softmax(x, -1, x < 1000)[0];
              })(jnp::array({36.0f, 10000.0f}))),
      NN_CASE("softmax_where_grad_w",
              grad(weighted_sum([=](const Array& x) { return nn::softmax(x, -1, MASK5); }, W))(X)),
      NN_CASE("logsumexp_where", nn::logsumexp(X, 1, false, std::nullopt, X > -2)),
      NN_CASE("logsumexp_where_grad", grad([=](const Array& x) {
                return jnp::sum(nn::logsumexp(x, 1, false, std::nullopt, MASK5));
              })(X)),
      NN_CASE("standardize_where", nn::standardize(X4, -1, std::nullopt, std::nullopt, 1e-5, M4)),
      NN_CASE("err_sigmoid_int", nn::sigmoid(I)),
  };
}

namespace {

TEST(Nn, MatchesJax) {
  Inputs in;
  const auto cases = nn_testing::nn_cases(in);
  EXPECT_EQ(check_cases(cases), int(cases.size()));
}

TEST(Nn, TracedCasesHaveJaxTypes) {
  const int n = int(nn_testing::nn_cases(Inputs()).size());
  EXPECT_EQ(nn_testing::check_traced_types(nn_testing::nn_cases), n);
}

// JAX's testStandardizeNegativeVariance: mean(x^2) - mean(x)^2 may round below zero; the
// clip keeps rsqrt real. (The values themselves are rounding noise, so no golden.)
TEST(Nn, StandardizeNegativeVarianceIsNotNan) {
  Array x = jnp::array({-11.0f, -11.0f, -11.0f}) + 3e-6;
  for (float v : nn::standardize(x).to_vector<float>()) EXPECT_FALSE(std::isnan(v));
}

// Under jit the cases give the same values as eagerly (one traced program each).
TEST(Nn, JittedMatchesEager) {
  Inputs in;
  Array x = in.X;
  auto check = [&](auto f) {
    Array eager = f(x);
    Array staged = jit(f)(x);
    EXPECT_EQ(eager.to_vector<float>(), staged.to_vector<float>());
  };
  check([](const Array& a) { return nn::softmax(a); });
  check([](const Array& a) { return nn::log_softmax(a, 0); });
  check([](const Array& a) { return nn::logsumexp(a, 1); });
  check([](const Array& a) { return nn::relu(a); });
  check([](const Array& a) { return nn::gelu(a, false); });
  check([](const Array& a) { return nn::standardize(a); });
}

// Softmax, log_softmax and logsumexp over a batch sharded across devices reduce along an
// unsharded axis: the partitioned program moves no data.
TEST(Nn, ShardedBatchStaysLocal) {
  auto mesh = make_mesh({4}, {"b"});
  Array x = jnp::arange(8 * 6, DType::float32).reshape({8, 6}) / 10;
  Array xs = device_put(x, NamedSharding(mesh, P("b", None)));
  auto f = [](const Array& a) {
    return nn::softmax(a) + nn::log_softmax(a) + nn::logsumexp(a, -1, true) + nn::relu(a);
  };
  auto jf = jit(f);
  const std::string text = jf.lower(xs).compile().as_text();
  for (const char* collective :
       {"all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute"}) {
    EXPECT_EQ(text.find(collective), std::string::npos) << collective << "\n" << text;
  }
  Array out = jf(xs);
  EXPECT_EQ(out.sharding(), xs.sharding());
  std::vector<float> want = f(x).to_vector<float>();
  std::vector<float> got = out.to_vector<float>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5);
  // Gradients too stay local.
  auto g = jit(grad([](const Array& a) { return jnp::sum(nn::softmax(a) * a); }));
  const std::string gtext = g.lower(xs).compile().as_text();
  EXPECT_EQ(gtext.find("all-gather"), std::string::npos) << gtext;
}

}  // namespace
}  // namespace parax
