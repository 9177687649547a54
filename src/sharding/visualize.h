// Text rendering of a sharding layout, byte for byte as JAX 0.4.35's
// `jax.debug.visualize_sharding` prints it through the `rich` library.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "parax/shape.h"

namespace parax::detail {

struct VisualizeParams {
  double scale = 1.0;
  int min_width = 9;
  int max_width = 80;
  bool color = false;  // true: the coloured (truecolor ANSI, no box) layout
};

// Renders the layout of an array of `shape` (rank 1 or 2) whose shards are given as
// (device id, index) pairs in device-assignment order (several devices may hold the same
// index: replicas share a cell). `platform` is upper-cased in labels ("cpu" -> "CPU").
// Returns the exact text JAX prints, including the final newline.
// Throws parax::ValueError with JAX's message for rank 0 or rank > 2. Shards that tile a
// dimension unevenly are drawn as they are (JAX asserts an even tiling).
std::string render_sharding(const Shape& shape, std::string_view platform,
                            const std::vector<std::pair<int, Index>>& devices_indices,
                            const VisualizeParams& params);

// Renders an array of any rank: a scalar as one cell held by every device; rank > 2, or
// any rank when `dims` names one or two dimensions (negative counts from the end), as one
// grid of those dimensions (by default the last two) per block of the other dimensions,
// each headed by the block's slices with the drawn dimensions named `rows` and `cols`:
// `[0:4, rows, cols]`. Ranks 1 and 2 without `dims` render exactly as render_sharding.
std::string render_array_sharding(const Shape& shape, std::string_view platform,
                                  const std::vector<std::pair<int, Index>>& devices_indices,
                                  const VisualizeParams& params, const std::vector<int>& dims);

// Returns `s` with XML's special characters escaped (&lt; &gt; &amp; &quot;), for SVG and
// HTML text.
std::string xml_escape(std::string_view s);

struct SvgParams {
  int width = 480;  // pixels
};

// Draws the same grids as render_array_sharding as an SVG picture: cells sized to their
// shards' share of each dimension (the grid's height following the shape's aspect, kept
// within [1/8, 2] of its width), coloured as the terminal's colour mode colours them, each
// labelled with its devices; a block's header above its grid.
std::string render_sharding_svg(const Shape& shape, std::string_view platform,
                                const std::vector<std::pair<int, Index>>& devices_indices,
                                const SvgParams& params, const std::vector<int>& dims);

}  // namespace parax::detail
