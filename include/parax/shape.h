// Shapes and per-dimension slices (the index of a shard).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace parax {

// Dimensions, leading first. Anything brace-initialisable works: `{8192, 8192}`.
using Shape = std::vector<int64_t>;

// JAX's None: an unsharded dimension in a PartitionSpec, an absent shape or axis list.
struct None_t {
  constexpr bool operator==(const None_t&) const = default;
};
inline constexpr None_t None{};

// A shape or axis list whose JAX default is None: takes a braced list (`{4, 2}`; `{}` is
// the empty list, shape ()), a std::vector, or std::nullopt / parax::None. It is the
// std::optional it derives from; the constructors exist because std::optional does not take
// a braced list.
class OptionalInts : public std::optional<std::vector<int64_t>> {
 public:
  OptionalInts(std::nullopt_t) {}       // NOLINT(google-explicit-constructor)
  OptionalInts(None_t) {}               // NOLINT(google-explicit-constructor)
  OptionalInts(std::vector<int64_t> v)  // NOLINT(google-explicit-constructor)
      : optional(std::move(v)) {}
  OptionalInts(std::initializer_list<int64_t> v)  // NOLINT(google-explicit-constructor)
      : optional(std::vector<int64_t>(v)) {}
  OptionalInts(std::optional<std::vector<int64_t>> v)  // NOLINT(google-explicit-constructor)
      : optional(std::move(v)) {}
};
// A shape, or None (the function then infers it).
using OptionalShape = OptionalInts;
// An axis list, or None (the function's default axes).
using OptionalAxes = OptionalInts;

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
