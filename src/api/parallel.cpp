// The named-axis collectives: each binds its primitive with the axes' names and the size
// of the group they span (looked up among the axes enclosing transforms bind).
#include <algorithm>
#include <set>

#include "api/frontend.h"
#include "core/batching.h"
#include "parax/collectives.h"
#include "parax/lax.h"
#include "parax/numpy.h"

namespace parax::lax {
namespace {

using core::Prim;

// Returns the names, after checking that each is bound (NameError otherwise).
std::vector<std::string> bound(const AxisNames& axes) {
  for (const std::string& n : axes.names()) core::find_axis(n);
  return axes.names();
}

Array reduce_over(Prim prim, Array x, const AxisNames& axes) {
  std::vector<std::string> names = bound(axes);
  if (names.empty()) return x;
  return core::bind1(prim, {std::move(x)}, {{"axes", std::move(names)}});
}

int64_t normalize(int64_t axis, int64_t rank, const char* what) {
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) {
    throw ValueError(std::string(what) + " " + std::to_string(axis) +
                     " is out of bounds for an array of rank " + std::to_string(rank));
  }
  return a;
}

}  // namespace

int64_t axis_size(const AxisNames& axis_name) {
  int64_t n = 1;
  for (const std::string& name : axis_name.names()) n *= core::find_axis(name).size;
  return n;
}

Array psum(const ArrayLike& x, const AxisNames& axis_name) {
  const int64_t n = axis_size(axis_name);
  Array a = x.array();
  if (a.dtype() == DType::bool_) a = convert_element_type(a, DType::int32);
  // A value that is the same everywhere (not traced: a constant of the function) sums to
  // itself times the group's size, without communication (psum(1, "i") is the axis size).
  if (core::tracer_of(a) == nullptr) {
    return mul(a, frontend::scalar_int(n, a.dtype(), a.weak_type()));
  }
  return reduce_over(Prim::psum, a, axis_name);
}

Array pmean(const ArrayLike& x, const AxisNames& axis_name) {
  Array s = psum(x, axis_name);
  // An integer count, as JAX divides by psum(1): an int array's mean is then a strong float.
  const int64_t n = axis_size(axis_name);
  return numpy::divide(s, n);
}

Array pmax(const ArrayLike& x, const AxisNames& axis_name) {
  return reduce_over(Prim::pmax, x.array(), axis_name);
}

Array pmin(const ArrayLike& x, const AxisNames& axis_name) {
  return reduce_over(Prim::pmin, x.array(), axis_name);
}

Array all_gather(const Array& x, const AxisNames& axis_name, int64_t axis, bool tiled) {
  std::vector<std::string> names = bound(axis_name);
  const int64_t d = normalize(axis, x.ndim() + (tiled ? 0 : 1), "all_gather axis");
  return core::bind1(Prim::pall_gather, {x},
                     {{"axes", std::move(names)},
                      {"all_gather_dimension", d},
                      {"axis_size", axis_size(axis_name)},
                      {"tiled", tiled}});
}

Array psum_scatter(const Array& x, const AxisNames& axis_name, int64_t scatter_dimension,
                   bool tiled) {
  std::vector<std::string> names = bound(axis_name);
  const int64_t d = normalize(scatter_dimension, x.ndim(), "psum_scatter scatter_dimension");
  return core::bind1(Prim::psum_scatter, {x},
                     {{"axes", std::move(names)},
                      {"scatter_dimension", d},
                      {"axis_size", axis_size(axis_name)},
                      {"tiled", tiled}});
}

Array ppermute(const Array& x, const AxisNames& axis_name,
               const std::vector<std::pair<int64_t, int64_t>>& perm) {
  std::vector<std::string> names = bound(axis_name);
  const int64_t n = axis_size(axis_name);
  std::set<int64_t> sources, dests;
  std::vector<int64_t> flat;
  std::string listed;
  for (const auto& [s, d] : perm) {
    listed += std::string(listed.empty() ? "" : ", ") + "(" + std::to_string(s) + ", " +
              std::to_string(d) + ")";
  }
  for (const auto& [s, d] : perm) {
    if (!sources.insert(s).second || !dests.insert(d).second) {
      throw ValueError("ppermute sources and destinations must be unique, got [" + listed + "].");
    }
    if (s < 0 || s >= n || d < 0 || d >= n) {
      throw ValueError("ppermute pair (" + std::to_string(s) + ", " + std::to_string(d) +
                       ") is out of range for axis size " + std::to_string(n));
    }
    flat.push_back(s);
    flat.push_back(d);
  }
  return core::bind1(Prim::ppermute, {x}, {{"axes", std::move(names)}, {"perm", std::move(flat)}});
}

Array all_to_all(const Array& x, const AxisNames& axis_name, int64_t split_axis,
                 int64_t concat_axis, bool tiled) {
  std::vector<std::string> names = bound(axis_name);
  const int64_t split = normalize(split_axis, x.ndim(), "all_to_all split_axis");
  const int64_t concat = normalize(concat_axis, x.ndim(), "all_to_all concat_axis");
  return core::bind1(Prim::pall_to_all, {x},
                     {{"axes", std::move(names)},
                      {"split_axis", split},
                      {"concat_axis", concat},
                      {"axis_size", axis_size(axis_name)},
                      {"tiled", tiled}});
}

Array axis_index(const AxisNames& axis_name) {
  std::vector<std::string> names = bound(axis_name);
  return core::bind1(Prim::axis_index, {}, {{"axes", std::move(names)}});
}

}  // namespace parax::lax
