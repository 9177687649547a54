// Dense linear algebra on LAPACK, batched over leading dimensions: cholesky, lu,
// lu_pivots_to_permutation and triangular_solve here; qr, svd and eigh in
// linalg_spectral.cpp. Shapes, errors and derivatives follow jax/_src/lax/linalg.py; every
// primitive maps its leading dimensions one to one, so they may be sharded while the
// matrix dimensions stay whole.
#include "prims/kernels/linalg.h"
#include "parax/lax.h"
#include "prims/autodiff_util.h"
#include "prims/batching_util.h"
#include "prims/linalg_util.h"
#include "prims/prim_util.h"

namespace parax::prims {
namespace {
namespace linalg_impl {

using linalg::core_shape;
using linalg::leading;
using linalg::with_batch;

// ---- cholesky -------------------------------------------------------------------------

std::vector<Aval> cholesky_abstract_eval(std::span<const Aval> in, const Params&) {
  linalg::check_operand("cholesky", in[0], 0, 2);
  const Shape core = core_shape(in[0], 2);
  if (core[0] != core[1]) {
    throw ValueError("The input to cholesky must be a square matrix. Got shape " + shape_str(core) +
                     ".");
  }
  return {in[0]};
}

ShardingRule cholesky_sharding_rule(std::span<const Aval> in, std::span<const Aval> out,
                                    const Params&) {
  return linalg::batch_sharding_rule(in, out, 2);
}

// Forward mode from Murray (arXiv:1602.07527), as JAX's cholesky_jvp_rule:
// L' = L phi(L^-1 A' L^-T), phi taking the lower triangle with its diagonal halved.
std::vector<Array> cholesky_jvp(std::span<const Array>, std::span<const Array> tangents,
                                std::span<const Array> outs, const Params&) {
  if (!tangents[0].valid()) return {Array()};
  const Array& l = outs[0];
  const int64_t n = l.shape().back();
  Array tmp = linalg::triangular_solve(l, tangents[0], false, true, true, false);
  Array inner = linalg::triangular_solve(l, tmp, true, true, false, false);
  Array eye = linalg::eye(n, n, l.dtype(), linalg::batch_shape(l));
  Array halve = lax::sub(constant(1, l.dtype()), lax::mul(eye, constant(0.5, l.dtype())));
  return {linalg::matmul(l, lax::mul(linalg::tril(inner), halve))};
}

Batched cholesky_batch(std::span<const Array> in, std::span<const int> dims, const Params& params,
                       const BatchAxis& axis) {
  return linalg::batch_at_front(core::Prim::cholesky, in, dims, params, axis);
}

// ---- lu -----------------------------------------------------------------------------

std::vector<Aval> lu_abstract_eval(std::span<const Aval> in, const Params&) {
  linalg::check_operand("lu", in[0], 0, 2);
  const Shape batch = leading(in[0], 2);
  const Shape core = core_shape(in[0], 2);
  const int64_t k = std::min(core[0], core[1]);
  return {in[0], Aval{with_batch(batch, {k}), DType::int32},
          Aval{with_batch(batch, {core[0]}), DType::int32}};
}

ShardingRule lu_sharding_rule(std::span<const Aval> in, std::span<const Aval> out, const Params&) {
  return linalg::batch_sharding_rule(in, out, 2);
}

// JAX's _lu_jvp_rule (de Hoog, Anderssen and Lukas): with P A = L U,
// L^-1 P A' U^-1 = L^-1 L' + U' U^-1, split into its strictly lower and upper parts.
std::vector<Array> lu_jvp(std::span<const Array>, std::span<const Array> tangents,
                          std::span<const Array> outs, const Params&) {
  if (!tangents[0].valid()) return {Array(), Array(), Array()};
  const Array& lu = outs[0];
  const Shape batch = linalg::batch_shape(lu);
  const int64_t m = lu.shape()[lu.shape().size() - 2];
  const int64_t n = lu.shape().back();
  const int64_t k = std::min(m, n);
  const DType dt = lu.dtype();
  Array l = linalg::pad_to(linalg::tril(linalg::block(lu, 0, m, 0, k), -1), m, m);
  l = lax::add(l, linalg::eye(m, m, dt, batch));
  // U padded to n x n, with ones on the diagonal of its empty rows.
  Array u = linalg::pad_to(linalg::triu(linalg::block(lu, 0, k, 0, n)), n, n);
  if (n > k) {
    Array u_eye = linalg::pad_to(linalg::eye(n - k, n - k, dt, batch), n, n);
    u_eye = lax::rev(u_eye, {int64_t(batch.size()), int64_t(batch.size()) + 1});
    u = lax::add(u, u_eye);
  }
  Array x = linalg::permute_rows(tangents[0], outs[2]);
  Array la = linalg::triangular_solve(l, x, true, true, false, true);
  Array lau = linalg::triangular_solve(u, la, false, false, false, false);
  Array l_dot = linalg::matmul(l, linalg::tril(lau, -1));
  Array u_dot = linalg::matmul(linalg::triu(lau), u);
  return {lax::add(l_dot, u_dot), Array(), Array()};
}

Batched lu_batch(std::span<const Array> in, std::span<const int> dims, const Params& params,
                 const BatchAxis& axis) {
  return linalg::batch_at_front(core::Prim::lu, in, dims, params, axis);
}

// ---- lu_pivots_to_permutation ---------------------------------------------------------

std::vector<Aval> pivots_abstract_eval(std::span<const Aval> in, const Params& params) {
  const Aval& p = in[0];
  if (p.shape.empty()) {
    throw TypeError(
        "Input 0 to lu_pivots_to_permutation must have rank at least 1, but got shape=()");
  }
  if (p.dtype != DType::int32) {
    throw TypeError("lu_pivots_to_permutation does not accept dtype " +
                    std::string(dtype_name(p.dtype)) +
                    " at position 0. Accepted dtypes at position 0 are subtypes of int32.");
  }
  const int64_t size = param_int(params, "permutation_size");
  const int64_t k = p.shape.back();
  if (size < k) {
    throw ValueError("Output permutation size " + std::to_string(size) +
                     " has to exceed the trailing dimension of the pivots. Got pivots size " +
                     std::to_string(k));
  }
  return {Aval{with_batch(leading(p, 1), {size}), DType::int32}};
}

ShardingRule pivots_sharding_rule(std::span<const Aval> in, std::span<const Aval> out,
                                  const Params&) {
  return linalg::batch_sharding_rule(in, out, 1);
}

Batched pivots_batch(std::span<const Array> in, std::span<const int> dims, const Params& params,
                     const BatchAxis& axis) {
  return linalg::batch_at_front(core::Prim::lu_pivots_to_permutation, in, dims, params, axis);
}

// ---- triangular_solve -----------------------------------------------------------------

bool flag(const Params& p, std::string_view name) { return p.get<bool>(name); }

std::vector<Aval> triangular_solve_abstract_eval(std::span<const Aval> in, const Params& params) {
  linalg::check_operand("triangular_solve", in[0], 0, 2, false);
  linalg::check_operand("triangular_solve", in[1], 1, 2, false);
  check_same_dtypes("lax.triangular_solve", in);
  linalg::check_lapack_dtype("triangular_solve", in[0]);
  const size_t nb_a = in[0].shape.size() - 2;
  const size_t nb_b = in[1].shape.size() - 2;
  if (nb_a != nb_b) {
    throw TypeError(
        "All inputs to triangular_solve must have the same number of batch dimensions, but "
        "got [" +
        std::to_string(nb_a) + ", " + std::to_string(nb_b) + "] batch dimensions for the inputs.");
  }
  const Shape a = core_shape(in[0], 2);
  const Shape b = core_shape(in[1], 2);
  if (a[0] != a[1]) {
    throw ValueError("The first input to triangular_solve must be a square matrix. Got shape " +
                     shape_str(a) + ".");
  }
  const int64_t common = flag(params, "left_side") ? b[0] : b[1];
  if (a[1] != common) {
    throw ValueError("Incompatible shapes for arguments to triangular_solve: " + shape_str(a) +
                     " and " + shape_str(b) + ".");
  }
  if (leading(in[0], 2) != leading(in[1], 2)) {
    throw TypeError("[triangular_solve] batch dimensions differ: " + shape_str(leading(in[0], 2)) +
                    " and " + shape_str(leading(in[1], 2)) +
                    "; expected equal batch dimensions (broadcast them first)");
  }
  return {in[1]};
}

// The batch dimensions and b's free dimension (its columns when solving from the left,
// its rows from the right) may be sharded; a and the solved dimension must be whole.
ShardingRule triangular_solve_sharding_rule(std::span<const Aval> in, std::span<const Aval> out,
                                            const Params& params) {
  ShardingRule rule = linalg::batch_sharding_rule(in, out, 2);
  const int free = int(rule.factor_sizes.size());
  const size_t rank = in[1].shape.size();
  const size_t d = flag(params, "left_side") ? rank - 1 : rank - 2;
  rule.factor_sizes.push_back(in[1].shape[d]);
  rule.operands[1][d] = free;
  rule.results[0][d] = free;
  return rule;
}

Array solve_like(const Array& a, const Array& rhs, const Params& p) {
  return core::bind1(core::Prim::triangular_solve, {a, rhs}, p);
}

// JAX's _triangular_solve_jvp_rule_a and the b rule (linear: the same solve), ordered
// so the triangular solve runs on the smaller operand.
std::vector<Array> triangular_solve_jvp(std::span<const Array> primals,
                                        std::span<const Array> tangents,
                                        std::span<const Array> outs, const Params& p) {
  const Array& a = primals[0];
  Array result;
  if (tangents[1].valid()) result = solve_like(a, tangents[1], p);
  if (tangents[0].valid()) {
    const Array& ans = outs[0];
    const int64_t m = ans.shape()[ans.shape().size() - 2];
    const int64_t n = ans.shape().back();
    const int64_t k = flag(p, "unit_diagonal") ? 1 : 0;
    Array g = flag(p, "lower") ? linalg::tril(tangents[0], -k) : linalg::triu(tangents[0], k);
    g = lax::neg(g);
    if (flag(p, "transpose_a")) g = linalg::mT(g);
    Array d;
    if (flag(p, "left_side")) {
      d = m > n ? solve_like(a, linalg::matmul(g, ans), p)
                : linalg::matmul(solve_like(a, g, p), ans);
    } else {
      d = m < n ? solve_like(a, linalg::matmul(ans, g), p)
                : linalg::matmul(ans, solve_like(a, g, p));
    }
    result = add_tangents(result, d);
  }
  return {result};
}

// Linear in b: the adjoint solves with op(a) transposed.
std::vector<Array> triangular_solve_transpose(std::span<const Array> cts,
                                              std::span<const Array> operands,
                                              std::span<const bool> linear, const Params& p) {
  PARAX_CHECK(!linear[0], "triangular_solve is linear in b only");
  if (!cts[0].valid()) return {Array(), Array()};
  Params q = p;
  q.set("transpose_a", !flag(p, "transpose_a"));
  return {Array(), solve_like(operands[0], cts[0], q)};
}

// JAX's batching rule: an unbatched a solves every batch element at once, the batch
// folded into b's free dimension; otherwise both batch dimensions move to the front.
Batched triangular_solve_batch(std::span<const Array> in, std::span<const int> dims,
                               const Params& p, const BatchAxis& axis) {
  if (dims[0] == kNotMapped) {
    const Array& b = in[1];
    const int64_t r = b.ndim();
    const bool left = flag(p, "left_side");
    // The batch dimension goes right after b's free dimension, which then absorbs it.
    const int64_t to = left ? r - 1 : r - 2;
    Array y = core::move_batch_dim(b, dims[1], int(to), axis.size);
    const Shape unfolded = y.shape();
    Shape folded(unfolded.begin(), unfolded.begin() + (to - 1));
    folded.push_back(unfolded[size_t(to - 1)] * unfolded[size_t(to)]);
    folded.insert(folded.end(), unfolded.begin() + (to + 1), unfolded.end());
    Array out = solve_like(in[0], lax::reshape(y, folded), p);
    return Batched{{lax::reshape(out, unfolded)}, {int(to)}};
  }
  Array a = core::move_batch_dim(in[0], dims[0], 0, axis.size);
  Array b = core::move_batch_dim(in[1], dims[1], 0, axis.size);
  return Batched{{solve_like(a, b, p)}, {0}};
}

core::Cost cholesky_cost(std::span<const Aval> in, std::span<const Aval>, const Params& params,
                         std::span<const int64_t>) {
  return linalg::cost(core::Prim::cholesky, in, params);
}

core::Cost lu_cost(std::span<const Aval> in, std::span<const Aval>, const Params& params,
                   std::span<const int64_t>) {
  return linalg::cost(core::Prim::lu, in, params);
}

core::Cost triangular_solve_cost(std::span<const Aval> in, std::span<const Aval>,
                                 const Params& params, std::span<const int64_t>) {
  return linalg::cost(core::Prim::triangular_solve, in, params);
}

}  // namespace linalg_impl
}  // namespace

extern const core::PrimRules cholesky_rules = {
    .abstract_eval = linalg_impl::cholesky_abstract_eval,
    .sharding_rule = linalg_impl::cholesky_sharding_rule,
    .kernel = kernels::cholesky,
    .jvp = linalg_impl::cholesky_jvp,
    .batch = linalg_impl::cholesky_batch,
    .cost = linalg_impl::cholesky_cost,
};

extern const core::PrimRules lu_rules = {
    .abstract_eval = linalg_impl::lu_abstract_eval,
    .sharding_rule = linalg_impl::lu_sharding_rule,
    .kernel = kernels::lu,
    .jvp = linalg_impl::lu_jvp,
    .batch = linalg_impl::lu_batch,
    .cost = linalg_impl::lu_cost,
};

extern const core::PrimRules lu_pivots_to_permutation_rules = {
    .abstract_eval = linalg_impl::pivots_abstract_eval,
    .sharding_rule = linalg_impl::pivots_sharding_rule,
    .kernel = kernels::lu_pivots_to_permutation,
    .jvp = zero_jvp,
    .batch = linalg_impl::pivots_batch,
};

extern const core::PrimRules triangular_solve_rules = {
    .abstract_eval = linalg_impl::triangular_solve_abstract_eval,
    .sharding_rule = linalg_impl::triangular_solve_sharding_rule,
    .kernel = kernels::triangular_solve,
    .jvp = linalg_impl::triangular_solve_jvp,
    .transpose = linalg_impl::triangular_solve_transpose,
    .batch = linalg_impl::triangular_solve_batch,
    .cost = linalg_impl::triangular_solve_cost,
};

}  // namespace parax::prims
