#include "prims/linalg_util.h"

#include <numeric>

#include "core/batching.h"
#include "core/trace.h"
#include "parax/lax.h"
#include "prims/autodiff_util.h"

namespace parax::prims::linalg {

Array mT(const Array& x) {
  std::vector<int64_t> perm(static_cast<size_t>(x.ndim()));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return lax::transpose(x, perm);
}

Array matmul(const Array& a, const Array& b) {
  const int64_t r = a.ndim();
  lax::DotDimensionNumbers dims;
  dims.lhs_contracting = {r - 1};
  dims.rhs_contracting = {r - 2};
  for (int64_t d = 0; d < r - 2; ++d) {
    dims.lhs_batch.push_back(d);
    dims.rhs_batch.push_back(d);
  }
  return lax::dot_general(a, b, dims);
}

namespace {

// True where column - row <= k (on or below diagonal k), of x's shape.
Array below(const Shape& shape, int64_t k) {
  const int64_t r = int64_t(shape.size());
  Array rows = lax::broadcasted_iota(DType::int32, shape, r - 2);
  Array cols = lax::broadcasted_iota(DType::int32, shape, r - 1);
  return lax::le(lax::sub(cols, rows), constant(double(k), DType::int32));
}

}  // namespace

Array tril(const Array& x, int64_t k) { return lax::select(below(x.shape(), k), x, zeros_like(x)); }

Array triu(const Array& x, int64_t k) {
  return lax::select(below(x.shape(), k - 1), zeros_like(x), x);
}

Array eye(int64_t n, int64_t m, DType dtype, const Shape& batch) {
  Shape shape = batch;
  shape.push_back(n);
  shape.push_back(m);
  const int64_t r = int64_t(shape.size());
  Array rows = lax::broadcasted_iota(DType::int32, shape, r - 2);
  Array cols = lax::broadcasted_iota(DType::int32, shape, r - 1);
  return lax::convert_element_type(lax::eq(rows, cols), dtype);
}

Array diagonal(const Array& x) {
  const Shape& s = x.shape();
  const int64_t r = x.ndim();
  const int64_t m = s[size_t(r - 2)];
  const int64_t n = s[size_t(r - 1)];
  const int64_t k = std::min(m, n);
  Shape flat(s.begin(), s.end() - 2);
  flat.push_back(m * n);
  Array f = lax::reshape(x, flat);
  std::vector<int64_t> start(static_cast<size_t>(r - 1), 0), limit(flat.begin(), flat.end()),
      strides(size_t(r - 1), 1);
  limit.back() = k == 0 ? 0 : (k - 1) * (n + 1) + 1;
  strides.back() = n + 1;
  return lax::slice(f, start, limit, strides);
}

Array permute_rows(const Array& x, const Array& permutation) {
  const int64_t r = x.ndim();
  const int64_t m = x.shape()[size_t(r - 2)];
  Shape shape = batch_shape(x);
  shape.push_back(m);
  shape.push_back(m);
  std::vector<int64_t> dims(static_cast<size_t>(r - 1));
  std::iota(dims.begin(), dims.end(), 0);
  Array rows = lax::broadcast_in_dim(permutation, shape, dims);
  Array one_hot = lax::eq(rows, lax::broadcasted_iota(DType::int32, shape, r - 1));
  return matmul(lax::convert_element_type(one_hot, x.dtype()), x);
}

Array triangular_solve(const Array& a, const Array& b, bool left_side, bool lower, bool transpose_a,
                       bool unit_diagonal) {
  return core::bind1(core::Prim::triangular_solve, {a, b},
                     {{"left_side", left_side},
                      {"lower", lower},
                      {"transpose_a", transpose_a},
                      {"conjugate_a", false},
                      {"unit_diagonal", unit_diagonal}});
}

Shape batch_shape(const Array& x, int64_t core_rank) {
  return Shape(x.shape().begin(), x.shape().end() - core_rank);
}

}  // namespace parax::prims::linalg

namespace parax::prims::linalg {

Array block(const Array& x, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  const size_t r = size_t(x.ndim());
  std::vector<int64_t> start(r, 0);
  std::vector<int64_t> limit(x.shape().begin(), x.shape().end());
  start[r - 2] = r0;
  start[r - 1] = c0;
  limit[r - 2] = r1;
  limit[r - 1] = c1;
  return lax::slice(x, start, limit);
}

Array pad_to(const Array& x, int64_t rows, int64_t cols) {
  const size_t r = size_t(x.ndim());
  std::vector<lax::PadConfig> config(r);
  config[r - 2].high = rows - x.shape()[r - 2];
  config[r - 1].high = cols - x.shape()[r - 1];
  return lax::pad(x, constant(0, x.dtype()), config);
}

Array unpermute_rows(const Array& x, const Array& permutation) {
  const int64_t r = x.ndim();
  const int64_t m = x.shape()[size_t(r - 2)];
  Shape shape = batch_shape(x);
  shape.push_back(m);
  shape.push_back(m);
  std::vector<int64_t> dims(static_cast<size_t>(r - 1));
  std::iota(dims.begin(), dims.end(), 0);
  Array rows = lax::broadcast_in_dim(permutation, shape, dims);
  Array one_hot = lax::eq(rows, lax::broadcasted_iota(DType::int32, shape, r - 1));
  return matmul(mT(lax::convert_element_type(one_hot, x.dtype())), x);
}

Array rows_of(const Array& v, int64_t rows) {
  const int64_t r = v.ndim();
  Shape shape(v.shape().begin(), v.shape().end() - 1);
  shape.push_back(rows);
  shape.push_back(v.shape().back());
  std::vector<int64_t> dims(static_cast<size_t>(r));
  std::iota(dims.begin(), dims.end(), 0);
  dims.back() = r;
  return lax::broadcast_in_dim(v, shape, dims);
}

void check_operand(std::string_view name, const core::Aval& a, size_t i, size_t rank, bool lapack) {
  if (a.shape.size() < rank) {
    throw TypeError("Input " + std::to_string(i) + " to " + std::string(name) +
                    " must have rank at least " + std::to_string(rank) +
                    ", but got shape=" + shape_str(a.shape));
  }
  if (!is_floating(a.dtype)) {
    const std::string pos = " at position " + std::to_string(i);
    throw TypeError(std::string(name) + " does not accept dtype " +
                    std::string(dtype_name(a.dtype)) + pos + ". Accepted dtypes" + pos +
                    " are subtypes of floating, complexfloating.");
  }
  if (lapack) check_lapack_dtype(name, a);
}

void check_lapack_dtype(std::string_view name, const core::Aval& a) {
  if (a.dtype != DType::float32 && a.dtype != DType::float64) {
    throw NotImplementedError("[" + std::string(name) + "] Unsupported dtype " +
                              std::string(dtype_name(a.dtype)) +
                              ": LAPACK takes float32 or float64; convert the operand first");
  }
}

Shape core_shape(const core::Aval& a, size_t rank) {
  return Shape(a.shape.end() - int64_t(rank), a.shape.end());
}

Shape leading(const core::Aval& a, size_t rank) {
  return Shape(a.shape.begin(), a.shape.end() - int64_t(rank));
}

Shape with_batch(const Shape& batch, std::initializer_list<int64_t> dims) {
  Shape s = batch;
  s.insert(s.end(), dims.begin(), dims.end());
  return s;
}

core::ShardingRule batch_sharding_rule(std::span<const core::Aval> in,
                                       std::span<const core::Aval> out, size_t core_rank) {
  core::ShardingRule rule;
  const size_t nb = in[0].shape.size() - core_rank;
  for (size_t d = 0; d < nb; ++d) rule.factor_sizes.push_back(in[0].shape[d]);
  auto dims_of = [&](const core::Aval& a) {
    std::vector<int> dims;
    for (size_t d = 0; d < a.shape.size(); ++d) {
      dims.push_back(d < nb ? int(d) : core::ShardingRule::kNone);
    }
    return dims;
  };
  for (const core::Aval& a : in) rule.operands.push_back(dims_of(a));
  for (const core::Aval& a : out) rule.results.push_back(dims_of(a));
  return rule;
}

core::Batched batch_at_front(core::Prim p, std::span<const Array> in, std::span<const int> dims,
                             const core::Params& params, const core::BatchAxis& axis) {
  Array x = core::move_batch_dim(in[0], dims[0], 0, axis.size);
  std::vector<Array> outs = core::bind(p, {x}, params);
  std::vector<int> out_dims(outs.size(), 0);
  return core::Batched{std::move(outs), std::move(out_dims)};
}

core::Cost cost(core::Prim p, std::span<const core::Aval> in, const core::Params& params) {
  const Shape& s = in[0].shape;
  const double m = double(s[s.size() - 2]), n = double(s.back()), k = std::min(m, n);
  double per = 0;
  switch (p) {
    case core::Prim::cholesky:
      per = n * n * n / 3;
      break;
    case core::Prim::lu:
      per = m * n * k - (m + n) * k * k / 2 + k * k * k / 3;
      break;
    case core::Prim::qr:
      per = 4 * m * n * k - 4 * k * k * k / 3;
      break;
    case core::Prim::svd:
      per = 4 * m * n * k + 8 * k * k * k;
      break;
    case core::Prim::eigh:
      per = 9 * n * n * n;
      break;
    case core::Prim::triangular_solve: {
      const Shape& b = in[1].shape;
      const double rows = double(b[b.size() - 2]), cols = double(b.back());
      per = params.get<bool>("left_side") ? rows * rows * cols : cols * cols * rows;
      break;
    }
    default:
      break;
  }
  return {.flops = per * double(shape_size(leading(in[0], 2)))};
}

}  // namespace parax::prims::linalg
