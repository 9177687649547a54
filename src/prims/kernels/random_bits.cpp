// The kernel of random_bits: JAX's threefry2x32 hash over the ORIGINAL or PARTITIONABLE
// counter layout (reference/jax-random.md §4-5).
#include "prims/kernels/random_bits.h"

#include <cstring>

#include "prims/prim_util.h"
#include "prims/structural.h"

namespace parax::prims::kernels {
namespace {

struct Pair {
  uint32_t x0, x1;
};

inline uint32_t rotl(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

// Threefry-2x32 with 20 rounds (Random123's R_32x2 rotations), as JAX's threefry2x32.
Pair threefry2x32(uint32_t k0, uint32_t k1, uint32_t x0, uint32_t x1) {
  static constexpr int kRot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  const uint32_t ks[3] = {k0, k1, k0 ^ k1 ^ 0x1BD11BDAu};
  x0 += ks[0];
  x1 += ks[1];
  for (int g = 0; g < 5; ++g) {
    for (int r : kRot[g % 2]) {
      x0 += x1;
      x1 = rotl(x1, r);
      x1 ^= x0;
    }
    x0 += ks[(g + 1) % 3];
    x1 += ks[(g + 2) % 3] + uint32_t(g + 1);
  }
  return {x0, x1};
}
template <class T>
void store_word32(T* out, int64_t i, uint32_t a, uint32_t b) {
  if constexpr (sizeof(T) == 8) {
    out[i] = (uint64_t(a) << 32) | b;
  } else {
    out[i] = T(a ^ b);  // 8 and 16 bits keep the low bits of the 32-bit value
  }
}

// Every local element of one key's draw hashes its global row-major index (hi, lo
// words); the shard's global position comes from per-dimension offsets set by localize.
// `dims` is the first drawn dimension of the result (after the keys' batch dimensions).
template <class T>
void partitionable_draw(const KernelCall& c, size_t dims, uint32_t k0, uint32_t k1, T* out) {
  const Shape local(c.out_avals[0].shape.begin() + long(dims), c.out_avals[0].shape.end());
  const Shape& global = c.params.has("global_shape") ? param_ints(c.params, "global_shape") : local;
  const size_t rank = local.size();
  std::vector<int64_t> offset(rank, 0);
  for (size_t d = 0; d < rank; ++d) {
    const std::string name = "offset_axes_" + std::to_string(d + dims);
    if (c.params.has(name))
      offset[d] = c.device.linear_index(param_ints(c.params, name)) * local[d];
  }
  const std::vector<int64_t> gstride = strides_of(global);
  const int64_t inner = rank == 0 ? 1 : local.back();
  const int64_t rows = inner == 0 ? 0 : shape_size(local) / inner;
  auto body = [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      // The global flat index of the row's first element; unsigned so that padding
      // elements past the end (uneven shards) wrap harmlessly.
      uint64_t base = 0;
      int64_t rest = row;
      for (size_t d = rank - (rank > 0 ? 1 : 0); d-- > 0;) {
        const int64_t l = rest % local[d];
        rest /= local[d];
        base += uint64_t(l + offset[d]) * uint64_t(gstride[d]);
      }
      if (rank > 0) base += uint64_t(offset[rank - 1]);
      for (int64_t j = 0; j < inner; ++j) {
        const uint64_t i = base + uint64_t(j);
        const Pair p = threefry2x32(k0, k1, uint32_t(i >> 32), uint32_t(i));
        store_word32(out, row * inner + j, p.x0, p.x1);
      }
    }
  };
  parallel_chunks(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, inner)), body);
}

// ORIGINAL: R = H(key, iota(words)), JAX's threefry_2x32 over the flat counter list:
// counters j and h + j (h = half, rounded up; a missing last counter is 0) give words
// j and h + j.
std::vector<uint32_t> original_words(uint32_t k0, uint32_t k1, int64_t words) {
  std::vector<uint32_t> r(static_cast<size_t>(words));
  const int64_t h = (words + 1) / 2;
  parallel_chunks(h, 4096, [&](int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j) {
      const bool has_b = h + j < words;
      const Pair p = threefry2x32(k0, k1, uint32_t(j), has_b ? uint32_t(h + j) : 0u);
      r[size_t(j)] = p.x0;
      if (has_b) r[size_t(h + j)] = p.x1;
    }
  });
  return r;
}

template <class T>
void original_draw(int64_t n, uint32_t k0, uint32_t k1, T* out) {
  if (n == 0) return;
  constexpr int64_t kBits = int64_t(sizeof(T)) * 8;
  const int64_t words = (kBits * n + 31) / 32;
  // Huge draws (>= 2^32 - 1 words) split the key into blocks in JAX; not supported.
  if (words >= int64_t(0xFFFFFFFF)) {
    throw NotImplementedError("[random_bits] ORIGINAL mode draws of 2^32 - 1 words or more");
  }
  const std::vector<uint32_t> r = original_words(k0, k1, words);
  if constexpr (kBits == 64) {
    // High words first, then low words.
    for (int64_t i = 0; i < n; ++i) out[i] = (uint64_t(r[size_t(i)]) << 32) | r[size_t(n + i)];
  } else {
    // The little-endian view of the words as bytes / halfwords.
    constexpr int64_t kPer = 32 / kBits;
    for (int64_t i = 0; i < n; ++i) {
      out[i] = T(r[size_t(i / kPer)] >> (kBits * (i % kPer)));
    }
  }
}

}  // namespace

void random_bits(const KernelCall& c) {
  const uint32_t* keys = in_ptr<uint32_t>(c, 0);
  const bool partitionable = c.params.get<bool>("partitionable");
  // One draw per local key, each filling its block of the result.
  const size_t dims = c.in_avals[0].shape.size() - 1;
  const int64_t num_keys = c.in_avals[0].size() / 2;
  const int64_t per_key = num_keys == 0 ? 0 : c.out_avals[0].size() / num_keys;
  auto run = [&](auto zero) {
    using T = decltype(zero);
    T* out = out_ptr<T>(c, 0);
    for (int64_t k = 0; k < num_keys; ++k) {
      const uint32_t* key = keys + 2 * k;
      if (partitionable) {
        partitionable_draw<T>(c, dims, key[0], key[1], out + k * per_key);
      } else {
        original_draw<T>(per_key, key[0], key[1], out + k * per_key);
      }
    }
  };
  switch (c.out_avals[0].dtype) {
    case DType::uint8:
      return run(uint8_t{});
    case DType::uint16:
      return run(uint16_t{});
    case DType::uint32:
      return run(uint32_t{});
    case DType::uint64:
      return run(uint64_t{});
    default:
      PARAX_UNREACHABLE();
  }
}

}  // namespace parax::prims::kernels
