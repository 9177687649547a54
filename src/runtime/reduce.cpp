#include "runtime/reduce.h"

#include <type_traits>

#include "base/check.h"
#include "base/dtype_dispatch.h"

namespace parax::runtime {
namespace {

template <ReduceOp kOp, class T>
T apply(T a, T b) {
  if constexpr (std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>) {
    return T(apply<kOp>(float(a), float(b)));
  } else if constexpr (std::is_same_v<T, bool>) {
    return (kOp == ReduceOp::and_ || kOp == ReduceOp::min || kOp == ReduceOp::prod) ? (a && b)
                                                                                    : (a || b);
  } else if constexpr (kOp == ReduceOp::sum) {
    return T(a + b);
  } else if constexpr (kOp == ReduceOp::prod) {
    return T(a * b);
  } else if constexpr (kOp == ReduceOp::max) {
    return (a != a || a > b) ? a : b;  // NaN propagates
  } else if constexpr (kOp == ReduceOp::min) {
    return (a != a || a < b) ? a : b;
  } else if constexpr (std::is_integral_v<T>) {
    return kOp == ReduceOp::and_ ? T(a & b) : T(a | b);
  } else {
    PARAX_UNREACHABLE();  // the shape rules give and/or integer or bool operands only
  }
}

}  // namespace

void combine(void* out, const void* a, const void* b, int64_t n, DType dtype, ReduceOp op) {
  // The dtype and op are chosen once, not per element.
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    auto run = [&]<ReduceOp kOp>() {
      T* o = static_cast<T*>(out);
      const T* x = static_cast<const T*>(a);
      const T* y = static_cast<const T*>(b);
      for (int64_t i = 0; i < n; ++i) o[i] = apply<kOp>(x[i], y[i]);
    };
    switch (op) {
      case ReduceOp::sum:
        return run.template operator()<ReduceOp::sum>();
      case ReduceOp::prod:
        return run.template operator()<ReduceOp::prod>();
      case ReduceOp::max:
        return run.template operator()<ReduceOp::max>();
      case ReduceOp::min:
        return run.template operator()<ReduceOp::min>();
      case ReduceOp::and_:
        return run.template operator()<ReduceOp::and_>();
      case ReduceOp::or_:
        return run.template operator()<ReduceOp::or_>();
    }
  });
}

ReduceOp reduce_op_of(std::string_view name) {
  if (name == "sum") return ReduceOp::sum;
  if (name == "prod") return ReduceOp::prod;
  if (name == "max") return ReduceOp::max;
  if (name == "min") return ReduceOp::min;
  if (name == "and") return ReduceOp::and_;
  PARAX_CHECK(name == "or", "unknown reduction " << name);
  return ReduceOp::or_;
}

}  // namespace parax::runtime
