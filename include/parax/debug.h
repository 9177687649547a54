// Debugging aids: drawing how an array is laid out over devices, as JAX draws it.
#pragma once

#include <cstdint>
#include <functional>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "parax/array.h"
#include "parax/tree.h"

namespace parax::debug {

struct VisualizeOptions {
  bool use_color = true;  // colours only when printing to a terminal
  double scale = 1.0;
  int min_width = 9;
  int max_width = 80;
  // The dimensions to draw, one or two (negative counts from the end). By default a rank-1
  // or rank-2 array is drawn whole, as JAX draws it; a higher rank draws its last two
  // dimensions, one grid per block of the others (JAX raises there).
  std::vector<int> dims;
};

// Prints the layout of an array of `shape` under `sharding`: as JAX prints it for rank 1
// and 2; a scalar as one cell; higher ranks (or `dims`) as grids of two dimensions, each
// headed by the block of the others it shows, e.g. `[0:4, rows, cols]`. Uneven shards are
// drawn to scale.
void visualize_sharding(const Shape& shape, const Sharding& sharding,
                        const VisualizeOptions& options = {}, std::ostream& os = std::cout);

// Prints which devices hold which part of x (JAX's jax.debug.visualize_array_sharding):
// now for a concrete array; inside jit, shard_map or vmap when the computation compiles,
// with the layout the compiler chose (not again on cached calls). `os` must then outlive
// that compile.
void visualize_array_sharding(const Array& x, const VisualizeOptions& options = {});
void visualize_array_sharding(const Array& x, std::ostream& os,
                              const VisualizeOptions& options = {});

struct SvgOptions {
  int width = 480;        // pixels
  std::vector<int> dims;  // as VisualizeOptions::dims
};

// Returns the layout as an SVG picture for reports and notebooks: the grids
// visualize_sharding prints, each cell sized to its shard's share of each dimension and
// coloured as the terminal's colour mode colours it, labelled with its devices.
std::string sharding_svg(const Shape& shape, const Sharding& sharding,
                         const SvgOptions& options = {});
// The same for a concrete array (inside jit, call it from inspect_array_sharding).
std::string sharding_svg(const Array& x, const SvgOptions& options = {});
// Returns an HTML page showing x's shape, dtype and sharding above its sharding_svg.
std::string to_html(const Array& x, const SvgOptions& options = {});

// Calls `callback` with x's sharding (JAX's jax.debug.inspect_array_sharding): now for a
// concrete array; for a traced one when the computation compiles, with the sharding the
// compiler chose for it (inside shard_map, over the axes left automatic: P() when all are
// manual), and not again on cached calls.
void inspect_array_sharding(const Array& x, std::function<void(const Sharding&)> callback);
// The same for every array of a pytree.
template <class Tree>
requires(!std::is_convertible_v<const Tree&, const Array&>) void inspect_array_sharding(
    const Tree& tree, const std::function<void(const Sharding&)>& callback) {
  for (const Array& leaf : tree::leaves(tree)) inspect_array_sharding(leaf, callback);
}

// What one of parax's compile caches holds (size, capacity: now) and has done since the
// process started. Each evicts its least recently used entries beyond its capacity.
struct CacheInfo {
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t evictions = 0;
  int64_t size = 0;
  int64_t capacity = 0;
};

// Returns the counters of a cache:
//   "eager"        executables of eager operations (capacity: config parax_eager_cache_size)
//   "jit_trace"    traces held by all live jit objects (capacity: per object,
//                  parax_jit_cache_size)
//   "jit_compile"  executables of the traced programs of live jit objects (capacity: per
//                  program, parax_jit_cache_size)
// Other names raise ValueError.
CacheInfo cache_info(std::string_view cache);

// What the cache of freed large device buffers holds and has done.
struct BufferCacheInfo {
  int64_t cached_bytes = 0;
  int64_t cached_blocks = 0;
  int64_t capacity_bytes = 0;  // config parax_buffer_cache_bytes
  int64_t reused = 0;          // allocations served from the cache
  int64_t mapped = 0;          // allocations that took fresh memory from the system
  int64_t released = 0;        // blocks returned to the system
};
BufferCacheInfo buffer_cache_info();

// Empties the eager and jit_compile caches and returns cached buffers and free heap memory
// to the system (as jax.clear_caches; jit objects keep their traces and recompile).
void clear_caches();

}  // namespace parax::debug
