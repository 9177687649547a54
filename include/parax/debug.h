// Debugging aids: drawing how an array is laid out over devices, as JAX draws it.
#pragma once

#include <iostream>

#include "parax/array.h"

namespace parax::debug {

struct VisualizeOptions {
  bool use_color = true;  // colours only when printing to a terminal
  double scale = 1.0;
  int min_width = 9;
  int max_width = 80;
};

// Prints the layout of a rank-1 or rank-2 array of `shape` under `sharding`.
// Throws ValueError for other ranks.
void visualize_sharding(const Shape& shape, const Sharding& sharding,
                        const VisualizeOptions& options = {}, std::ostream& os = std::cout);

// Prints which devices hold which part of x (JAX's jax.debug.visualize_array_sharding).
void visualize_array_sharding(const Array& x, const VisualizeOptions& options = {});
void visualize_array_sharding(const Array& x, std::ostream& os,
                              const VisualizeOptions& options = {});

}  // namespace parax::debug
