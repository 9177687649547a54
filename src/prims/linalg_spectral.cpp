// The orthogonal factorizations on LAPACK, batched over leading dimensions: qr (geqrf +
// orgqr), svd (gesdd) and eigh (syevd). Shapes, errors and derivatives follow
// jax/_src/lax/linalg.py.
#include "parax/lax.h"
#include "prims/autodiff_util.h"
#include "prims/batching_util.h"
#include "prims/kernels/linalg.h"
#include "prims/linalg_util.h"
#include "prims/prim_util.h"

namespace parax::prims {
namespace {
namespace linalg_spectral_impl {

using linalg::block;
using linalg::core_shape;
using linalg::leading;
using linalg::matmul;
using linalg::mT;
using linalg::with_batch;

bool flag(const Params& p, std::string_view name) { return p.get<bool>(name); }

int64_t rows(const Array& x) { return x.shape()[x.shape().size() - 2]; }
int64_t cols(const Array& x) { return x.shape().back(); }

// ---- qr -------------------------------------------------------------------------------

std::vector<Aval> qr_abstract_eval(std::span<const Aval> in, const Params& params) {
  linalg::check_operand("qr", in[0], 0, 2);
  const Shape batch = leading(in[0], 2);
  const Shape core = core_shape(in[0], 2);
  const int64_t m = core[0], n = core[1];
  const int64_t k = flag(params, "full_matrices") ? m : std::min(m, n);
  return {Aval{with_batch(batch, {m, k}), in[0].dtype, in[0].weak_type},
          Aval{with_batch(batch, {k, n}), in[0].dtype, in[0].weak_type}};
}

ShardingRule qr_sharding_rule(std::span<const Aval> in, std::span<const Aval> out, const Params&) {
  return linalg::batch_sharding_rule(in, out, 2);
}

// The derivative of a QR decomposition with m >= n and square r (JAX's _thin_qr_jvp; see
// j-towns.github.io/papers/qr-derivative.pdf).
std::pair<Array, Array> thin_qr_jvp(const Array& q, const Array& r, const Array& dx) {
  Array dx_rinv = linalg::triangular_solve(r, dx, false, false, false, false);
  Array qt_dx_rinv = matmul(mT(q), dx_rinv);
  Array lower = linalg::tril(qt_dx_rinv, -1);
  Array d_omega = lax::sub(lower, mT(lower));  // skew-symmetric
  Array dq = lax::add(matmul(q, lax::sub(d_omega, qt_dx_rinv)), dx_rinv);
  Array dr = matmul(lax::sub(qt_dx_rinv, d_omega), r);
  return {dq, dr};
}

// Solves a^T x = b for square a, through its LU factors (JAX's lu_solve with trans=1).
Array solve_transposed(const Array& a, const Array& b) {
  std::vector<Array> f = core::bind(core::Prim::lu, {a});
  Array x = linalg::triangular_solve(f[0], b, true, false, true, false);
  x = linalg::triangular_solve(f[0], x, true, true, true, true);
  return linalg::unpermute_rows(x, f[2]);
}

// JAX's qr_jvp_rule: thin (m >= n), wide (m < n: the square block, then R2 = Q^T X2) and
// full_matrices with m > n (arXiv:2409.13374, eqs. 32-33).
std::vector<Array> qr_jvp(std::span<const Array> primals, std::span<const Array> tangents,
                          std::span<const Array> outs, const Params& params) {
  if (!tangents[0].valid()) return {Array(), Array()};
  const Array& x = primals[0];
  const Array& dx = tangents[0];
  const Array& q = outs[0];
  const Array& r = outs[1];
  const int64_t m = rows(x), n = cols(x);
  if (m < n) {
    auto [dq, dr1] = thin_qr_jvp(q, block(r, 0, m, 0, m), block(dx, 0, m, 0, m));
    Array dr2 =
        lax::add(matmul(mT(dq), block(x, 0, m, m, n)), matmul(mT(q), block(dx, 0, m, m, n)));
    return {dq, lax::concatenate({dr1, dr2}, x.ndim() - 1)};
  }
  const bool full = flag(params, "full_matrices");
  if (!full || m == n) {
    auto [dq, dr] = thin_qr_jvp(q, r, dx);
    return {dq, dr};
  }
  const Array q_mn = block(q, 0, m, 0, n);
  auto [dq_mn, dr_nn] = thin_qr_jvp(q_mn, block(r, 0, n, 0, n), dx);
  const Array q_nn = block(q_mn, 0, n, 0, n);
  const Array q_pn = block(q_mn, n, m, 0, n);
  const Array q_mp = block(q, 0, m, n, m);
  const Array dq_nn = block(dq_mn, 0, n, 0, n);
  const Array dq_pn = block(dq_mn, n, m, 0, n);
  // Z_pn = Q_pn (Q_nn - I)^-1, as Z_pn^T = (Q_nn - I)^-T Q_pn^T.
  Array eye = linalg::eye(n, n, q.dtype(), linalg::batch_shape(q));
  Array z_pn_t = solve_transposed(lax::sub(q_nn, eye), mT(q_pn));
  Array z_pn = mT(z_pn_t);
  Array dq_mp = lax::sub(matmul(dq_mn, z_pn_t), matmul(lax::add(q_mn, matmul(q_mp, z_pn)),
                                                       mT(lax::sub(dq_pn, matmul(z_pn, dq_nn)))));
  Array dq = lax::concatenate({dq_mn, dq_mp}, x.ndim() - 1);
  Array dr = linalg::pad_to(dr_nn, m, n);
  return {dq, dr};
}

Batched qr_batch(std::span<const Array> in, std::span<const int> dims, const Params& params,
                 const BatchAxis& axis) {
  return linalg::batch_at_front(core::Prim::qr, in, dims, params, axis);
}

// ---- svd ------------------------------------------------------------------------------

std::vector<Aval> svd_abstract_eval(std::span<const Aval> in, const Params& params) {
  linalg::check_operand("svd", in[0], 0, 2);
  const Shape batch = leading(in[0], 2);
  const Shape core = core_shape(in[0], 2);
  const int64_t m = core[0], n = core[1];
  const int64_t k = std::min(m, n);
  const DType dt = in[0].dtype;
  const bool weak = in[0].weak_type;
  std::vector<Aval> out{Aval{with_batch(batch, {k}), dt, weak}};
  if (flag(params, "compute_uv")) {
    const bool full = flag(params, "full_matrices");
    out.push_back(Aval{with_batch(batch, {m, full ? m : k}), dt, weak});
    out.push_back(Aval{with_batch(batch, {full ? n : k, n}), dt, weak});
  }
  return out;
}

ShardingRule svd_sharding_rule(std::span<const Aval> in, std::span<const Aval> out, const Params&) {
  return linalg::batch_sharding_rule(in, out, 2);
}

// JAX's _svd_jvp_rule: with A = U S V^T and dS = U^T dA V, ds is dS's diagonal and the
// singular vectors move by F-weighted symmetric parts (F_ij = 1 / (s_j^2 - s_i^2)), plus
// the parts of dA outside the reduced bases when the matrix is not square.
std::vector<Array> svd_jvp(std::span<const Array> primals, std::span<const Array> tangents,
                           std::span<const Array> outs, const Params& params) {
  const bool compute_uv = flag(params, "compute_uv");
  const Array& a = primals[0];
  const int64_t m = rows(a), n = cols(a);
  if (compute_uv && flag(params, "full_matrices") && m != n) {
    throw NotImplementedError("Singular value decomposition JVP not implemented for full matrices");
  }
  if (!tangents[0].valid()) return std::vector<Array>(outs.size());
  const Array& da = tangents[0];
  std::vector<Array> f =
      outs.size() == 3
          ? std::vector<Array>(outs.begin(), outs.end())
          : core::bind(core::Prim::svd, {a}, {{"full_matrices", false}, {"compute_uv", true}});
  const Array& s = f[0];
  const Array& u = f[1];
  const Array& vt = f[2];
  const Array ut = mT(u), v = mT(vt);
  const DType dt = a.dtype();
  const int64_t k = cols(u);
  Array ds_mat = matmul(matmul(ut, da), v);
  Array ds = linalg::diagonal(ds_mat);
  if (!compute_uv) return {ds};
  Array s_row = linalg::rows_of(s, k);  // s_j at column j
  Array s_col = mT(s_row);
  Array eye = linalg::eye(k, k, dt, linalg::batch_shape(a));
  Array s_diffs = lax::mul(lax::add(s_row, s_col), lax::sub(s_row, s_col));
  Array one = constant(1, dt);
  Array f_mat = lax::sub(lax::div(one, lax::add(s_diffs, eye)), eye);
  Array dss = lax::mul(s_row, ds_mat);
  Array sds = lax::mul(s_col, ds_mat);
  Array s_zeros = lax::convert_element_type(lax::eq(s, constant(0, dt)), dt);
  Array s_inv = lax::sub(lax::div(one, lax::add(s, s_zeros)), s_zeros);
  Array s_inv_mat = lax::mul(eye, linalg::rows_of(s_inv, k));
  Array dudv_diag = lax::mul(lax::mul(lax::sub(ds_mat, mT(ds_mat)), constant(0.5, dt)), s_inv_mat);
  Array du = matmul(u, lax::add(lax::mul(f_mat, lax::add(dss, mT(dss))), dudv_diag));
  Array dv = matmul(v, lax::mul(f_mat, lax::add(sds, mT(sds))));
  if (m > n) {
    Array dav = matmul(da, v);
    Array rest = lax::sub(dav, matmul(u, matmul(ut, dav)));
    du = lax::add(du, lax::mul(rest, linalg::rows_of(lax::div(one, s), m)));
  }
  if (n > m) {
    Array dahu = matmul(mT(da), u);
    Array rest = lax::sub(dahu, matmul(v, matmul(vt, dahu)));
    dv = lax::add(dv, lax::mul(rest, linalg::rows_of(lax::div(one, s), n)));
  }
  return {ds, du, mT(dv)};
}

Batched svd_batch(std::span<const Array> in, std::span<const int> dims, const Params& params,
                  const BatchAxis& axis) {
  return linalg::batch_at_front(core::Prim::svd, in, dims, params, axis);
}

// ---- eigh -----------------------------------------------------------------------------

std::vector<Aval> eigh_abstract_eval(std::span<const Aval> in, const Params&) {
  linalg::check_operand("eigh", in[0], 0, 2);
  const Shape core = core_shape(in[0], 2);
  if (core[0] != core[1]) {
    throw ValueError(
        "Argument to symmetric eigendecomposition must have shape [..., n, n], got shape " +
        shape_str(core));
  }
  return {in[0], Aval{with_batch(leading(in[0], 2), {core[0]}), in[0].dtype, in[0].weak_type}};
}

ShardingRule eigh_sharding_rule(std::span<const Aval> in, std::span<const Aval> out,
                                const Params&) {
  return linalg::batch_sharding_rule(in, out, 2);
}

// JAX's _eigh_jvp_rule, for distinct eigenvalues: with V^T A' V = C, w' = diag(C) and
// V' = V (F * C), F_ij = 1 / (w_j - w_i) off the diagonal.
std::vector<Array> eigh_jvp(std::span<const Array>, std::span<const Array> tangents,
                            std::span<const Array> outs, const Params&) {
  if (!tangents[0].valid()) return {Array(), Array()};
  const Array& v = outs[0];
  const Array& w = outs[1];
  const DType dt = v.dtype();
  const int64_t n = cols(v);
  Array eye = linalg::eye(n, n, dt, linalg::batch_shape(v));
  Array w_row = linalg::rows_of(w, n);
  Array f_mat = lax::sub(lax::div(constant(1, dt), lax::sub(lax::add(eye, w_row), mT(w_row))), eye);
  Array c = matmul(matmul(mT(v), tangents[0]), v);
  return {matmul(v, lax::mul(f_mat, c)), linalg::diagonal(c)};
}

Batched eigh_batch(std::span<const Array> in, std::span<const int> dims, const Params& params,
                   const BatchAxis& axis) {
  return linalg::batch_at_front(core::Prim::eigh, in, dims, params, axis);
}

core::Cost qr_cost(std::span<const Aval> in, std::span<const Aval>, const Params& params,
                   std::span<const int64_t>) {
  return linalg::cost(core::Prim::qr, in, params);
}

core::Cost svd_cost(std::span<const Aval> in, std::span<const Aval>, const Params& params,
                    std::span<const int64_t>) {
  return linalg::cost(core::Prim::svd, in, params);
}

core::Cost eigh_cost(std::span<const Aval> in, std::span<const Aval>, const Params& params,
                     std::span<const int64_t>) {
  return linalg::cost(core::Prim::eigh, in, params);
}

}  // namespace linalg_spectral_impl
}  // namespace

extern const core::PrimRules qr_rules = {
    .abstract_eval = linalg_spectral_impl::qr_abstract_eval,
    .sharding_rule = linalg_spectral_impl::qr_sharding_rule,
    .kernel = kernels::qr,
    .jvp = linalg_spectral_impl::qr_jvp,
    .batch = linalg_spectral_impl::qr_batch,
    .cost = linalg_spectral_impl::qr_cost,
};

extern const core::PrimRules svd_rules = {
    .abstract_eval = linalg_spectral_impl::svd_abstract_eval,
    .sharding_rule = linalg_spectral_impl::svd_sharding_rule,
    .kernel = kernels::svd,
    .jvp = linalg_spectral_impl::svd_jvp,
    .batch = linalg_spectral_impl::svd_batch,
    .cost = linalg_spectral_impl::svd_cost,
};

extern const core::PrimRules eigh_rules = {
    .abstract_eval = linalg_spectral_impl::eigh_abstract_eval,
    .sharding_rule = linalg_spectral_impl::eigh_sharding_rule,
    .kernel = kernels::eigh,
    .jvp = linalg_spectral_impl::eigh_jvp,
    .batch = linalg_spectral_impl::eigh_batch,
    .cost = linalg_spectral_impl::eigh_cost,
};

}  // namespace parax::prims
