// numpy functions beyond the core set, and the primitives under them (asinh, acosh, atanh, erfc,
// cumprod, cummax, cummin, cumlogsumexp) against JAX: the cases of
// tools/make_nn_goldens.py's second part (values, dtypes and weak types, gradients, vmaps,
// errors, ported from JAX's lax_numpy_test.py and lax_test.py where they apply), then the
// sharded cases: cumulative reductions and nan-reductions over a sharded batch stay local.
#include "nn/nn_golden.h"

#include <set>

#include "core/trace.h"

namespace parax {
namespace {

namespace jnp = parax::numpy;
using core::Prim;
using nn_testing::check_cases;
using nn_testing::Inputs;
using nn_testing::kInf;
using nn_testing::kNan;

// lax's functions of the primitives (lax.h names only the older ones).
Array cumulative(Prim p, const Array& x, int64_t axis, bool reverse = false) {
  return core::bind1(p, {x}, {{"axis", axis}, {"reverse", reverse}});
}
Array cumprod(const Array& x, int64_t axis, bool reverse = false) {
  return cumulative(Prim::cumprod, x, axis, reverse);
}
Array cummax(const Array& x, int64_t axis, bool reverse = false) {
  return cumulative(Prim::cummax, x, axis, reverse);
}
Array cummin(const Array& x, int64_t axis, bool reverse = false) {
  return cumulative(Prim::cummin, x, axis, reverse);
}
Array cumlogsumexp(const Array& x, int64_t axis, bool reverse = false) {
  return cumulative(Prim::cumlogsumexp, x, axis, reverse);
}
Array unary(Prim p, const Array& x) { return core::bind1(p, {x}); }

Array sum_of(const Array& x) { return jnp::sum(x); }
Array arange(int64_t n) { return jnp::arange(n, DType::float32); }

}  // namespace

std::vector<nn_testing::Case> nn_testing::numpy_cases(const Inputs& in) {
  const auto& [X, XH, XB, W, R6, V, G, BIG, NANS, INFS, I, LABELS, M, T3, P, TIES, ZEROS, SORTED, Q,
               A1, B1, IM, W4, P2, SPECIAL, X4, M4, MASK5, L5] = in;
  auto weighted = [](Prim p, const Array& w) {
    return [p, w](const Array& x) { return jnp::sum(unary(p, x) * w); };
  };
  auto slice_g = [](const Array& x, int64_t n) { return lax::slice(x, {0}, {n}); };
  using PW = jnp::PadWidth;
  using PV = jnp::PadValues;
  return {
      // Primitives: inverse hyperbolics and erfc.
      NN_CASE("asinh", unary(Prim::asinh, BIG)),
      NN_CASE("acosh", unary(Prim::acosh, G)),
      NN_CASE("atanh", unary(Prim::atanh, V)),
      NN_CASE("erfc", unary(Prim::erfc, X)),
      NN_CASE("asinh_h", unary(Prim::asinh, XH)),
      NN_CASE("atanh_b", unary(Prim::atanh, V.astype(DType::bfloat16))),
      NN_CASE("asinh_grad", grad(weighted(Prim::asinh, W))(X)),
      NN_CASE("acosh_grad", grad([](const Array& x) { return sum_of(unary(Prim::acosh, x)); })(
                                lax::slice(G, {1}, {4}))),
      NN_CASE("atanh_grad", grad([](const Array& x) { return sum_of(unary(Prim::atanh, x)); })(V)),
      NN_CASE("erfc_grad", grad(weighted(Prim::erfc, W))(X)),
      NN_CASE("err_asinh_int", unary(Prim::asinh, I)),
      NN_CASE("err_erfc_int", unary(Prim::erfc, I)),
      NN_CASE("arcsinh", jnp::arcsinh(X)),
      NN_CASE("arccosh_int", jnp::arccosh(jnp::array({1, 2, 3}))),
      NN_CASE("arctanh", jnp::arctanh(V)),
      NN_CASE("arctanh_edges", jnp::arctanh(jnp::array({-1.0f, 1.0f, 2.0f, 0.0f}))),
      // Cumulative reductions.
      NN_CASE("cumprod_lax", cumprod(P, 1)),
      NN_CASE("cumprod_lax_rev", cumprod(P, 0, true)),
      NN_CASE("cumprod_int", cumprod(I, 1)),
      NN_CASE("cummax", cummax(P, 1)),
      NN_CASE("cummax_rev", cummax(P, 1, true)),
      NN_CASE("cummin", cummin(P, 0)),
      NN_CASE("cummin_int", cummin(I, 1, true)),
      NN_CASE("cummax_nan", cummax(NANS, 1)),
      NN_CASE("cumlogsumexp", cumlogsumexp(P, 1)),
      NN_CASE("cumlogsumexp_rev", cumlogsumexp(P, 0, true)),
      NN_CASE("cumlogsumexp_inf", cumlogsumexp(INFS, 1)),
      NN_CASE("cumprod_h", cumprod(XH, 1)),
      NN_CASE("cummax_b", cummax(XB, 1)),
      NN_CASE("cumprod_grad",
              grad([&](const Array& x) { return sum_of(cumprod(x, 1) * W4); })(ZEROS)),
      NN_CASE("cumprod_grad_rev",
              grad([&](const Array& x) { return sum_of(cumprod(x, 1, true) * W4); })(ZEROS)),
      NN_CASE("cumprod_grad_long", grad([](const Array& x) {
                return sum_of(cumprod(x, 0) * arange(7));
              })(jnp::array({1.5f, -0.5f, 2.0f, 0.0f, 1.25f, 0.8f, -1.1f}))),
      NN_CASE("cummax_grad",
              grad([](const Array& x) { return sum_of(cummax(x, 1) * arange(6)); })(TIES)),
      NN_CASE("cummin_grad_rev",
              grad([](const Array& x) { return sum_of(cummin(x, 1, true) * arange(6)); })(TIES)),
      NN_CASE("cummax_jvp", jvp([](const Array& x) { return cummax(x, 1); }, std::tuple{TIES},
                                std::tuple{TIES * 0.5 + 1})
                                .second),
      NN_CASE("cumlogsumexp_grad",
              grad([&](const Array& x) { return sum_of(cumlogsumexp(x, 1) * W4); })(P2)),
      NN_CASE("cumlogsumexp_grad_inf", grad([](const Array& x) {
                return sum_of(lax::slice(cumlogsumexp(x, 1), {0, 1}, {2, 3}));
              })(jnp::array({{-kInf, 0.0f, 1.0f}, {2.0f, -kInf, 0.5f}}))),
      NN_CASE("cumprod_vmap",
              vmap([](const Array& x) { return cumprod(x, 0); }, {.in_axes = 1})(P)),
      NN_CASE("cummax_vmap",
              vmap([](const Array& x) { return cummax(x, 1, true); })(jnp::remainder(T3, 5))),
      NN_CASE("err_cumprod_bool", cumprod(jnp::array({true, false}), 0)),
      NN_CASE("err_cummax_axis", cummax(P, 2)),
      NN_CASE("cumprod", jnp::cumprod(P, 1)),
      NN_CASE("cumprod_flat", jnp::cumprod(P)),
      NN_CASE("cumprod_bool", jnp::cumprod(jnp::array({true, true, false, true}))),
      NN_CASE("cumprod_i8", jnp::cumprod(jnp::array({2, 3, 4, 5}, std::nullopt, DType::int8))),
      NN_CASE("cumprod_dtype", jnp::cumprod(I, 0, DType::float32)),
      NN_CASE("nancumsum", jnp::nancumsum(NANS, 1)),
      NN_CASE("nancumprod", jnp::nancumprod(NANS, 0)),
      NN_CASE("nancumsum_int", jnp::nancumsum(I)),
      // Reductions ignoring NaNs.
      NN_CASE("nansum", jnp::nansum(NANS)),
      NN_CASE("nansum_axis", jnp::nansum(NANS, 1)),
      NN_CASE("nansum_int", jnp::nansum(I, 0)),
      NN_CASE("nanprod", jnp::nanprod(NANS, 1, true)),
      NN_CASE("nanmax", jnp::nanmax(NANS, 1)),
      NN_CASE("nanmax_all", jnp::nanmax(NANS)),
      NN_CASE("nanmin", jnp::nanmin(NANS, 0)),
      NN_CASE("nanmin_int", jnp::nanmin(I, 1)),
      NN_CASE("nanmean", jnp::nanmean(NANS, 1)),
      NN_CASE("nanmean_all", jnp::nanmean(NANS)),
      NN_CASE("nanmean_int", jnp::nanmean(I, 0)),
      NN_CASE("nanmean_h", jnp::nanmean(NANS.astype(DType::float16), 1)),
      NN_CASE("nanvar", jnp::nanvar(NANS, 1)),
      NN_CASE("nanvar_ddof", jnp::nanvar(NANS, 1, 1)),
      NN_CASE("nanvar_keep", jnp::nanvar(NANS, 0, 0, true)),
      NN_CASE("nanvar_int", jnp::nanvar(I)),
      NN_CASE("nanstd", jnp::nanstd(NANS, 1)),
      NN_CASE("nanstd_h", jnp::nanstd(NANS.astype(DType::float16), 1)),
      NN_CASE("nanargmax", jnp::nanargmax(NANS, 1)),
      NN_CASE("nanargmin", jnp::nanargmin(NANS, 0)),
      NN_CASE("nanargmax_flat", jnp::nanargmax(NANS)),
      NN_CASE("nanargmin_keep", jnp::nanargmin(NANS, 1, true)),
      NN_CASE("nanargmax_int", jnp::nanargmax(I, 1)),
      NN_CASE("nansum_grad", grad([](const Array& x) { return jnp::nansum(x * 2.0); })(NANS)),
      NN_CASE("nanmean_grad",
              grad([](const Array& x) { return sum_of(jnp::nanmean(x, 1)); })(NANS)),
      NN_CASE("nanmax_vmap", vmap([](const Array& x) { return jnp::nanmax(x); })(NANS)),
      NN_CASE("median", jnp::median(P, 1)),
      NN_CASE("median_flat", jnp::median(P)),
      NN_CASE("median_even", jnp::median(M, 0, true)),
      NN_CASE("median_nan", jnp::median(NANS, 1)),
      NN_CASE("median_int", jnp::median(I, 1)),
      // logaddexp.
      NN_CASE("logaddexp", jnp::logaddexp(X, W)),
      NN_CASE("logaddexp_bcast", jnp::logaddexp(X, jnp::array({{0.5f}, {-1.0f}}))),
      NN_CASE("logaddexp_inf", jnp::logaddexp(jnp::array({-kInf, kInf, -kInf, 1.0f, kNan}),
                                              jnp::array({-kInf, kInf, 2.0f, -kInf, 0.0f}))),
      NN_CASE("logaddexp_int", jnp::logaddexp(I, 1)),
      NN_CASES("logaddexp_grad",
               [&] {
                 auto [gx, gy] =
                     grad([&](const Array& x,
                              const Array& y) { return sum_of(jnp::logaddexp(x, y) * W); },
                          argnums<0, 1>)(X, jnp::where(X > 0, X, W));
                 return nn_testing::Outputs{gx, gy};
               }()),
      NN_CASE("logaddexp_grad_tie", grad([](const Array& x) {
                return sum_of(jnp::logaddexp(x, jnp::flip(x)));
              })(jnp::array({1.0f, 2.0f, 1.0f}))),
      NN_CASE("logaddexp2", jnp::logaddexp2(X, W)),
      NN_CASE("logaddexp2_grad",
              grad([](const Array& x) { return sum_of(jnp::logaddexp2(x, 1.0)); })(X)),
      // pad.
      NN_CASE("pad_constant", jnp::pad(M, {{1, 2}, {0, 3}})),
      NN_CASE("pad_constant_value", jnp::pad(M, 1, "constant", -1.5)),
      NN_CASE("pad_constant_pair", jnp::pad(A1, {2, 1}, "constant", 7)),
      NN_CASE("pad_constant_pairs", jnp::pad(M, {{1, 1}, {2, 0}}, "constant", PV{{1, 2}, {3, 4}})),
      NN_CASE("pad_constant_array",
              jnp::pad(M, {{1, 1}, {2, 1}}, "constant", jnp::array({-1.0f, -2.0f}))),
      NN_CASE("pad_constant_array_2d",
              jnp::pad(M, 1, "constant", jnp::array({{1.0f, 2.0f}, {3.0f, 4.0f}}))),
      NN_CASE("err_pad_constant_shape", jnp::pad(M, 1, "constant", jnp::array({1.0f, 2.0f, 3.0f}))),
      NN_CASE("pad_constant_int", jnp::pad(IM, {{0, 1}, {1, 0}}, "constant", int64_t{9})),
      NN_CASE("pad_constant_weak", jnp::pad(ArrayLike(2.0).array() * jnp::ones({2}), 1)),
      NN_CASE("pad_edge", jnp::pad(M, {{2, 1}, {1, 3}}, "edge")),
      NN_CASE("pad_wrap", jnp::pad(M, {{4, 2}, {5, 1}}, "wrap")),
      NN_CASE("pad_reflect", jnp::pad(M, {{2, 3}, {3, 5}}, "reflect")),
      NN_CASE("pad_reflect_odd", jnp::pad(L5, {3, 6}, "reflect", 0, 0, "odd")),
      NN_CASE("pad_symmetric", jnp::pad(M, {{2, 4}, {3, 6}}, "symmetric")),
      NN_CASE("pad_symmetric_odd", jnp::pad(L5, {6, 2}, "symmetric", 0, 0, "odd")),
      NN_CASE("pad_reflect_single", jnp::pad(jnp::array({3.0f}), {2, 3}, "reflect")),
      NN_CASE("pad_linear_ramp", jnp::pad(M, {{2, 1}, {3, 2}}, "linear_ramp")),
      NN_CASE("pad_linear_ramp_ends", jnp::pad(L5, {3, 4}, "linear_ramp", 0, PV(5, -4))),
      NN_CASE("pad_linear_ramp_int",
              jnp::pad(IM, {{1, 2}, {3, 1}}, "linear_ramp", 0, PV{{1, 2}, {30, -7}})),
      NN_CASE("pad_maximum", jnp::pad(P, {{1, 2}, {2, 1}}, "maximum")),
      NN_CASE("pad_minimum", jnp::pad(P, 2, "minimum")),
      NN_CASE("pad_mean", jnp::pad(P, {{1, 1}, {2, 2}}, "mean")),
      NN_CASE("pad_mean_int", jnp::pad(IM, {{1, 1}, {2, 2}}, "mean")),
      NN_CASE("pad_median", jnp::pad(P, {{1, 1}, {1, 2}}, "median")),
      NN_CASE("pad_mean_stat_length", jnp::pad(L5, {2, 3}, "mean", 0, 0, "even", PW(2, 3))),
      NN_CASE("pad_maximum_stat_length",
              jnp::pad(M, 1, "maximum", 0, 0, "even", PW{{1, 2}, {3, 1}})),
      NN_CASE("pad_empty", jnp::pad(M, {{1, 0}, {0, 2}}, "empty")),
      NN_CASE("pad_3d", jnp::pad(T3, {{0, 1}, {1, 0}, {2, 1}}, "reflect")),
      NN_CASE(
          "pad_grad", grad([](const Array& x) {
            return sum_of(jnp::pad(x, {{1, 2}, {2, 1}}, "reflect") * arange(42).reshape({6, 7}));
          })(M)),
      NN_CASE("pad_edge_grad",
              grad([](const Array& x) { return sum_of(jnp::square(jnp::pad(x, 2, "edge"))); })(A1)),
      NN_CASE("pad_h", jnp::pad(XH, 1, "symmetric")),
      NN_CASE("err_pad_mode", jnp::pad(M, 1, "foo")),
      NN_CASE("err_pad_negative", jnp::pad(M, -1)),
      NN_CASE("err_pad_shape", jnp::pad(M, {{1, 1}, {1, 1}, {1, 1}})),
      NN_CASE("err_pad_wrap_empty", jnp::pad(jnp::zeros({0, 2}), 1, "wrap")),
      // split, roll, diagonals.
      NN_CASES("array_split", jnp::array_split(arange(10), 3)),
      NN_CASES("array_split_axis1", jnp::array_split(T3, 3, 2)),
      NN_CASES("array_split_many", jnp::array_split(jnp::arange(3), 5)),
      NN_CASES("array_split_indices", jnp::array_split(jnp::arange(8), std::vector<int64_t>{2, 5})),
      NN_CASES("err_array_split_beyond",
               jnp::array_split(jnp::arange(5), std::vector<int64_t>{2, 7})),
      NN_CASES("err_array_split_decreasing",
               jnp::array_split(jnp::arange(5), std::vector<int64_t>{3, 1})),
      NN_CASES("err_array_split_negative",
               jnp::array_split(jnp::arange(5), std::vector<int64_t>{-2})),
      NN_CASES("array_split_no_indices", jnp::array_split(jnp::arange(5), std::vector<int64_t>{})),
      NN_CASES("split_indices", jnp::split(M, std::vector<int64_t>{1, 3}, 1)),
      NN_CASES("split_indices_equal", jnp::split(jnp::arange(6), std::vector<int64_t>{2, 2, 4})),
      NN_CASE("roll", jnp::roll(M, 2)),
      NN_CASE("roll_axis", jnp::roll(M, -1, 1)),
      NN_CASE("roll_big", jnp::roll(M, 7, 0)),
      NN_CASE("roll_axes", jnp::roll(T3, {1, -2}, {0, 2})),
      NN_CASE("roll_same_axis", jnp::roll(M, {1, 2}, {1, 1})),
      NN_CASE("roll_bcast", jnp::roll(T3, {1}, {1, 2})),
      NN_CASE("roll_grad",
              grad([&](const Array& x) { return sum_of(jnp::roll(x, 1, 1) * (M - 5.5)); })(M)),
      NN_CASE("diag", jnp::diag(A1)),
      NN_CASE("diag_k", jnp::diag(A1, 1)),
      NN_CASE("diag_neg", jnp::diag(B1, -2)),
      NN_CASE("diag_of_matrix", jnp::diag(M)),
      NN_CASE("diag_of_matrix_k", jnp::diag(M, -1)),
      NN_CASE("diagonal", jnp::diagonal(M, 1)),
      NN_CASE("diagonal_neg", jnp::diagonal(M, -2)),
      NN_CASE("diagonal_3d", jnp::diagonal(T3, 0, 1, 2)),
      NN_CASE("diagonal_3d_02", jnp::diagonal(T3, 1, 2, 0)),
      NN_CASE("diagonal_empty", jnp::diagonal(M, 5)),
      NN_CASE("trace", jnp::trace(M)),
      NN_CASE("trace_offset", jnp::trace(M, 1)),
      NN_CASE("trace_int8", jnp::trace(jnp::arange(9, DType::int8).reshape({3, 3}))),
      NN_CASE("trace_3d", jnp::trace(T3, 0, 1, 2)),
      NN_CASE("trace_dtype", jnp::trace(IM, 0, 0, 1, DType::float32)),
      NN_CASE("trace_grad", grad([](const Array& x) { return jnp::trace(x, -1); })(M)),
      NN_CASE("diag_grad", grad([](const Array& v) {
                return sum_of(jnp::diag(v, 1) * arange(16).reshape({4, 4}));
              })(A1)),
      NN_CASE("err_diag_3d", jnp::diag(T3)),
      // meshgrid, searchsorted, tensordot, kron.
      NN_CASES("meshgrid_xy", jnp::meshgrid({A1, B1})),
      NN_CASES("meshgrid_ij", jnp::meshgrid({A1, B1}, "ij")),
      NN_CASES("meshgrid_3", jnp::meshgrid({A1, B1, jnp::array({7, 8, 9, 10})}, "xy")),
      NN_CASES("meshgrid_one", jnp::meshgrid({A1})),
      NN_CASES("err_meshgrid_2d", jnp::meshgrid({M, A1})),
      NN_CASES("err_meshgrid_indexing", jnp::meshgrid({A1}, "xx")),
      NN_CASE("searchsorted", jnp::searchsorted(SORTED, Q)),
      NN_CASE("searchsorted_right", jnp::searchsorted(SORTED, Q, "right")),
      NN_CASE("searchsorted_int",
              jnp::searchsorted(jnp::array({1, 3, 3, 7}), jnp::array({0, 3, 5, 9}))),
      NN_CASE("searchsorted_sorter",
              jnp::searchsorted(jnp::array({3.0f, 1.0f, 2.0f}), jnp::array({2.5f, 0.0f, 3.0f}),
                                "left", jnp::array({1, 2, 0}))),
      NN_CASE("searchsorted_scalar", jnp::searchsorted(SORTED, 0.0, "right")),
      NN_CASE("searchsorted_neg_zero",
              jnp::searchsorted(jnp::array({-1.0f, 0.0f, 1.0f}), jnp::array({-0.0f}))),
      NN_CASE("err_searchsorted_side", jnp::searchsorted(SORTED, Q, "middle")),
      NN_CASE("tensordot", jnp::tensordot(T3, arange(60).reshape({3, 4, 5}))),
      NN_CASE("tensordot_1", jnp::tensordot(M, arange(8).reshape({4, 2}), 1)),
      NN_CASE("tensordot_0", jnp::tensordot(A1, B1, 0)),
      NN_CASE("tensordot_2", jnp::tensordot(T3, T3[0], 2)),
      NN_CASE("tensordot_lists", jnp::tensordot(T3, arange(6).reshape({3, 2}), {{1}, {0}})),
      NN_CASE("tensordot_lists2", jnp::tensordot(T3, T3, {{0, 2}, {0, 2}})),
      NN_CASE("tensordot_int_float", jnp::tensordot(IM, M, {{0}, {0}})),
      NN_CASE("tensordot_grad", grad([](const Array& a) {
                return sum_of(jnp::square(jnp::tensordot(a, arange(8).reshape({4, 2}), 1)));
              })(M)),
      NN_CASE("err_tensordot_axes", jnp::tensordot(A1, B1, 2)),
      NN_CASE("kron",
              jnp::kron(lax::slice(M, {0, 0}, {2, 2}), jnp::array({{1.0f, -1.0f}, {0.5f, 2.0f}}))),
      NN_CASE("kron_vec", jnp::kron(A1, B1)),
      NN_CASE("kron_mixed", jnp::kron(A1, jnp::array({{1, 2}, {3, 4}}))),
      NN_CASE("kron_int", jnp::kron(jnp::array({1, 2}), jnp::array({3, 4, 5}))),
      NN_CASE("kron_3d", jnp::kron(lax::slice(T3, {0, 0, 0}, {2, 2, 2}), jnp::ones({2, 1, 2}))),
      NN_CASE("kron_grad",
              grad([&](const Array& a) { return sum_of(jnp::kron(a, B1) * arange(6)); })(A1)),
  };
  (void)slice_g;
}

namespace {

TEST(NumpyFunctions, MatchesJax) {
  Inputs in;
  const auto cases = nn_testing::numpy_cases(in);
  EXPECT_EQ(check_cases(cases), int(cases.size()));
}

TEST(NumpyFunctions, TracedCasesHaveJaxTypes) {
  const int n = int(nn_testing::numpy_cases(Inputs()).size());
  EXPECT_EQ(nn_testing::check_traced_types(nn_testing::numpy_cases), n);
}

// Every golden record has a case in one of the two files.
TEST(NumpyFunctions, EveryGoldenIsChecked) {
  Inputs in;
  std::set<std::string> names;
  for (const auto& c : nn_testing::nn_cases(in)) names.insert(c.name);
  for (const auto& c : nn_testing::numpy_cases(in)) names.insert(c.name);
  for (const auto& [key, text] : nn_testing::goldens()) {
    EXPECT_TRUE(names.count(key.substr(0, key.find('#')))) << key;
  }
  EXPECT_GT(names.size(), 260u);
}

}  // namespace
}  // namespace parax

namespace parax {
namespace {

std::string collectives_in(const std::string& text) {
  std::string found;
  for (const char* c :
       {"all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute"}) {
    if (text.find(c) != std::string::npos) found += std::string(c) + " ";
  }
  return found;
}

// Over a batch sharded across devices, every family works along unsharded axes without
// moving data (as JAX's sharding rules keep them local), and gives the unsharded values.
TEST(NumpyFunctions, ShardedBatchStaysLocal) {
  auto mesh = make_mesh({4}, {"b"});
  Array x = jnp::arange(8 * 6, DType::float32).reshape({8, 6}) / 7 - 3;
  x = jnp::where(jnp::remainder(jnp::arange(48).reshape({8, 6}), 5) == 0, kNan, x);
  Array xs = device_put(x, NamedSharding(mesh, P("b", None)));
  using F = std::function<Array(const Array&)>;
  const std::vector<std::pair<std::string, F>> families = {
      {"cumulative",
       [](const Array& a) {
         return jnp::cumprod(a, 1) + cumulative(Prim::cummax, a, 1) +
                cumulative(Prim::cumlogsumexp, a, 1, true) + jnp::nancumsum(a, 1);
       }},
      {"inverse hyperbolic", [](const Array& a) { return jnp::arcsinh(a) + jnp::arctanh(a / 10); }},
      {"nan reductions",
       [](const Array& a) {
         return jnp::nansum(a, 1) + jnp::nanmax(a, 1) + jnp::nanvar(a, 1) +
                jnp::nanargmin(a, 1).astype(DType::float32) + jnp::median(a, 1);
       }},
      {"pad",
       [](const Array& a) {
         return jnp::pad(a, {{0, 0}, {2, 3}}, "reflect");
       }},
      {"roll", [](const Array& a) { return jnp::roll(a, 2, 1); }},
      {"logaddexp", [](const Array& a) { return jnp::logaddexp(a, a / 2); }},
      {"searchsorted",
       [](const Array& a) {
         return jnp::searchsorted(jnp::array({-2.0f, 0.0f, 1.5f}), a);
       }},
      {"tensordot",
       [](const Array& a) {
         return jnp::tensordot(a, jnp::ones({6, 2}), 1);
       }},
      {"one_hot", [](const Array& a) { return nn::one_hot(jnp::argmax(a, 1), 6); }},
  };
  for (const auto& [name, f] : families) {
    auto jf = jit(f);
    const std::string text = jf.lower(xs).compile().as_text();
    EXPECT_EQ(collectives_in(text), "") << name << "\n" << text;
    const std::vector<double> want = f(x).to_vector<double>();
    const std::vector<double> got = jf(xs).to_vector<double>();
    ASSERT_EQ(got.size(), want.size()) << name;
    for (size_t i = 0; i < got.size(); ++i) {
      if (std::isnan(want[i])) {
        EXPECT_TRUE(std::isnan(got[i])) << name << "[" << i << "]";
      } else {
        EXPECT_NEAR(got[i], want[i], 1e-5 * (1 + std::abs(want[i]))) << name << "[" << i << "]";
      }
    }
  }
}

// The cumulative primitives keep the operand's layout, as JAX's sharding rule does; a
// sharded scanned axis is gathered first (the rule needs it whole).
TEST(NumpyFunctions, CumulativeOverShardedAxisIsGathered) {
  auto mesh = make_mesh({4}, {"b"});
  Array x = jnp::arange(8 * 6, DType::float32).reshape({8, 6}) / 40 + 0.5;
  Array xs = device_put(x, NamedSharding(mesh, P("b", None)));
  Array local = cumulative(Prim::cumprod, xs, 1);
  EXPECT_EQ(local.sharding(), xs.sharding());
  auto jf = jit([](const Array& a) { return cumulative(Prim::cumprod, a, 0); });
  const std::string text = jf.lower(xs).compile().as_text();
  EXPECT_NE(text.find("all-gather"), std::string::npos) << text;
  const std::vector<float> want = cumulative(Prim::cumprod, x, 0).to_vector<float>();
  const std::vector<float> got = jf(xs).to_vector<float>();
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5 * std::abs(want[i]));
}

}  // namespace
}  // namespace parax
