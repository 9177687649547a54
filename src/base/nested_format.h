// numpy's layout of an n-d array as text (_formatArray): brackets, separators, line
// wrapping and '...' summarization, over elements already formatted as strings.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "parax/shape.h"

namespace parax::detail {

struct NestedFormat {
  std::string separator = " ";
  // Width of the text before the opening bracket ("Array(" is 6); continuation lines are
  // indented by it plus one.
  int prefix_width = 0;
  int line_width = 75;  // numpy's linewidth minus the suffix's length
  bool summarize = false;
  int edge_items = 3;
};

// Appends the text of the element at row-major flat index i to `out`.
using ElementText = std::function<void(int64_t i, std::string& out)>;

// Returns the nested-bracket text of an array of `shape`.
// Requires: ndim >= 1 and no zero dimension.
std::string format_nested(const Shape& shape, const ElementText& element, const NestedFormat& fmt);

}  // namespace parax::detail
