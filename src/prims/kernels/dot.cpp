// dot_general's kernel: every operand as a stack of matrices ([B, M, K] and [B, K, N]);
// floating results go through single-threaded GEMMs (gemm.h) on panels of output rows,
// integer and bool results through a blocked loop.
#include "prims/kernels/dot.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include "base/thread_pool.h"
#include "prims/kernels/gemm.h"
#include "prims/prim_util.h"

namespace parax::prims::kernels {
namespace {

int64_t product(const Shape& shape, const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= shape[size_t(d)];
  return n;
}

std::vector<int64_t> concat(std::initializer_list<const std::vector<int64_t>*> parts) {
  std::vector<int64_t> all;
  for (const std::vector<int64_t>* p : parts) all.insert(all.end(), p->begin(), p->end());
  return all;
}

// The problem as B independent products of [M, K] by [K, N] matrices.
struct Geometry {
  int64_t b, m, n, k;
  std::vector<int64_t> lhs_perm;  // operand dims in [B, M, K] order
  std::vector<int64_t> rhs_perm;  // operand dims in [B, K, N] order
  DotDims dims;
};

Geometry geometry(const KernelCall& call, const DotDims& d) {
  const Shape& lhs = call.in_avals[0].shape;
  const Shape& rhs = call.in_avals[1].shape;
  Geometry g{product(lhs, d.lhs_batch),
             product(lhs, d.lhs_free),
             product(rhs, d.rhs_free),
             product(lhs, d.lhs_contract),
             concat({&d.lhs_batch, &d.lhs_free, &d.lhs_contract}),
             concat({&d.rhs_batch, &d.rhs_contract, &d.rhs_free}),
             d};
  return g;
}

// Copies `src` into `dst` with its dimensions permuted to `perm` (row-major), converting
// each element to C.
template <class C, class T>
void pack(const T* src, const Shape& shape, const std::vector<int64_t>& perm, C* dst) {
  const size_t rank = perm.size();
  if (rank == 0) {
    dst[0] = scalar_cast<C>(src[0]);
    return;
  }
  const std::vector<int64_t> src_strides = strides_of(shape);
  Shape dims(rank);
  std::vector<int64_t> strides(rank);
  for (size_t i = 0; i < rank; ++i) {
    dims[i] = shape[size_t(perm[i])];
    strides[i] = src_strides[size_t(perm[i])];
  }
  const int64_t inner = dims.back();
  const int64_t inner_stride = strides.back();
  if (shape_size(dims) == 0) return;
  const int64_t rows = shape_size(dims) / inner;
  parallel_chunks(
      rows, std::max<int64_t>(1, kElementGrain / inner), [&](int64_t begin, int64_t end) {
        std::vector<int64_t> idx(rank - 1);
        for (int64_t r = begin, d = int64_t(rank) - 2; d >= 0; --d) {
          idx[size_t(d)] = r % dims[size_t(d)];
          r /= dims[size_t(d)];
        }
        for (int64_t row = begin; row < end; ++row) {
          int64_t offset = 0;
          for (size_t d = 0; d + 1 < rank; ++d) offset += idx[d] * strides[d];
          C* out = dst + row * inner;
          for (int64_t j = 0; j < inner; ++j)
            out[j] = scalar_cast<C>(src[offset + j * inner_stride]);
          for (int64_t d = int64_t(rank) - 2; d >= 0 && ++idx[size_t(d)] == dims[size_t(d)]; --d) {
            idx[size_t(d)] = 0;
          }
        }
      });
}

// One operand as B matrices of element type C: read in place when its layout already is
// a (possibly transposed) row-major matrix per batch, else packed into `storage`.
template <class C>
struct MatrixOperand {
  const C* data = nullptr;
  bool trans = false;  // stored as the transpose of the [M, K] / [K, N] the GEMM wants
  int64_t ld = 0;
  int64_t batch_stride = 0;
  std::vector<C> storage;
};

// Returns whether the contracting dims sit innermost (1) or right after the batch dims
// (0) as one run in the listed order, with the batch dims leading in order; -1 otherwise.
int in_place_layout(size_t rank, const std::vector<int64_t>& batch,
                    const std::vector<int64_t>& contract) {
  for (size_t i = 0; i < batch.size(); ++i) {
    if (batch[i] != int64_t(i)) return -1;
  }
  if (contract.empty()) return 1;
  for (size_t i = 1; i < contract.size(); ++i) {
    if (contract[i] != contract[0] + int64_t(i)) return -1;
  }
  if (contract.back() == int64_t(rank) - 1) return 1;
  if (contract.front() == int64_t(batch.size())) return 0;
  return -1;
}

// `contract_first` says which layout the GEMM reads without transposing: [K, N] for the
// rhs, [M, K] for the lhs.
template <class C>
MatrixOperand<C> matrix_operand(const void* data, const Aval& aval,
                                const std::vector<int64_t>& batch,
                                const std::vector<int64_t>& contract,
                                const std::vector<int64_t>& perm, int64_t rows, int64_t cols,
                                bool contract_first) {
  MatrixOperand<C> op;
  const int inner = in_place_layout(aval.shape.size(), batch, contract);
  op.batch_stride = rows * cols;
  if (aval.dtype == dtype_of<C>() && inner >= 0) {
    op.data = static_cast<const C*>(data);
    op.trans = (inner == 1) == contract_first;
    op.ld = op.trans ? rows : cols;
    return op;
  }
  op.storage.resize(size_t(aval.size()));
  dispatch_dtype(aval.dtype, [&](auto tag) {
    using T = decltype(tag);
    pack<C>(static_cast<const T*>(data), aval.shape, perm, op.storage.data());
  });
  op.data = op.storage.data();
  op.ld = cols;
  return op;
}

// Runs body(batch, row_begin, row_end) over the B*M output rows in parallel panels large
// enough to amortise a GEMM call.
template <class F>
void for_row_panels(const KernelCall& call, const Geometry& g, F&& body) {
  const int64_t flops_per_row = 2 * std::max<int64_t>(1, g.n * g.k);
  int64_t grain = std::max<int64_t>(1, (int64_t(1) << 22) / flops_per_row);
  // Every panel packs the right operand again: one panel per device when devices already
  // keep the threads busy (8 devices on 2 cores), else two per thread, which still leaves
  // room to balance a noisy core.
  const int64_t rows = g.b * g.m;
  const int64_t threads =
      call.device.parallelism > 0 ? call.device.parallelism : int64_t(base::num_threads());
  const int64_t panels = threads == 1 ? 1 : 2 * threads;
  grain = std::max(grain, (rows + panels - 1) / panels);
  parallel_chunks(g.b * g.m, grain, [&](int64_t begin, int64_t end) {
    while (begin < end) {
      const int64_t batch = begin / g.m;
      const int64_t row = begin % g.m;
      const int64_t rows = std::min({end - begin, g.m - row, int64_t(INT_MAX) / 2});
      body(batch, row, row + rows);
      begin += rows;
    }
  });
}

template <class C>
void float_dot(const KernelCall& call, const Geometry& g) {
  if (std::max({g.n, g.k, g.m}) > INT_MAX) {
    throw NotImplementedError(
        "[dot_general] dimension too large for BLAS: M=" + std::to_string(g.m) +
        ", N=" + std::to_string(g.n) + ", K=" + std::to_string(g.k) + "; expected each below 2^31");
  }
  const DotDims& d = g.dims;
  const MatrixOperand<C> a = matrix_operand<C>(call.inputs[0], call.in_avals[0], d.lhs_batch,
                                               d.lhs_contract, g.lhs_perm, g.m, g.k, false);
  const MatrixOperand<C> b = matrix_operand<C>(call.inputs[1], call.in_avals[1], d.rhs_batch,
                                               d.rhs_contract, g.rhs_perm, g.k, g.n, true);
  const DType out_dtype = call.out_avals[0].dtype;
  for_row_panels(call, g, [&](int64_t batch, int64_t r0, int64_t r1) {
    const C* a_rows = a.data + batch * a.batch_stride + (a.trans ? r0 : r0 * a.ld);
    const C* b_mat = b.data + batch * b.batch_stride;
    const int64_t out_offset = (batch * g.m + r0) * g.n;
    if (out_dtype == dtype_of<C>()) {
      C* c = static_cast<C*>(call.outputs[0]) + out_offset;
      gemm(a.trans, b.trans, r1 - r0, g.n, g.k, a_rows, a.ld, b_mat, b.ld, C(0), c, g.n);
      return;
    }
    std::vector<C> c(size_t((r1 - r0) * g.n));
    gemm(a.trans, b.trans, r1 - r0, g.n, g.k, a_rows, a.ld, b_mat, b.ld, C(0), c.data(), g.n);
    dispatch_dtype(out_dtype, [&](auto tag) {
      using Out = decltype(tag);
      Out* out = static_cast<Out*>(call.outputs[0]) + out_offset;
      for (size_t i = 0; i < c.size(); ++i) out[i] = scalar_cast<Out>(c[i]);
    });
  });
}

// C[m, n] = sum_k A[m, k] * B[k, n] over packed row-major operands, in tiles of rows by
// columns so a tile's accumulators stay in L1 while B streams by. kLogical: or of ands.
template <class C, class Out, bool kLogical>
void blocked_gemm(const C* a, const C* b, Out* out, int64_t rows, int64_t n, int64_t k) {
  constexpr int64_t kRowTile = 4;
  constexpr int64_t kColTile = 256;
  C acc[kRowTile][kColTile];
  for (int64_t m0 = 0; m0 < rows; m0 += kRowTile) {
    const int64_t mr = std::min(kRowTile, rows - m0);
    for (int64_t n0 = 0; n0 < n; n0 += kColTile) {
      const int64_t nc = std::min(kColTile, n - n0);
      for (int64_t i = 0; i < mr; ++i) std::fill_n(acc[i], nc, C(0));
      for (int64_t kk = 0; kk < k; ++kk) {
        const C* b_row = b + kk * n + n0;
        for (int64_t i = 0; i < mr; ++i) {
          const C av = a[(m0 + i) * k + kk];
          C* acc_row = acc[i];
          for (int64_t j = 0; j < nc; ++j) {
            if constexpr (kLogical) {
              acc_row[j] = C(acc_row[j] | (av & b_row[j]));
            } else {
              acc_row[j] = C(acc_row[j] + av * b_row[j]);
            }
          }
        }
      }
      for (int64_t i = 0; i < mr; ++i) {
        Out* out_row = out + (m0 + i) * n + n0;
        for (int64_t j = 0; j < nc; ++j) out_row[j] = scalar_cast<Out>(acc[i][j]);
      }
    }
  }
}

// Integers wrap around as XLA's do: accumulate in an unsigned type at least 32 bits wide
// (narrower ones would promote to int and overflow), truncate on store.
template <class Out>
using WrapAcc = std::conditional_t<sizeof(Out) < 4, uint32_t, std::make_unsigned_t<Out>>;

template <class C, class Out, bool kLogical>
void blocked_dot(const KernelCall& call, const Geometry& g) {
  std::vector<C> a(size_t(call.in_avals[0].size()));
  std::vector<C> b(size_t(call.in_avals[1].size()));
  dispatch_dtype(call.in_avals[0].dtype, [&](auto tag) {
    using T = decltype(tag);
    pack<C>(static_cast<const T*>(call.inputs[0]), call.in_avals[0].shape, g.lhs_perm, a.data());
    pack<C>(static_cast<const T*>(call.inputs[1]), call.in_avals[1].shape, g.rhs_perm, b.data());
  });
  Out* out = static_cast<Out*>(call.outputs[0]);
  for_row_panels(call, g, [&](int64_t batch, int64_t r0, int64_t r1) {
    blocked_gemm<C, Out, kLogical>(a.data() + (batch * g.m + r0) * g.k,
                                   b.data() + batch * g.k * g.n, out + (batch * g.m + r0) * g.n,
                                   r1 - r0, g.n, g.k);
  });
}

}  // namespace

void dot(const KernelCall& call, const DotDims& d) {
  const Aval& out = call.out_avals[0];
  if (out.size() == 0) return;
  const Geometry g = geometry(call, d);
  if (g.k == 0) {
    std::memset(call.outputs[0], 0, out.nbytes());  // zero bits are 0 / false in every dtype
    return;
  }
  if (is_floating(out.dtype)) {
    const bool wide = out.dtype == DType::float64 || call.in_avals[0].dtype == DType::float64;
    if (wide)
      float_dot<double>(call, g);
    else
      float_dot<float>(call, g);
    return;
  }
  dispatch_dtype(out.dtype, [&](auto tag) {
    using Out = decltype(tag);
    if constexpr (std::is_same_v<Out, bool>) {
      blocked_dot<uint8_t, bool, true>(call, g);
    } else if constexpr (std::is_integral_v<Out>) {
      blocked_dot<WrapAcc<Out>, Out, false>(call, g);
    }
  });
}

}  // namespace parax::prims::kernels
