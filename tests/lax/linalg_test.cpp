// numpy::linalg and lax::linalg against JAX: every case of tools/make_linalg_goldens.py is
// computed here on the same inputs (read from the golden file) in float64 and float32 and
// compared with JAX's dtype, shape and values (within a tolerance), or with JAX's error
// kind and text. Sign-ambiguous factors are compared as JAX's tests compare them (absolute
// values, reconstructions), and checked here for being factorizations at all. Then: the
// factorizations' identities on batches, vmap against loops, jit, and a batch of matrices
// sharded over 8 devices that stays local.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>

#include "parax/parax.h"
#include "support/golden.h"
#include "support/x64.h"

namespace parax {
namespace {

namespace jnp = parax::numpy;
namespace la = parax::numpy::linalg;
namespace lla = parax::lax::linalg;
using Result = std::vector<Array>;

using Linalg = testing::WithX64;

const std::map<std::string, std::string>& goldens() {
  static const auto* records =
      new std::map<std::string, std::string>(testing::read_golden("linalg_cases.txt"));
  return *records;
}

// A `dtype|weak|shape|values` record.
struct Record {
  std::string dtype;
  bool weak = false;
  Shape shape;
  std::vector<double> values;
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, sep)) out.push_back(item);
  if (!s.empty() && s.back() == sep) out.push_back("");
  return out;
}

Record parse(const std::string& text) {
  const std::vector<std::string> f = split(text, '|');
  Record r;
  r.dtype = f.at(0);
  r.weak = f.at(1) == "w";
  for (const std::string& d : split(f.at(2), ',')) {
    if (!d.empty()) r.shape.push_back(std::stoll(d));
  }
  for (const std::string& v : split(f.at(3), ',')) {
    if (!v.empty()) r.values.push_back(std::stod(v));
  }
  return r;
}

// The inputs of the golden script, in `dtype`.
struct Inputs {
  DType dtype;
  Array operator()(const std::string& name) const {
    const Record r = parse(goldens().at("in/" + name + "#v"));
    return jnp::array(r.values, r.shape, dtype);
  }
};

Array mT(const Array& x) { return jnp::swapaxes(x, -1, -2); }
Array col(const Array& x, int64_t j) {
  return jnp::squeeze(lax::slice(x, {0, j}, {x.shape()[0], j + 1}), 1);
}
Array cols(const Array& x, int64_t j0, int64_t j1) {
  return lax::slice(x, {0, j0}, {x.shape()[0], j1});
}
Array top_left(const Array& x, int64_t n) { return lax::slice(x, {0, 0}, {n, n}); }
Array eye_like(const Array& x) { return jnp::eye(x.shape().back(), std::nullopt, 0, x.dtype()); }
Result abs_all(const Result& r) {
  Result out;
  for (const Array& a : r) out.push_back(jnp::abs(a));
  return out;
}
Array sum(const Array& x) { return jnp::sum(x); }
Array sq(const Array& x) { return jnp::square(x); }

template <class F>
Array grad_of(F f, const Array& x) {
  return grad([f](const Array& a) { return f(a); })(x);
}

using Case = std::pair<std::string, std::function<Result()>>;
#define CASE(name, ...)                                   \
  Case {                                                  \
    name, [=]() -> Result { return Result(__VA_ARGS__); } \
  }
#define CASE1(name, ...)                                  \
  Case {                                                  \
    name, [=]() -> Result { return Result{__VA_ARGS__}; } \
  }

Result qr_abs(const la::QRResult& r) { return abs_all({r.Q, r.R}); }
Result svd_abs(const la::SVDResult& r) { return abs_all({r.U, r.S, r.Vh}); }
Result slog(const la::SlogdetResult& r) { return {r.sign, r.logabsdet}; }
Result tuple4(const std::tuple<Array, Array, Array, Array>& t) {
  return {std::get<0>(t), std::get<1>(t), std::get<2>(t), std::get<3>(t)};
}
Result tuple2(const std::tuple<Array, Array>& t) { return {std::get<0>(t), std::get<1>(t)}; }
Result tuple3(const std::tuple<Array, Array, Array>& t) {
  return {std::get<0>(t), std::get<1>(t), std::get<2>(t)};
}

std::vector<Case> cases(const Inputs& x) {
  const Array g = x("gen"), s = x("spd"), y = x("sym"), t = x("tall"), wd = x("wide");
  const Array gen5 = x("gen5"), bgen = x("bgen"), bspd = x("bspd"), btall = x("btall");
  const Array rhs = x("rhs"), rhs2 = x("rhs2"), brhs = x("brhs"), lower = x("lower"),
              upper = x("upper"), rank2 = x("rank2"), w44 = x("w44"), w4 = x("w4"), w53 = x("w53"),
              w35 = x("w35"), w3 = x("w3"), w42 = x("w42"), b8 = x("b8"), sing = x("sing"),
              idx = x("idx");
  const Array sing4 = x("sing4"), sing4r2 = x("sing4r2"), sing5 = x("sing5"), near4 = x("near4"),
              bsing4 = x("bsing4"), w33 = x("w33");
  auto det = [](const Array& a) { return la::det(a); };
  const double inf = HUGE_VAL;
  auto recon_svd = [](const Array& a) {
    la::SVDResult r = la::svd(a, false);
    return jnp::matmul(jnp::multiply(r.U, jnp::expand_dims(r.S, -2)), r.Vh);
  };
  return {
      CASE1("cholesky", la::cholesky(s)),
      CASE1("cholesky_upper", la::cholesky(s, true)),
      CASE1("cholesky_batched", la::cholesky(bspd)),
      CASE1("cholesky_not_pd", la::cholesky(jnp::subtract(g, jnp::multiply(10.0, eye_like(g))))),
      CASE("lu", tuple3(lla::lu(g))),
      CASE("lu_tall", tuple3(lla::lu(t))),
      CASE("lu_wide", tuple3(lla::lu(wd))),
      CASE("lu_batched", tuple3(lla::lu(bgen))),
      CASE("qr_abs", qr_abs(la::qr(g))),
      CASE("qr_tall_abs", qr_abs(la::qr(t))),
      CASE("qr_tall_complete_abs", qr_abs(la::qr(t, "complete"))),
      CASE("qr_wide_abs", qr_abs(la::qr(wd))),
      CASE1("qr_r_abs", jnp::abs(la::qr(t, "r").R)),
      CASE("qr_batched_abs", qr_abs(la::qr(btall))),
      CASE1("svd_s", la::svd(g, true, false).S),
      CASE("svd_abs", svd_abs(la::svd(g))),
      CASE("svd_tall_full_abs", svd_abs(la::svd(t))),
      CASE("svd_tall_reduced_abs", svd_abs(la::svd(t, false))),
      CASE("svd_wide_reduced_abs", svd_abs(la::svd(wd, false))),
      CASE1("svd_batched_s", la::svd(btall, true, false).S),
      CASE1("svd_recon", recon_svd(t)),
      CASE1("svdvals", la::svdvals(wd)),
      CASE1("eigh_w", la::eigh(y).eigenvalues),
      CASE1("eigh_v_abs", jnp::abs(la::eigh(y).eigenvectors)),
      CASE1("eigh_upper", la::eigh(jnp::triu(y), "U", false).eigenvalues),
      CASE1("eigh_lower_nosym", la::eigh(jnp::tril(y), std::nullopt, false).eigenvalues),
      CASE1("eigvalsh", la::eigvalsh(bspd)),
      CASE1("det", la::det(g)),
      CASE1("det5", la::det(gen5)),
      CASE1("det_batched", la::det(bgen)),
      CASE1("det_singular", la::det(sing)),
      CASE("slogdet", slog(la::slogdet(gen5))),
      CASE("slogdet_2x2", slog(la::slogdet(idx))),
      CASE("slogdet_batched", slog(la::slogdet(bgen))),
      CASE("slogdet_singular", slog(la::slogdet(sing))),
      CASE("slogdet_neg", slog(la::slogdet(jnp::negative(gen5)))),
      CASE1("inv", la::inv(g)),
      CASE1("inv_batched", la::inv(bgen)),
      CASE1("solve_vec", la::solve(g, rhs)),
      CASE1("solve_mat", la::solve(g, rhs2)),
      CASE1("solve_batched", la::solve(bgen, brhs)),
      CASE1("solve_bcast_vec", la::solve(bgen, w3)),
      CASE1("solve_bcast_mat", la::solve(bgen, brhs[0])),
      CASE1("pinv", la::pinv(t)),
      CASE1("pinv_wide", la::pinv(wd)),
      CASE1("pinv_rank2", la::pinv(rank2)),
      CASE1("pinv_batched", la::pinv(btall)),
      CASE("lstsq", tuple4(la::lstsq(t, col(w53, 0)))),
      CASE("lstsq_mat", tuple4(la::lstsq(t, cols(w53, 0, 2)))),
      CASE("lstsq_rank2", tuple4(la::lstsq(rank2, rhs))),
      CASE("lstsq_rcond", tuple4(la::lstsq(rank2, rhs, 0.5))),
      CASE1("matrix_power_0", la::matrix_power(g, 0)),
      CASE1("matrix_power_1", la::matrix_power(g, 1)),
      CASE1("matrix_power_2", la::matrix_power(g, 2)),
      CASE1("matrix_power_3", la::matrix_power(g, 3)),
      CASE1("matrix_power_5", la::matrix_power(g, 5)),
      CASE1("matrix_power_m1", la::matrix_power(g, -1)),
      CASE1("matrix_power_m3", la::matrix_power(g, -3)),
      CASE1("matrix_power_batched", la::matrix_power(bgen, 4)),
      CASE1("matrix_rank", la::matrix_rank(g)),
      CASE1("matrix_rank_2", la::matrix_rank(rank2)),
      CASE1("matrix_rank_batched", la::matrix_rank(btall)),
      CASE1("matrix_rank_tol", la::matrix_rank(g, 2.0)),
      CASE1("norm_2", la::norm(g, 2)),
      CASE1("norm_m2", la::norm(g, -2)),
      CASE1("norm_nuc", la::norm(t, "nuc")),
      CASE1("norm_fro", la::norm(t, "fro")),
      CASE1("norm_2_axes", la::norm(btall, 2, {2, 1})),
      CASE1("norm_2_keep", la::norm(btall, 2, {1, 2}, true)),
      CASE1("norm_nuc_axes", la::norm(btall, "nuc", {0, 2})),
      CASE1("cond", la::cond(g)),
      CASE1("cond_m2", la::cond(g, -2)),
      CASE1("cond_1", la::cond(g, 1)),
      CASE1("cond_inf", la::cond(g, inf)),
      CASE1("cond_fro", la::cond(g, "fro")),
      CASE1("cond_tall", la::cond(t)),
      CASE1("ts_left_lower", lla::triangular_solve(lower, rhs2, true, true)),
      CASE1("ts_left_lower_t", lla::triangular_solve(lower, rhs2, true, true, true)),
      CASE1("ts_right_upper", lla::triangular_solve(upper, mT(rhs2))),
      CASE1("ts_right_upper_unit",
            lla::triangular_solve(upper, mT(rhs2), false, false, false, false, true)),
      CASE1("ts_vec", lla::triangular_solve(lower, rhs, true, true)),
      CASE1("ts_full_a", lla::triangular_solve(g, rhs2, true, true)),
      CASE1("lu_pivots_to_permutation",
            lla::lu_pivots_to_permutation(
                jnp::astype(jnp::array({{2, 2, 3}, {1, 2, 2}}), DType::int32), 5)),
      // Gradients (reverse mode), against fixed weights.
      CASE1("grad_det", grad_of([](const Array& a) { return la::det(a); }, g)),
      CASE1("grad_det5", grad_of([](const Array& a) { return la::det(a); }, gen5)),
      CASE1("grad_slogdet", grad_of([](const Array& a) { return la::slogdet(a).logabsdet; }, gen5)),
      CASE1("grad_slogdet_2x2",
            grad_of([](const Array& a) { return la::slogdet(a).logabsdet; }, jnp::add(idx, 0.5))),
      CASE1("grad_inv", grad_of([=](const Array& a) { return sum(la::inv(a) * w44); }, g)),
      CASE1("grad_solve_a",
            grad_of([=](const Array& a) { return sum(la::solve(a, rhs2) * w42); }, g)),
      CASE1("grad_solve_b",
            grad_of([=](const Array& b) { return sum(la::solve(g, b) * w42); }, rhs2)),
      CASE1("grad_solve_vec",
            grad_of([=](const Array& a) { return sum(la::solve(a, rhs) * w4); }, g)),
      CASE1("grad_cholesky",
            grad_of([=](const Array& a) { return sum(la::cholesky(a) * w44); }, s)),
      CASE1("grad_eigvalsh", grad_of([=](const Array& a) { return sum(la::eigvalsh(a) * w4); }, y)),
      CASE1("grad_eigh_v",
            grad_of([=](const Array& a) { return sum(sq(la::eigh(a).eigenvectors) * w44); }, y)),
      CASE1("grad_svdvals", grad_of([=](const Array& a) { return sum(la::svdvals(a) * w3); }, t)),
      CASE1("grad_svdvals_wide",
            grad_of([=](const Array& a) { return sum(la::svdvals(a) * w3); }, wd)),
      CASE1("grad_svd_uv", grad_of(
                               [=](const Array& a) {
                                 la::SVDResult r = la::svd(a, false);
                                 return sum(sq(r.U) * w53) + sum(sq(r.Vh) * top_left(w44, 3));
                               },
                               t)),
      CASE1("grad_svd_square", grad_of(
                                   [=](const Array& a) {
                                     la::SVDResult r = la::svd(a);
                                     return sum(sq(r.U) * w44) + sum(r.S);
                                   },
                                   g)),
      CASE1("grad_qr", grad_of(
                           [=](const Array& a) {
                             la::QRResult r = la::qr(a);
                             return sum(sq(r.Q) * w53) + sum(sq(r.R) * top_left(w44, 3));
                           },
                           t)),
      CASE1("grad_qr_wide", grad_of(
                                [=](const Array& a) {
                                  la::QRResult r = la::qr(a);
                                  return sum(sq(r.Q) * top_left(w44, 3)) + sum(sq(r.R) * w35);
                                },
                                wd)),
      CASE1("grad_qr_complete",
            grad_of(
                [=](const Array& a) {
                  la::QRResult r = la::qr(a, "complete");
                  Array weights = jnp::ones({5, 5}, a.dtype()) * cols(w53, 0, 1);
                  return sum(sq(r.Q) * weights) + sum(sq(r.R) * w53);
                },
                t)),
      CASE1("grad_lu",
            grad_of([=](const Array& a) { return sum(std::get<0>(lla::lu(a)) * w44); }, g)),
      CASE1("grad_lu_tall",
            grad_of([=](const Array& a) { return sum(std::get<0>(lla::lu(a)) * w53); }, t)),
      CASE1("grad_lu_wide",
            grad_of([=](const Array& a) { return sum(std::get<0>(lla::lu(a)) * w35); }, wd)),
      CASE1("grad_pinv", grad_of([=](const Array& a) { return sum(la::pinv(a) * w35); }, t)),
      CASE1("grad_pinv_wide", grad_of([=](const Array& a) { return sum(la::pinv(a) * w53); }, wd)),
      CASE1("grad_pinv_rank2",
            grad_of([=](const Array& a) { return sum(la::pinv(a) * w44); }, rank2)),
      CASE1("grad_ts_a", grad_of(
                             [=](const Array& a) {
                               return sum(lla::triangular_solve(a, rhs2, true, true) * w42);
                             },
                             lower)),
      CASE1("grad_ts_b", grad_of(
                             [=](const Array& b) {
                               return sum(lla::triangular_solve(upper, b, false, false, true) *
                                          mT(w42));
                             },
                             mT(rhs2))),
      CASE1("grad_matrix_power_m2",
            grad_of([=](const Array& a) { return sum(la::matrix_power(a, -2) * w44); }, g)),
      CASE1("grad_norm_2", grad_of([](const Array& a) { return la::norm(a, 2); }, t)),
      CASE1("grad_norm_nuc", grad_of([](const Array& a) { return la::norm(a, "nuc"); }, t)),
      CASE1(
          "grad_lstsq",
          grad_of([=](const Array& a) { return sum(std::get<0>(la::lstsq(a, col(w53, 0))) * w3); },
                  t)),
      CASE1("grad_det_batched", grad_of([](const Array& a) { return sum(la::det(a)); }, bgen)),
      CASE1("grad_cholesky_batched",
            grad_of([](const Array& a) { return sum(sq(la::cholesky(a))); }, bspd)),
      // vmap over the leading axis, and over inner ones.
      CASE1("vmap_inv", vmap([](const Array& a) { return la::inv(a); })(bgen)),
      CASE1("vmap_solve_axis2", vmap([](const Array& a, const Array& b) { return la::solve(a, b); },
                                     {.in_axes = {0, 2}})(bgen, jnp::moveaxis(brhs, 0, 2))),
      CASE1("vmap_eigvalsh", vmap([](const Array& a) { return la::eigvalsh(a); },
                                  {.in_axes = 2})(jnp::moveaxis(bspd, 0, 2))),
      CASE1("vmap_svdvals",
            vmap([](const Array& a) { return la::svdvals(a); }, {.in_axes = 2})(btall)),
      CASE1("vmap_ts_unbatched_a",
            vmap([=](const Array& b) { return lla::triangular_solve(lower, b, true, true); },
                 {.in_axes = 1})(jnp::stack({rhs2, rhs2 * 2.0, -rhs2}, 1))),
      CASE1("vmap_ts_unbatched_a_right", vmap([=](const Array& b) {
              return lla::triangular_solve(upper, b);
            })(jnp::stack({mT(rhs2), mT(rhs2) * 3.0}))),
      CASE1("vmap_grad_det", vmap([](const Array& a) {
              return grad_of([](const Array& m) { return la::det(m); }, a);
            })(bgen)),
      // det's derivative at singular and near-singular matrices (finite, as JAX's).
      CASE1("det_sing4", la::det(sing4)),
      CASE1("grad_det_sing4", grad_of(det, sing4)),
      CASE1("grad_det_sing4r2", grad_of(det, sing4r2)),
      CASE1("grad_det_sing5", grad_of(det, sing5)),
      CASE1("grad_det_near4", grad_of(det, near4)),
      CASE1("jit_grad_det_sing4", jit(grad(det))(sing4)),
      CASE1("vmap_grad_det_sing", vmap(grad(det))(bsing4)),
      CASE1("grad_det_batched_sing",
            grad_of([](const Array& a) { return sum(la::det(a)); }, bsing4)),
      CASE1("jvp_det_sing4", jvp(det, std::tuple<Array>{sing4}, std::tuple<Array>{w44}).second),
      CASE1("grad_det_1x1", grad_of([](const Array& a) { return sum(la::det(a)); },
                                    jnp::expand_dims(top_left(g, 1), 0))),
      // solve and inv differentiated under vmap (JAX's custom_linear_solve rules).
      CASE("vmap_grad_solve",
           tuple2(vmap(
               grad([=](const Array& a, const Array& b) { return sum(la::solve(a, b) * brhs[0]); },
                    argnums<0, 1>))(bgen, brhs))),
      CASE("vmap_grad_solve_vec",
           tuple2(vmap(grad(
               [=](const Array& a, const Array& b) { return sum(la::solve(a, b) * w3); },
               argnums<0, 1>))(bgen, jnp::squeeze(lax::slice(brhs, {0, 0, 0}, {2, 3, 1}), -1)))),
      CASE1("vmap_grad_inv",
            vmap(grad([=](const Array& a) { return sum(la::inv(a) * w33); }))(bgen)),
      CASE1("grad_vmap_inv", grad_of(
                                 [=](const Array& a) {
                                   return sum(vmap([](const Array& m) { return la::inv(m); })(a) *
                                              w33);
                                 },
                                 bgen)),
      CASE1("jit_vmap_grad_solve", jit(vmap(grad([=](const Array& a) {
              return sum(la::solve(a, brhs[0]) * brhs[1]);
            })))(bgen)),
      CASE1("jvp_solve", jvp([](const Array& a, const Array& b) { return la::solve(a, b); },
                             std::tuple<Array, Array>{g, rhs2}, std::tuple<Array, Array>{w44, w42})
                             .second),
      // Second derivatives (grad of grad) and forward mode.
      CASE1("hess_logdet", grad_of(
                               [=](const Array& a) {
                                 auto d = [](const Array& b) { return la::slogdet(b).logabsdet; };
                                 return sum(grad_of(d, a) * w44);
                               },
                               g)),
      CASE1("hess_det", grad_of([=](const Array& a) { return sum(grad_of(det, a) * w44); }, g)),
      CASE1("hess_inv", grad_of(
                            [=](const Array& a) {
                              auto d = [=](const Array& b) { return sum(la::inv(b) * w44); };
                              return sum(grad_of(d, a) * w44);
                            },
                            g)),
      CASE1("hess_eigvalsh", grad_of(
                                 [=](const Array& a) {
                                   auto d = [=](const Array& b) {
                                     return sum(la::eigvalsh(b) * w4);
                                   };
                                   return sum(grad_of(d, a) * w44);
                                 },
                                 y)),
      CASE("jvp_svd_square", jvp([](const Array& a) { return svd_abs(la::svd(a)); },
                                 std::tuple<Array>{g}, std::tuple<Array>{w44})
                                 .second),
      CASE("jvp_qr_complete", jvp(
                                  [](const Array& a) {
                                    la::QRResult r = la::qr(a, "complete");
                                    return Result{sq(r.Q), sq(r.R)};
                                  },
                                  std::tuple<Array>{t}, std::tuple<Array>{w53})
                                  .second),
      CASE1("sharded_inv", la::inv(b8)),
      CASE1("sharded_eigvalsh", la::eigvalsh(jnp::matmul(b8, mT(b8)))),
  };
}

// Promotion of integer, mixed and weak operands (run once, in x64).
std::vector<Case> misc_cases() {
  const Inputs x64{DType::float64}, x32{DType::float32};
  const Array w44 = x64("w44");
  return {
      CASE1("det_int", la::det(jnp::astype(
                           jnp::array({{2, 1, 0, 0}, {1, 3, 1, 0}, {0, 1, 4, 1}, {0, 0, 1, 5}}),
                           DType::int32))),
      CASE1("inv_int", la::inv(jnp::astype(jnp::array({{2, 1}, {1, 3}}), DType::int32))),
      CASE1("solve_mixed", la::solve(x32("gen"), x64("rhs"))),
      CASE1("svdvals_int",
            la::svdvals(jnp::astype(jnp::array({{1, 2, 3}, {4, 5, 6}}), DType::int32))),
      CASE1("eigvalsh_weak", la::eigvalsh(jnp::reshape(ArrayLike(2.0).array(), {1, 1}))),
      // Ported from JAX's tests/linalg_test.py.
      CASE1("det_grad_issue6121", grad_of([](const Array& a) { return sum(la::det(a)); },
                                          jnp::ones({16, 1, 1}, DType::float64))),
      CASE("slogdet_issue1213",
           slog(la::slogdet(jnp::broadcast_to(
               jnp::multiply(jnp::eye(5, std::nullopt, 0, DType::float32), -0.01), {2, 5, 5})))),
      CASE1("matrix_power_bool", la::matrix_power(jnp::array({{true, true}, {false, true}}), 2)),
      CASE("lu_zero", tuple3(lla::lu(jnp::zeros({2, 2}, DType::float32)))),
      CASE("lu_singular", tuple3(lla::lu(jnp::array({{-1.0f, 1.5f}, {2.0f / 3, -1.0f}})))),
      CASE1("pinv_issue2792",
            jvp(
                [](const Array& p) {
                  Array a = jnp::add(jnp::multiply(jnp::array({{0.0f, 0.0f}, {-1.0f, 0.0f}}), p),
                                     jnp::array({{0.0f, 0.0f}, {0.0f, 1.0f}}));
                  return la::pinv(jnp::multiply(a, jnp::divide(1, jnp::add(1, jnp::square(p)))));
                },
                std::tuple<Array>{jnp::array(2.0f)}, std::tuple<Array>{jnp::array(1.0f)})
                .second),
      CASE1("pinv_ones", la::pinv(jnp::ones({3, 3}, DType::float64), 1e-2)),
      CASE1("grad_pinv_ones",
            grad_of([=](const Array& a) { return sum(la::pinv(a, 1e-2) * top_left(w44, 3)); },
                    jnp::ones({3, 3}, DType::float64))),
  };
}

std::vector<Case> error_cases() {
  const Array f33 = jnp::ones({3, 3}, DType::float64);
  const Array i33 = jnp::ones({3, 3}, DType::int32);
  const Array f3 = jnp::ones({3}, DType::float64);
  const Array f23 = jnp::ones({2, 3}, DType::float64);
  return {
      CASE1("err_cholesky_int", lla::cholesky(i33, false)),
      CASE1("err_cholesky_rank1", lla::cholesky(f3, false)),
      CASE1("err_cholesky_nonsquare", lla::cholesky(f23, false)),
      CASE("err_lu_int", tuple3(lla::lu(i33))),
      CASE("err_lu_rank1", tuple3(lla::lu(f3))),
      CASE1("err_qr_rank1", lla::qr(f3).first),
      CASE("err_svd_int", lla::svd(i33)),
      CASE1("err_eigh_nonsquare", lla::eigh(f23, true, false).first),
      CASE1("err_ts_nonsquare", lla::triangular_solve(f23, f33)),
      CASE1("err_ts_incompatible", lla::triangular_solve(f33, jnp::ones({3, 2}, DType::float64))),
      CASE1("err_ts_dtypes", lla::triangular_solve(f33, jnp::ones({3, 3}, DType::float32))),
      CASE1("err_ts_batch_rank",
            lla::triangular_solve(jnp::ones({2, 3, 3}, DType::float64),
                                  jnp::ones({2, 3, 3, 3}, DType::float64), true)),
      CASE1("err_pivots_size", lla::lu_pivots_to_permutation(jnp::zeros({4}, DType::int32), 3)),
      CASE1("err_pivots_dtype", lla::lu_pivots_to_permutation(jnp::zeros({4}, DType::float64), 5)),
      CASE1("err_solve_rank1", la::solve(f3, f3)),
      CASE1("err_solve_core", la::solve(f33, jnp::ones({4}, DType::float64))),
      CASE1("err_solve_nonsquare", la::solve(f23, jnp::ones({2, 2}, DType::float64))),
      CASE1("err_solve_batched_vec",
            la::solve(jnp::ones({2, 3, 3}, DType::float64), jnp::ones({2, 3}, DType::float64))),
      CASE1("err_inv", la::inv(f23)),
      CASE1("err_det", la::det(f23)),
      CASE1("err_det_rank1", la::det(f3)),
      CASE("err_slogdet", slog(la::slogdet(f23))),
      CASE1("err_matrix_power", la::matrix_power(f23, 2)),
      CASE1("err_matrix_power_rank1", la::matrix_power(f3, 2)),
      CASE1("err_eigh_uplo", la::eigh(jnp::eye(3), "X").eigenvalues),
      CASE("err_qr_mode", {la::qr(jnp::eye(3), "x").R}),
      CASE("err_lstsq_rows", tuple4(la::lstsq(jnp::ones({3, 2}), jnp::ones({4})))),
      CASE("err_lstsq_rank3", tuple4(la::lstsq(jnp::ones({2, 3, 2}), jnp::ones({2, 3})))),
      CASE1("err_norm_ord", la::norm(f23, "x")),
      CASE1("err_cond_rank1", la::cond(f3)),
      CASE1("err_cond_square", la::cond(f23, 1)),
      CASE1("err_svd_full_grad",
            std::get<1>(jvp([](const Array& a) { return la::svd(a).U; },
                            std::tuple<Array>{jnp::ones({3, 2}, DType::float64)},
                            std::tuple<Array>{jnp::ones({3, 2}, DType::float64)}))),
  };
}

// Compares `got` with the record of `key`: dtype, shape and values, within `rtol` of the
// array's largest magnitude (exact for integers); NaN matches NaN.
void expect_matches(const Array& got, const std::string& key, double rtol) {
  auto it = goldens().find(key);
  ASSERT_NE(it, goldens().end()) << "no golden " << key;
  const Record want = parse(it->second);
  EXPECT_EQ(std::string(dtype_name(got.dtype())), want.dtype) << key;
  EXPECT_EQ(got.weak_type(), want.weak) << key;
  ASSERT_EQ(got.shape(), want.shape) << key;
  const std::vector<double> v = got.astype(DType::float64).to_vector<double>();
  double scale = 1;
  for (double w : want.values) {
    if (std::isfinite(w)) scale = std::max(scale, std::abs(w));
  }
  const bool exact = !is_floating(got.dtype());
  for (size_t k = 0; k < v.size(); ++k) {
    const double w = want.values[k];
    if (std::isnan(w) || std::isinf(w)) {
      EXPECT_TRUE(std::isnan(w) ? std::isnan(v[k]) : v[k] == w)
          << key << "[" << k << "]: " << v[k] << " vs " << w;
      continue;
    }
    if (exact) {
      EXPECT_EQ(v[k], w) << key << "[" << k << "]";
    } else {
      EXPECT_NEAR(v[k], w, rtol * scale) << key << "[" << k << "]";
    }
  }
}

void check_results(const std::string& name, const Result& got, double rtol) {
  if (got.size() == 1 && !goldens().count(name + "[0]#v")) {
    expect_matches(got[0], name + "#v", rtol);
    return;
  }
  for (size_t k = 0; k < got.size(); ++k) {
    expect_matches(got[k], name + "[" + std::to_string(k) + "]#v", rtol);
  }
}

void run_cases(DType dtype, const std::string& suffix, double rtol) {
  int checked = 0;
  for (const auto& [name, f] : cases(Inputs{dtype})) {
    SCOPED_TRACE(name + suffix);
    Result got;
    try {
      got = f();
    } catch (const Error& e) {
      ADD_FAILURE() << name << suffix << " raised " << testing::error_record(e);
      continue;
    }
    check_results(name + suffix, got, rtol);
    ++checked;
  }
  EXPECT_GT(checked, 120);
}

TEST_F(Linalg, Float64CasesMatchJax) { run_cases(DType::float64, "", 1e-9); }

TEST_F(Linalg, PromotionMatchesJax) {
  for (const auto& [name, f] : misc_cases()) {
    SCOPED_TRACE(name);
    check_results(name, f(), 1e-6);
  }
}

TEST_F(Linalg, Float32CasesMatchJax) { run_cases(DType::float32, "_f32", 2e-4); }

TEST_F(Linalg, ErrorsMatchJax) {
  int checked = 0;
  for (const auto& [name, f] : error_cases()) {
    SCOPED_TRACE(name);
    const std::string& want = goldens().at(name);
    try {
      f();
      ADD_FAILURE() << name << ": expected " << want;
    } catch (const Error& e) {
      EXPECT_EQ(testing::error_record(e), want);
    }
    ++checked;
  }
  EXPECT_GT(checked, 30);
}

// ---- identities, transforms and sharding ------------------------------------------------

// Expects a == b elementwise within tol * max(1, max |b|).
void expect_close(const Array& a, const Array& b, double tol, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  const std::vector<double> u = a.astype(DType::float64).to_vector<double>();
  const std::vector<double> v = b.astype(DType::float64).to_vector<double>();
  double scale = 1;
  for (double x : v) scale = std::max(scale, std::abs(x));
  for (size_t i = 0; i < u.size(); ++i)
    EXPECT_NEAR(u[i], v[i], tol * scale) << what << "[" << i << "]";
}

Array eye_of(int64_t n, DType dt) { return jnp::eye(n, std::nullopt, 0, dt); }

// Every factorization of JAX's tests' kinds (square, tall, wide, batched) multiplies back to
// its input, with orthonormal and triangular factors, in float32 and float64.
TEST_F(Linalg, FactorizationsReconstructTheirInputs) {
  for (DType dt : {DType::float64, DType::float32}) {
    const double tol = dt == DType::float64 ? 1e-12 : 2e-5;
    const Inputs x{dt};
    SCOPED_TRACE(std::string(dtype_name(dt)));
    for (const std::string name : {"gen", "tall", "wide", "btall", "bgen"}) {
      SCOPED_TRACE(name);
      const Array a = x(name);
      const int64_t m = a.shape()[a.ndim() - 2], n = a.shape().back(), k = std::min(m, n);
      for (const std::string mode : {"reduced", "complete"}) {
        la::QRResult qr = la::qr(a, mode);
        const int64_t kq = qr.Q.shape().back();
        EXPECT_EQ(kq, mode == "reduced" ? k : m);
        expect_close(jnp::matmul(qr.Q, qr.R), a, tol, "q r " + mode);
        expect_close(jnp::matmul(mT(qr.Q), qr.Q),
                     jnp::broadcast_to(eye_of(kq, dt), jnp::matmul(mT(qr.Q), qr.Q).shape()), tol,
                     "q^T q " + mode);
        expect_close(jnp::tril(qr.R, -1), jnp::zeros_like(qr.R), 0, "r upper " + mode);
      }
      for (bool full : {false, true}) {
        la::SVDResult usv = la::svd(a, full);
        Array us = jnp::multiply(lax::slice(usv.U, std::vector<int64_t>(size_t(a.ndim()), 0),
                                            [&] {
                                              std::vector<int64_t> l(usv.U.shape().begin(),
                                                                     usv.U.shape().end());
                                              l.back() = k;
                                              return l;
                                            }()),
                                 jnp::expand_dims(usv.S, -2));
        std::vector<int64_t> lim(usv.Vh.shape().begin(), usv.Vh.shape().end());
        lim[lim.size() - 2] = k;
        Array vh = lax::slice(usv.Vh, std::vector<int64_t>(size_t(a.ndim()), 0), lim);
        expect_close(jnp::matmul(us, vh), a, tol, full ? "svd full" : "svd reduced");
        const int64_t ku = usv.U.shape().back();
        expect_close(jnp::matmul(mT(usv.U), usv.U),
                     jnp::broadcast_to(eye_of(ku, dt), jnp::matmul(mT(usv.U), usv.U).shape()), tol,
                     "u^T u");
        const std::vector<double> sv = usv.S.astype(DType::float64).to_vector<double>();
        for (size_t i = 0; i + 1 < sv.size(); ++i) {
          if ((i + 1) % size_t(k) != 0) {
            EXPECT_GE(sv[i], sv[i + 1]);
          }
        }
      }
      auto [lu, pivots, perm] = lla::lu(a);
      (void)pivots;
      Array l = jnp::add(jnp::tril(lax::slice(lu, std::vector<int64_t>(size_t(a.ndim()), 0),
                                              [&] {
                                                std::vector<int64_t> s2(lu.shape().begin(),
                                                                        lu.shape().end());
                                                s2.back() = k;
                                                return s2;
                                              }()),
                                   -1),
                         jnp::eye(m, k, 0, dt));
      std::vector<int64_t> lim(lu.shape().begin(), lu.shape().end());
      lim[lim.size() - 2] = k;
      Array u = jnp::triu(lax::slice(lu, std::vector<int64_t>(size_t(a.ndim()), 0), lim));
      Array one_hot = jnp::astype(jnp::equal(jnp::expand_dims(perm, -1), jnp::arange(m)), dt);
      Array pa = jnp::matmul(one_hot, a);
      expect_close(jnp::matmul(l, u), pa, tol, "p a = l u");
    }
    const Array y = x("sym");
    la::EighResult e = la::eigh(y);
    expect_close(jnp::matmul(jnp::multiply(e.eigenvectors, jnp::expand_dims(e.eigenvalues, 0)),
                             mT(e.eigenvectors)),
                 y, tol, "v diag(w) v^T");
    expect_close(jnp::matmul(mT(e.eigenvectors), e.eigenvectors), eye_of(4, dt), tol, "v^T v");
    for (const std::string name : {"spd", "bspd"}) {
      const Array s = x(name);
      Array l = la::cholesky(s);
      expect_close(jnp::matmul(l, mT(l)), s, tol, "l l^T " + name);
      expect_close(jnp::matmul(mT(la::cholesky(s, true)), la::cholesky(s, true)), s, tol,
                   "u^T u " + name);
    }
  }
}

// vmap of each front end agrees with applying it to each batch element, and jit with
// running it eagerly.
TEST_F(Linalg, VmapAndJitAgreeWithTheLoop) {
  const Inputs x{DType::float64};
  const Array bgen = x("bgen"), bspd = x("bspd"), btall = x("btall"), brhs = x("brhs");
  using F = std::function<Array(const Array&)>;
  const std::vector<std::pair<std::string, std::pair<F, Array>>> fs = {
      {"inv", {[](const Array& a) { return la::inv(a); }, bgen}},
      {"det", {[](const Array& a) { return la::det(a); }, bgen}},
      {"logdet", {[](const Array& a) { return la::slogdet(a).logabsdet; }, bgen}},
      {"pinv", {[](const Array& a) { return la::pinv(a); }, btall}},
      {"eigvalsh", {[](const Array& a) { return la::eigvalsh(a); }, bspd}},
      {"svdvals", {[](const Array& a) { return la::svdvals(a); }, btall}},
      {"cholesky", {[](const Array& a) { return la::cholesky(a); }, bspd}},
      {"solve", {[=](const Array& a) { return la::solve(a, brhs[0]); }, bgen}},
      {"qr_r_abs", {[](const Array& a) { return jnp::abs(la::qr(a).R); }, btall}},
      {"matrix_power", {[](const Array& a) { return la::matrix_power(a, -2); }, bgen}},
      {"grad_det",
       {[](const Array& a) { return grad_of([](const Array& b) { return la::det(b); }, a); },
        bgen}},
  };
  for (const auto& [name, fa] : fs) {
    SCOPED_TRACE(name);
    const auto& [f, batch] = fa;
    try {
      std::vector<Array> loop;
      for (int64_t i = 0; i < batch.shape()[0]; ++i) loop.push_back(f(batch[i]));
      const Array want = jnp::stack(loop);
      expect_close(vmap(f)(batch), want, 1e-12, "vmap");
      expect_close(jit(f)(batch[0]), loop[0], 1e-12, "jit");
      expect_close(jit(vmap(f))(batch), want, 1e-12, "jit of vmap");
    } catch (const Error& e) {
      ADD_FAILURE() << name << ": " << e.what();
    }
  }
}

// A batch of 8 matrices sharded over 8 devices on its leading axis stays sharded under jit:
// each device factors its own matrix (no collective in the partitioned program), and the
// values are JAX's.
TEST_F(Linalg, ShardedBatchStaysLocal) {
  const Mesh mesh = make_mesh({8}, {"x"});
  const NamedSharding batch(mesh, P("x"));
  const Inputs in{DType::float64};
  const Array b8 = device_put(in("b8"), batch);
  const Array spd8 = device_put(jnp::matmul(in("b8"), mT(in("b8"))), batch);
  // 4x4 matrices: det through its custom_jvp.
  const Array g8 = device_put(jnp::multiply(jnp::broadcast_to(in("gen"), {8, 4, 4}),
                                            jnp::reshape(jnp::arange(1.0, 9.0), {8, 1, 1})),
                              batch);
  using F = std::function<Array(const Array&)>;
  const std::vector<std::tuple<std::string, F, Array>> fs = {
      {"sharded_inv", [](const Array& a) { return la::inv(a); }, b8},
      {"sharded_eigvalsh", [](const Array& a) { return la::eigvalsh(a); }, spd8},
      {"sharded det", [](const Array& a) { return la::det(a); }, b8},
      {"sharded cholesky", [](const Array& a) { return la::cholesky(a); }, spd8},
      {"sharded qr", [](const Array& a) { return la::qr(a).R; }, b8},
      {"sharded svd", [](const Array& a) { return la::svd(a, false).U; }, b8},
      {"sharded lu", [](const Array& a) { return std::get<0>(lla::lu(a)); }, b8},
      {"sharded solve", [](const Array& a) { return la::solve(a, a); }, b8},
      {"sharded grad_det",
       [](const Array& a) { return grad_of([](const Array& b) { return sum(la::det(b)); }, a); },
       g8},
      {"sharded grad_inv",
       [](const Array& a) { return grad_of([](const Array& b) { return sum(la::inv(b)); }, a); },
       g8},
      {"sharded grad_logdet",
       [](const Array& a) {
         return grad_of([](const Array& b) { return sum(la::slogdet(b).logabsdet); }, a);
       },
       b8},
  };
  for (const auto& [name, f, arg] : fs) {
    SCOPED_TRACE(name);
    auto jf = jit(f);
    const std::string text = jf.lower(arg).compile().as_text();
    for (const char* c :
         {"all-gather", "all-reduce", "all-to-all", "collective-permute", "reduce-scatter"}) {
      EXPECT_EQ(text.find(c), std::string::npos) << c << " in\n" << text;
    }
    const Array got = jf(arg);
    EXPECT_TRUE(got.sharding().is_equivalent_to(batch, got.ndim())) << name;
    const Array host = f(device_put(arg, devices()[0]));
    expect_close(got, host, 1e-12, "sharded vs one device");
    if (goldens().count(name + "#v")) expect_matches(got, name + "#v", 1e-9);
  }
}

// A singular triangular matrix gives non-finite values, not garbage (JAX's
// testTriangularSolveSingularBatched).
TEST_F(Linalg, SingularTriangularSolveIsNotFinite) {
  const Array a = jnp::array(std::vector<double>{1, 1, 0, 0}, Shape{1, 2, 2}, DType::float32);
  const Array b = jnp::array(std::vector<double>{1, 1}, Shape{1, 2, 1}, DType::float32);
  const std::vector<float> out = lla::triangular_solve(a, b, true).to_vector<float>();
  EXPECT_FALSE(std::all_of(out.begin(), out.end(), [](float v) { return std::isfinite(v); }));
  // A matrix that is not positive definite factors to NaNs, one batch element at a time.
  const Array spd_and_not =
      jnp::array(std::vector<double>{4, 1, 1, 3, -1, 0, 0, 1}, Shape{2, 2, 2}, DType::float64);
  const std::vector<double> l = la::cholesky(spd_and_not).to_vector<double>();
  EXPECT_DOUBLE_EQ(l[0], 2.0);
  // As JAX's: the lower triangle NaN, the upper one zeroed by the wrapper's tril.
  for (size_t i : {4, 6, 7}) EXPECT_TRUE(std::isnan(l[i])) << i;
  EXPECT_EQ(l[5], 0.0);
}

// Matrix dimensions must be whole: a matrix sharded along its rows is gathered first (the
// partitioned program says so), and the values do not change.
TEST_F(Linalg, ShardedMatrixDimensionsAreGathered) {
  const Mesh mesh = make_mesh({8}, {"x"});
  const Array a = jnp::add(random::normal(random::key(1), {8, 8}, DType::float64),
                           jnp::multiply(jnp::eye(8, std::nullopt, 0, DType::float64), 8.0));
  const Array rows = device_put(a, NamedSharding(mesh, P("x")));
  auto f = jit([](const Array& m) { return la::inv(m); });
  const std::string text = f.lower(rows).compile().as_text();
  EXPECT_NE(text.find("all-gather"), std::string::npos) << text;
  expect_close(f(rows), la::inv(a), 1e-12, "inv of a row-sharded matrix");
  auto g = jit([](const Array& m) { return la::eigvalsh(jnp::matmul(m, mT(m))); });
  expect_close(g(rows), la::eigvalsh(jnp::matmul(a, mT(a))), 1e-12, "eigvalsh");
}
}  // namespace
}  // namespace parax
