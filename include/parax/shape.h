// Shapes and per-dimension slices (the index of a shard).
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace parax {

// Dimensions, leading first. Anything brace-initialisable works: `{8192, 8192}`.
using Shape = std::vector<int64_t>;

// One dimension of a shard's index, like Python's slice(start, stop). An absent bound
// means "from the beginning" / "to the end", as JAX's slice(None).
struct Slice {
  std::optional<int64_t> start;
  std::optional<int64_t> stop;

  // Returns the first index covered, for a dimension of size `dim`.
  int64_t begin(int64_t /*dim*/) const { return start.value_or(0); }
  // Returns one past the last index covered.
  int64_t end(int64_t dim) const { return stop.value_or(dim); }
  bool is_full() const { return !start && !stop; }
  bool operator==(const Slice&) const = default;
};

// A shard's position in the global array: one Slice per dimension.
using Index = std::vector<Slice>;

// Prints Python's form: `slice(0, 2, None)`, `slice(None, None, None)`.
std::ostream& operator<<(std::ostream& os, const Slice& s);
// Prints a tuple of slices: `(slice(0, 2, None), slice(None, None, None))`.
std::string index_str(const Index& index);
// Prints a shape as a Python tuple: `(8, 2)`, `(10,)`, `()`.
std::string shape_str(const Shape& shape);
// Returns the number of elements. Raises ValueError when it does not fit in int64.
int64_t shape_size(const Shape& shape);

}  // namespace parax
