// The kernel of the reduce_* primitives, one op each. Sums and products combine pairwise
// (numpy's blocked scheme), so float32 error grows with log(n), not n; halves accumulate in
// float32 and integers wrap around.
#include "prims/kernels/reduce.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "prims/prim_util.h"

namespace parax::prims::kernels {
namespace {

const std::vector<int64_t>& reduce_axes(const Params& params) { return param_ints(params, "axes"); }

bool is_reduced(const std::vector<int64_t>& axes, size_t dim) {
  return std::count(axes.begin(), axes.end(), int64_t(dim)) > 0;
}

// ---------------------------------------------------------------------------------------
// Ops. Each names its accumulator type A, identity and combine; kValid says which operand
// dtypes it takes (the shape rules reject the others before a kernel runs).

template <class T>
constexpr bool kIsInt = std::is_integral_v<T> && !std::is_same_v<T, bool>;
template <class T>
constexpr bool kIsFloat = !std::is_integral_v<T>;

// Sums and products: float32 for halves and float32, wrapping unsigned for integers
// (at least 32 bits, since narrower ones would promote to int and overflow).
template <class T>
constexpr auto arith_acc_tag() {
  if constexpr (std::is_same_v<T, double>) {
    return double{};
  } else if constexpr (kIsInt<T>) {
    if constexpr (sizeof(T) < 4)
      return uint32_t{};
    else
      return std::make_unsigned_t<T>{};
  } else {
    return float{};
  }
}
template <class T>
using ArithAcc = decltype(arith_acc_tag<T>());

// Comparisons: halves compare as float32, everything else as itself.
template <class T>
using CompareAcc = std::conditional_t<kIsFloat<T> && sizeof(T) == 2, float, T>;

template <class T>
struct SumOp {
  static constexpr bool kValid = !std::is_same_v<T, bool>;
  using A = ArithAcc<T>;
  static A identity() { return A(0); }
  static A combine(A a, A b) { return A(a + b); }
};

template <class T>
struct ProdOp {
  static constexpr bool kValid = !std::is_same_v<T, bool>;
  using A = ArithAcc<T>;
  static A identity() { return A(1); }
  static A combine(A a, A b) { return A(a * b); }
};

// NaN wins: once `a` is NaN neither test replaces it, and a NaN `b` always replaces.
template <class T>
struct MaxOp {
  static constexpr bool kValid = true;
  using A = CompareAcc<T>;
  static A identity() {
    if constexpr (std::numeric_limits<A>::has_infinity)
      return -std::numeric_limits<A>::infinity();
    else
      return std::numeric_limits<A>::lowest();
  }
  static A combine(A a, A b) { return ((b > a) | (b != b)) ? b : a; }
};

template <class T>
struct MinOp {
  static constexpr bool kValid = true;
  using A = CompareAcc<T>;
  static A identity() {
    if constexpr (std::numeric_limits<A>::has_infinity)
      return std::numeric_limits<A>::infinity();
    else
      return std::numeric_limits<A>::max();
  }
  static A combine(A a, A b) { return ((b < a) | (b != b)) ? b : a; }
};

template <class T>
struct AndOp {
  static constexpr bool kValid = !kIsFloat<T>;
  using A = T;
  static A identity() { return A(~A(0)); }
  static A combine(A a, A b) { return A(a & b); }
};
template <>
struct AndOp<bool> {
  static constexpr bool kValid = true;
  using A = bool;
  static A identity() { return true; }
  static A combine(A a, A b) { return a && b; }
};

template <class T>
struct OrOp {
  static constexpr bool kValid = !kIsFloat<T>;
  using A = T;
  static A identity() { return A(0); }
  static A combine(A a, A b) { return A(a | b); }
};

// ---------------------------------------------------------------------------------------
// Kernel. The operand is merged into runs of adjacent kept or reduced dimensions; passes
// reduce the innermost reduced run each, reading [P, R, I] and writing [P, I].

struct Run {
  int64_t size;
  bool reduced;
};

// Returns the runs of `shape` (size-1 dimensions dropped, neighbours of one kind merged).
std::vector<Run> merge_runs(const Shape& shape, const std::vector<int64_t>& axes) {
  std::vector<Run> runs;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    const bool reduced = is_reduced(axes, d);
    if (!runs.empty() && runs.back().reduced == reduced) {
      runs.back().size *= shape[d];
    } else {
      runs.push_back({shape[d], reduced});
    }
  }
  return runs;
}

constexpr int64_t kBlock = 128;            // leaves of the pairwise tree, as numpy's
constexpr int64_t kParallelRun = 1 << 18;  // contiguous runs at least this long split
constexpr int kParallelDepth = 6;          // ... into 2^6 subtrees reduced in parallel
constexpr int64_t kColumns = 2048;         // columns per task when reducing [P, R, I]
constexpr int64_t kRowLeaf = 16;           // rows a leaf of the column tree adds serially

int64_t split_point(int64_t n) {
  const int64_t half = n / 2;
  return half - half % 8;
}

constexpr int kLanes = 8;  // independent accumulators in a leaf (more measured slower)

// Reduces x[0, n) (n >= 1) pairwise; a leaf keeps kLanes accumulators, combined pairwise.
template <class Op, class S>
typename Op::A reduce_run(const S* x, int64_t n) {
  using A = typename Op::A;
  if (n > kBlock) {
    const int64_t half = split_point(n);
    return Op::combine(reduce_run<Op>(x, half), reduce_run<Op>(x + half, n - half));
  }
  A acc[kLanes];
  std::fill_n(acc, kLanes, Op::identity());
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    // Unrolled, GCC turns the lanes into scalar reductions it may not vectorize (floats
    // cannot be reassociated); as a loop they become vector operations on acc.
#pragma GCC unroll 1
    for (int j = 0; j < kLanes; ++j) acc[j] = Op::combine(acc[j], scalar_cast<A>(x[i + j]));
  }
  for (int j = 0; i < n; ++i, ++j) acc[j] = Op::combine(acc[j], scalar_cast<A>(x[i]));
  for (int w = kLanes / 2; w >= 1; w /= 2) {
    for (int j = 0; j < w; ++j) acc[j] = Op::combine(acc[j], acc[j + w]);
  }
  return acc[0];
}

// The subtrees of reduce_run's tree at `depth`, as (offset, length).
void tree_leaves(int64_t offset, int64_t n, int depth,
                 std::vector<std::pair<int64_t, int64_t>>& leaves) {
  if (depth == 0 || n <= kBlock) {
    leaves.emplace_back(offset, n);
    return;
  }
  const int64_t half = split_point(n);
  tree_leaves(offset, half, depth - 1, leaves);
  tree_leaves(offset + half, n - half, depth - 1, leaves);
}

template <class Op>
typename Op::A combine_tree(int64_t n, int depth, const typename Op::A* values, size_t& next) {
  if (depth == 0 || n <= kBlock) return values[next++];
  const int64_t half = split_point(n);
  const typename Op::A left = combine_tree<Op>(half, depth - 1, values, next);
  return Op::combine(left, combine_tree<Op>(n - half, depth - 1, values, next));
}

// reduce_run with the top of the tree spread over the pool. It splits exactly where
// reduce_run would, so the result does not depend on the number of threads.
template <class Op, class S>
typename Op::A reduce_run_parallel(const S* x, int64_t n) {
  if (n < kParallelRun) return reduce_run<Op>(x, n);
  std::vector<std::pair<int64_t, int64_t>> leaves;
  tree_leaves(0, n, kParallelDepth, leaves);
  // Not std::vector: for A = bool its elements share words, and threads write them.
  auto values = std::make_unique_for_overwrite<typename Op::A[]>(leaves.size());
  parallel_chunks(int64_t(leaves.size()), 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      values[size_t(i)] = reduce_run<Op>(x + leaves[size_t(i)].first, leaves[size_t(i)].second);
    }
  });
  size_t next = 0;
  return combine_tree<Op>(n, kParallelDepth, values.get(), next);
}

// Reduces rows [0, nr) of a column block (row stride `stride`, `w` columns) pairwise
// into acc; `scratch` holds the right halves' partial rows, one level per w entries.
template <class Op, class S>
void reduce_rows(const S* x, int64_t nr, int64_t stride, int64_t w, typename Op::A* acc,
                 typename Op::A* scratch) {
  using A = typename Op::A;
  if (nr > kRowLeaf) {
    const int64_t half = nr / 2;
    reduce_rows<Op>(x, half, stride, w, acc, scratch);
    reduce_rows<Op>(x + half * stride, nr - half, stride, w, scratch, scratch + w);
    for (int64_t j = 0; j < w; ++j) acc[j] = Op::combine(acc[j], scratch[j]);
    return;
  }
  for (int64_t j = 0; j < w; ++j) acc[j] = scalar_cast<A>(x[j]);
  for (int64_t r = 1; r < nr; ++r) {
    const S* row = x + r * stride;
    for (int64_t j = 0; j < w; ++j) acc[j] = Op::combine(acc[j], scalar_cast<A>(row[j]));
  }
}

// One pass: dst[p, i] = reduce over r of src[p, r, i], with R >= 1.
template <class Op, class S, class D>
void reduce_pass(const S* src, D* dst, int64_t p_size, int64_t r_size, int64_t i_size) {
  using A = typename Op::A;
  if (i_size == 1) {
    if (r_size >= kParallelRun) {
      for (int64_t p = 0; p < p_size; ++p) {
        dst[p] = scalar_cast<D>(reduce_run_parallel<Op>(src + p * r_size, r_size));
      }
      return;
    }
    parallel_chunks(p_size, std::max<int64_t>(1, kElementGrain / r_size),
                    [&](int64_t begin, int64_t end) {
                      for (int64_t p = begin; p < end; ++p) {
                        dst[p] = scalar_cast<D>(reduce_run<Op>(src + p * r_size, r_size));
                      }
                    });
    return;
  }
  const int64_t blocks = (i_size + kColumns - 1) / kColumns;
  int levels = 2;
  for (int64_t n = r_size; n > kRowLeaf; n /= 2) ++levels;
  const int64_t grain = std::max<int64_t>(1, kElementGrain / (r_size * kColumns));
  parallel_chunks(p_size * blocks, grain, [&](int64_t begin, int64_t end) {
    auto acc = std::make_unique_for_overwrite<A[]>(size_t(kColumns) * size_t(levels + 1));
    for (int64_t t = begin; t < end; ++t) {
      const int64_t p = t / blocks;
      const int64_t c0 = (t % blocks) * kColumns;
      const int64_t w = std::min(kColumns, i_size - c0);
      reduce_rows<Op>(src + p * r_size * i_size + c0, r_size, i_size, w, acc.get(),
                      acc.get() + kColumns);
      D* out = dst + p * i_size + c0;
      for (int64_t j = 0; j < w; ++j) out[j] = scalar_cast<D>(acc[size_t(j)]);
    }
  });
}

template <class Op, class T>
void reduce_typed(const KernelCall& call) {
  using A = typename Op::A;
  const Aval& in = call.in_avals[0];
  T* out = out_ptr<T>(call, 0);
  const int64_t out_size = call.out_avals[0].size();
  if (out_size == 0) return;
  const std::vector<int64_t>& axes = reduce_axes(call.params);
  for (int64_t a : axes) {
    if (in.shape[size_t(a)] == 0) {
      std::fill_n(out, out_size, scalar_cast<T>(Op::identity()));
      return;
    }
  }
  std::vector<Run> runs = merge_runs(in.shape, axes);
  const T* x = in_ptr<T>(call, 0);
  const auto has_reduced = [&] {
    return std::any_of(runs.begin(), runs.end(), [](const Run& r) { return r.reduced; });
  };
  if (!has_reduced()) {
    // Nothing to combine (no axes, or only size-1 ones): round-trip through A is exact.
    parallel_chunks(out_size, kElementGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) out[i] = scalar_cast<T>(scalar_cast<A>(x[i]));
    });
    return;
  }
  // Intermediate passes keep A, so halves and narrow integers round only once. (Not
  // std::vector: A may be bool.)
  std::unique_ptr<A[]> current;
  bool first = true;
  while (true) {
    size_t g = runs.size();
    while (!runs[--g].reduced) {
    }
    int64_t p_size = 1;
    int64_t i_size = 1;
    for (size_t j = 0; j < g; ++j) p_size *= runs[j].size;
    for (size_t j = g + 1; j < runs.size(); ++j) i_size *= runs[j].size;
    const int64_t r_size = runs[g].size;
    runs.erase(runs.begin() + int64_t(g));
    if (g > 0 && g < runs.size() && !runs[g - 1].reduced && !runs[g].reduced) {
      runs[g - 1].size *= runs[g].size;
      runs.erase(runs.begin() + int64_t(g));
    }
    const bool last = !has_reduced();
    if (first && last) {
      reduce_pass<Op>(x, out, p_size, r_size, i_size);
    } else if (first) {
      auto next = std::make_unique_for_overwrite<A[]>(size_t(p_size * i_size));
      reduce_pass<Op>(x, next.get(), p_size, r_size, i_size);
      current = std::move(next);
    } else if (last) {
      reduce_pass<Op>(current.get(), out, p_size, r_size, i_size);
    } else {
      auto next = std::make_unique_for_overwrite<A[]>(size_t(p_size * i_size));
      reduce_pass<Op>(current.get(), next.get(), p_size, r_size, i_size);
      current = std::move(next);
    }
    if (last) return;
    first = false;
  }
}

template <template <class> class Op>
void reduce_kernel(const KernelCall& call) {
  dispatch_dtype(call.in_avals[0].dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (Op<T>::kValid) {
      reduce_typed<Op<T>, T>(call);
    } else {
      PARAX_UNREACHABLE();
    }
  });
}

}  // namespace

void reduce_sum(const core::KernelCall& call) { reduce_kernel<SumOp>(call); }
void reduce_prod(const core::KernelCall& call) { reduce_kernel<ProdOp>(call); }
void reduce_max(const core::KernelCall& call) { reduce_kernel<MaxOp>(call); }
void reduce_min(const core::KernelCall& call) { reduce_kernel<MinOp>(call); }
void reduce_and(const core::KernelCall& call) { reduce_kernel<AndOp>(call); }
void reduce_or(const core::KernelCall& call) { reduce_kernel<OrOp>(call); }

}  // namespace parax::prims::kernels
