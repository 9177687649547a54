#include "prims/prim_util.h"

#include "base/thread_pool.h"

namespace parax::prims {

Shape elementwise_shape(std::string_view name, std::span<const Aval> in) {
  const Shape* shape = nullptr;
  for (const Aval& a : in) {
    if (a.shape.empty()) continue;
    if (shape == nullptr) {
      shape = &a.shape;
    } else if (*shape != a.shape) {
      std::string msg = std::string(name) + " got incompatible shapes for broadcasting: ";
      for (size_t i = 0; i < in.size(); ++i) msg += (i ? ", " : "") + shape_str(in[i].shape);
      throw TypeError(msg + ".");
    }
  }
  return shape ? *shape : Shape{};
}

void check_body_inputs(std::string_view name, std::span<const Aval> in,
                       std::span<const Aval> expected) {
  const std::string prefix = "[" + std::string(name) + "] ";
  if (in.size() != expected.size()) {
    throw TypeError(prefix + "operands: got " + std::to_string(in.size()) + "; its body takes " +
                    std::to_string(expected.size()));
  }
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i].shape == expected[i].shape && in[i].dtype == expected[i].dtype) continue;
    throw TypeError(prefix + "operand " + std::to_string(i) +
                    " does not match its body's input: got " + in[i].short_str() + "; expected " +
                    expected[i].short_str());
  }
}

void check_same_dtypes(std::string_view name, std::span<const Aval> in) {
  for (const Aval& a : in) {
    if (a.dtype == in[0].dtype) continue;
    std::string msg = std::string(name) + " requires arguments to have the same dtypes, got ";
    for (size_t i = 0; i < in.size(); ++i)
      msg += (i ? ", " : "") + std::string(dtype_name(in[i].dtype));
    throw TypeError(msg + ".");
  }
}

ShardingRule elementwise_sharding_rule(std::span<const Aval> in, std::span<const Aval> out,
                                       const Params&) {
  ShardingRule rule;
  const size_t rank = out[0].shape.size();
  std::vector<int> dims(rank);
  for (size_t d = 0; d < rank; ++d) {
    dims[d] = int(d);
    rule.factor_sizes.push_back(out[0].shape[d]);
  }
  for (const Aval& a : in) rule.operands.push_back(a.shape.empty() ? std::vector<int>{} : dims);
  for (size_t i = 0; i < out.size(); ++i) rule.results.push_back(dims);
  return rule;
}

std::vector<int64_t> strides_of(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

void parallel_chunks_split(int64_t n, int64_t grain,
                           const std::function<void(int64_t, int64_t)>& body) {
  const int64_t chunks =
      std::min<int64_t>((n + grain - 1) / grain, 4 * int64_t(base::num_threads()));
  const int64_t step = (n + chunks - 1) / chunks;
  base::parallel_for(chunks, [&](int64_t c) {
    const int64_t begin = c * step;
    const int64_t end = std::min(n, begin + step);
    if (begin < end) body(begin, end);
  });
}

void check_preferred(DType input, DType preferred) {
  if (input == preferred) return;
  const bool compatible =
      (is_integer(input) && (is_integer(preferred) || is_floating(preferred))) ||
      (is_floating(input) && is_floating(preferred));
  if (!compatible) {
    throw TypeError(
        "Input type is incompatible with `preferred_element_type`. The compatible "
        "combinations of (input_type, preferred_element_type) are (integral, "
        "integral), (integral, floating), (floating, floating), (complex, complex.");
  }
  if (is_integer(preferred) && dtype_itemsize(preferred) < dtype_itemsize(input)) {
    throw TypeError(
        "`preferred_element_type` must not be narrower than the original type, got "
        "preferred_element_type of " +
        std::string(dtype_name(preferred)) + " for result type of " +
        std::string(dtype_name(input)) + ".");
  }
}

}  // namespace parax::prims
