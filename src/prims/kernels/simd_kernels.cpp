// The elementwise kernels' vectorized paths (declared in elementwise.h): a KernelCall's
// buffers split into parallel chunks for the loops of simd.h. float32 and float64 run in
// place; float16 and bfloat16 compute in float32, as the generic kernels do, through tiles
// converted on the stack (so nothing is allocated and every result rounds once to the half
// type).
#include <algorithm>
#include <cstring>

#include "prims/elementwise.h"

namespace parax::prims {
namespace {

// Elements per half-precision tile: three float tiles stay within 12 KiB of stack and L1.
constexpr int64_t kTile = 1024;

template <class H>
void to_float(const H* x, float* y, int64_t n) {
  if (simd::convert(dtype_of<H>(), DType::float32, x, y, n)) return;
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(x[i]);
}

template <class H>
void from_float(const float* x, H* y, int64_t n) {
  if (simd::convert(DType::float32, dtype_of<H>(), x, y, n)) return;
  for (int64_t i = 0; i < n; ++i) y[i] = H(x[i]);
}

simd::Store store_for(const Aval& out) {
  return out.size() * dtype_itemsize(out.dtype) >= kStreamBytes ? simd::Store::stream
                                                                : simd::Store::cached;
}

// Operand k of an n-element call, from element `begin`: rank-0 operands broadcast.
template <class T>
simd::In<T> operand(const KernelCall& c, size_t k, int64_t begin) {
  const bool scalar = c.in_avals[k].size() != c.out_avals[0].size();
  return {in_ptr<T>(c, k) + (scalar ? 0 : begin), scalar};
}

// A half operand's tile [begin, begin + len) as floats in `buf` (one float if rank 0).
template <class H>
simd::In<float> float_tile(const KernelCall& c, size_t k, int64_t begin, int64_t len, float* buf) {
  const simd::In<H> h = operand<H>(c, k, begin);
  to_float(h.p, buf, h.scalar ? 1 : len);
  return {buf, h.scalar};
}

template <class T>
bool unary_typed(simd::UnaryOp op, const KernelCall& c) {
  if (!simd::unary(op, static_cast<const T*>(nullptr), nullptr, 0)) return false;
  const T* x = in_ptr<T>(c, 0);
  T* y = out_ptr<T>(c, 0);
  const simd::Store store = store_for(c.out_avals[0]);
  parallel_chunks(c.out_avals[0].size(), kElementGrain, [&](int64_t begin, int64_t end) {
    simd::unary(op, x + begin, y + begin, end - begin, store);
  });
  return true;
}

template <class H>
bool unary_half(simd::UnaryOp op, const KernelCall& c) {
  if (!simd::unary(op, static_cast<const float*>(nullptr), nullptr, 0)) return false;
  const H* x = in_ptr<H>(c, 0);
  H* y = out_ptr<H>(c, 0);
  parallel_chunks(c.out_avals[0].size(), kElementGrain, [&](int64_t begin, int64_t end) {
    float buf[kTile];
    for (int64_t t = begin; t < end; t += kTile) {
      const int64_t len = std::min(kTile, end - t);
      to_float(x + t, buf, len);
      simd::unary(op, buf, buf, len);
      from_float(buf, y + t, len);
    }
  });
  return true;
}

template <class T>
bool binary_typed(simd::BinaryOp op, const KernelCall& c) {
  if (!simd::binary(op, simd::In<T>{nullptr, false}, simd::In<T>{nullptr, false}, nullptr, 0)) {
    return false;
  }
  T* y = out_ptr<T>(c, 0);
  const simd::Store store = store_for(c.out_avals[0]);
  parallel_chunks(c.out_avals[0].size(), kElementGrain, [&](int64_t begin, int64_t end) {
    simd::binary(op, operand<T>(c, 0, begin), operand<T>(c, 1, begin), y + begin, end - begin,
                 store);
  });
  return true;
}

// Runs f(a, b, len, begin) on float tiles of two half operands; f stores its own result.
template <class H, class F>
void half_tiles(const KernelCall& c, F f) {
  parallel_chunks(c.out_avals[0].size(), kElementGrain, [&](int64_t begin, int64_t end) {
    float abuf[kTile], bbuf[kTile];
    for (int64_t t = begin; t < end; t += kTile) {
      const int64_t len = std::min(kTile, end - t);
      f(float_tile<H>(c, 0, t, len, abuf), float_tile<H>(c, 1, t, len, bbuf), len, t);
    }
  });
}

template <class H>
bool binary_half(simd::BinaryOp op, const KernelCall& c) {
  const simd::In<float> none{nullptr, false};
  if (!simd::binary(op, none, none, nullptr, 0)) return false;
  H* y = out_ptr<H>(c, 0);
  half_tiles<H>(c, [&](simd::In<float> a, simd::In<float> b, int64_t len, int64_t t) {
    float out[kTile];
    simd::binary(op, a, b, out, len);
    from_float(out, y + t, len);
  });
  return true;
}

}  // namespace

bool run_simd(simd::UnaryOp op, const KernelCall& c) {
  if (op == simd::UnaryOp::none) return false;
  switch (c.in_avals[0].dtype) {
    case DType::float32:
      return unary_typed<float>(op, c);
    case DType::float64:
      return unary_typed<double>(op, c);
    case DType::float16:
      return unary_half<float16_t>(op, c);
    case DType::bfloat16:
      return unary_half<bfloat16_t>(op, c);
    default:
      return false;
  }
}

bool run_simd(simd::BinaryOp op, const KernelCall& c) {
  if (op == simd::BinaryOp::none || c.in_avals[0].dtype != c.in_avals[1].dtype) return false;
  switch (c.in_avals[0].dtype) {
    case DType::float32:
      return binary_typed<float>(op, c);
    case DType::float64:
      return binary_typed<double>(op, c);
    case DType::float16:
      return binary_half<float16_t>(op, c);
    case DType::bfloat16:
      return binary_half<bfloat16_t>(op, c);
    default:
      return false;
  }
}

bool run_simd(simd::CompareOp op, const KernelCall& c) {
  bool* y = out_ptr<bool>(c, 0);
  switch (c.in_avals[0].dtype) {
    case DType::float32:
      parallel_chunks(c.out_avals[0].size(), kElementGrain, [&](int64_t begin, int64_t end) {
        simd::compare(op, operand<float>(c, 0, begin), operand<float>(c, 1, begin), y + begin,
                      end - begin);
      });
      return true;
    case DType::float16:
      half_tiles<float16_t>(c, [&](simd::In<float> a, simd::In<float> b, int64_t len, int64_t t) {
        simd::compare(op, a, b, y + t, len);
      });
      return true;
    case DType::bfloat16:
      half_tiles<bfloat16_t>(c, [&](simd::In<float> a, simd::In<float> b, int64_t len, int64_t t) {
        simd::compare(op, a, b, y + t, len);
      });
      return true;
    default:
      return false;
  }
}

}  // namespace parax::prims
