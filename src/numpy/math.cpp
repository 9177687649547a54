// numpy's elementwise functions as compositions of lax, following jax.numpy's ufuncs.py
// step by step so dtypes, weak types and values match JAX's.
#include <cmath>
#include <limits>
#include <numbers>

#include "core/trace.h"
#include "numpy/numpy_internal.h"
#include "parax/lax.h"
#include "parax/numpy.h"

namespace parax::numpy {
namespace {

using frontend::constant_like;

// One operand's promotion (jnp's promote_args_inexact / _numeric with a single argument).
Array inexact(const ArrayLike& x) { return frontend::promote_dtypes_inexact({x.array()})[0]; }
Array numeric(const ArrayLike& x) { return frontend::promote_dtypes_numeric({x.array()})[0]; }

bool is_integral_or_bool(DType t) { return is_integer(t) || t == DType::bool_; }

// JAX's _to_bool: nonzero test for non-bool operands.
Array to_bool(const Array& x) {
  return x.dtype() == DType::bool_ ? x : lax::ne(x, constant_like(x, 0));
}

std::pair<Array, Array> args(std::string_view lax_name, const ArrayLike& x, const ArrayLike& y) {
  std::vector<Array> xs = frontend::promote_args(lax_name, {x.array(), y.array()});
  return {xs[0], xs[1]};
}
std::pair<Array, Array> args_inexact(std::string_view lax_name, const ArrayLike& x,
                                     const ArrayLike& y) {
  std::vector<Array> xs = frontend::promote_args_inexact(lax_name, {x.array(), y.array()});
  return {xs[0], xs[1]};
}
std::pair<Array, Array> args_numeric(std::string_view lax_name, const ArrayLike& x,
                                     const ArrayLike& y) {
  std::vector<Array> xs = frontend::promote_args_numeric(lax_name, {x.array(), y.array()});
  return {xs[0], xs[1]};
}

// Python's float_divmod (JAX's _float_divmod), for floating floor_divide.
std::pair<Array, Array> float_divmod(const Array& x1, const Array& x2) {
  Array mod = lax::rem(x1, x2);
  Array div = lax::div(lax::sub(x1, mod), x2);
  Array ind = lax::bitwise_and(mod != 0, lax::ne(lax::sign(x2), lax::sign(mod)));
  mod = lax::select(ind, mod + x2, mod);
  div = lax::select(ind, div - constant_like(div, 1), div);
  return {lax::round(div), mod};
}

// Integer power by binary exponentiation over the exponent's low 6 bits (JAX's
// _pow_int_int: anything larger overflows for bases above one).
Array pow_int_int(Array x1, Array x2) {
  Array zero = constant_like(x2, 0);
  Array one = constant_like(x2, 1);
  Array acc = where(lax::bitwise_and(lax::eq(x1, zero), lax::ne(x2, zero)), zero, one);
  for (int bit = 0; bit < 6; ++bit) {
    acc = where(lax::bitwise_and(x2, one), lax::mul(acc, x1), acc);
    x1 = lax::mul(x1, x1);
    x2 = lax::shift_right_logical(x2, one);
  }
  return acc;
}

// Returns the value of a concrete integer 0-d array (a C++ int exponent), if it is one.
std::optional<int64_t> concrete_int(const Array& x) {
  if (core::tracer_of(x) != nullptr || x.ndim() != 0 || !is_integer(x.dtype())) {
    return std::nullopt;
  }
  return x.item<int64_t>();
}

}  // namespace

DType result_type(const ArrayLike& x, const ArrayLike& y) {
  std::vector<frontend::TypedDType> in = {frontend::typed(x.array()), frontend::typed(y.array())};
  return base::result_type(in).dtype;
}

Array asarray(const ArrayLike& x, std::optional<DType> dtype) {
  if (!dtype) return x.array();
  return frontend::convert(x.array(), *dtype, false);
}

Array astype(const ArrayLike& x, DType dtype) {
  // The requested dtype is honoured even with x64 off (README, "dtypes").
  return frontend::convert(x.array(), dtype, false);
}

Array negative(const ArrayLike& x) { return lax::neg(x); }
Array positive(const ArrayLike& x) { return x.array(); }

Array absolute(const ArrayLike& x) {
  DType t = x.array().dtype();
  if (t == DType::bool_ || is_unsigned_integer(t)) return x.array();
  return lax::abs(x);
}
Array abs(const ArrayLike& x) { return absolute(x); }

Array sign(const ArrayLike& x) { return lax::sign(x); }

Array floor(const ArrayLike& x) {
  if (is_integral_or_bool(x.array().dtype())) return x.array();
  return lax::floor(inexact(x));
}

Array ceil(const ArrayLike& x) {
  if (is_integral_or_bool(x.array().dtype())) return x.array();
  return lax::ceil(inexact(x));
}

Array round(const ArrayLike& x, int decimals) {
  const Array& a = x.array();
  const DType dtype = a.dtype();
  if (is_integer(dtype)) {
    if (decimals < 0) {
      throw NotImplementedError("integer np.round not implemented for decimals < 0");
    }
    return a;
  }
  if (decimals == 0) return lax::round(a, lax::RoundingMethod::TO_NEAREST_EVEN);
  // Scaling loses too much in float16, so JAX rounds those in float32.
  Array v = dtype == DType::float16 ? lax::convert_element_type(a, DType::float32) : a;
  Array factor = constant_like(v, std::pow(10.0, decimals));
  Array out =
      lax::div(lax::round(lax::mul(v, factor), lax::RoundingMethod::TO_NEAREST_EVEN), factor);
  return dtype == DType::float16 ? lax::convert_element_type(out, dtype) : out;
}

Array trunc(const ArrayLike& x) {
  const Array& a = x.array();
  if (is_integral_or_bool(a.dtype())) return a;
  return where(lax::lt(a, constant_like(a, 0)), ceil(a), floor(a));
}

Array exp(const ArrayLike& x) { return lax::exp(inexact(x)); }
Array exp2(const ArrayLike& x) { return lax::exp2(inexact(x)); }
Array expm1(const ArrayLike& x) { return lax::expm1(inexact(x)); }
Array log(const ArrayLike& x) { return lax::log(inexact(x)); }
Array log1p(const ArrayLike& x) { return lax::log1p(inexact(x)); }
Array log2(const ArrayLike& x) {
  Array a = inexact(x);
  return lax::div(lax::log(a), lax::log(constant_like(a, 2)));
}
Array log10(const ArrayLike& x) {
  Array a = inexact(x);
  return lax::div(lax::log(a), lax::log(constant_like(a, 10)));
}
Array sin(const ArrayLike& x) { return lax::sin(inexact(x)); }
Array cos(const ArrayLike& x) { return lax::cos(inexact(x)); }
Array tan(const ArrayLike& x) { return lax::tan(inexact(x)); }
Array arcsin(const ArrayLike& x) { return lax::asin(inexact(x)); }
Array arccos(const ArrayLike& x) { return lax::acos(inexact(x)); }
Array arctan(const ArrayLike& x) { return lax::atan(inexact(x)); }
Array sinh(const ArrayLike& x) { return lax::sinh(inexact(x)); }
Array cosh(const ArrayLike& x) { return lax::cosh(inexact(x)); }
Array tanh(const ArrayLike& x) { return lax::tanh(inexact(x)); }
Array sqrt(const ArrayLike& x) { return lax::sqrt(inexact(x)); }
Array cbrt(const ArrayLike& x) { return lax::cbrt(inexact(x)); }

Array square(const ArrayLike& x) { return lax::integer_pow(numeric(x), 2); }

Array reciprocal(const ArrayLike& x) { return lax::integer_pow(inexact(x), -1); }

Array isfinite(const ArrayLike& x) {
  const Array& a = x.array();
  if (is_floating(a.dtype())) return lax::is_finite(a);
  return full_like(a, true, DType::bool_);
}

Array isinf(const ArrayLike& x) {
  const Array& a = x.array();
  if (!is_floating(a.dtype())) return full_like(a, false, DType::bool_);
  return lax::eq(lax::abs(a), constant_like(a, std::numeric_limits<double>::infinity()));
}

Array isnan(const ArrayLike& x) { return lax::ne(x, x); }

Array logical_not(const ArrayLike& x) { return lax::bitwise_not(to_bool(x.array())); }
Array invert(const ArrayLike& x) { return lax::bitwise_not(x); }

Array add(const ArrayLike& x, const ArrayLike& y) {
  return frontend::staged_binary("add", x, y, [](const ArrayLike& x, const ArrayLike& y) -> Array {
    auto [a, b] = args("add", x, y);
    return a.dtype() == DType::bool_ ? lax::bitwise_or(a, b) : lax::add(a, b);
  });
}

Array subtract(const ArrayLike& x, const ArrayLike& y) {
  return frontend::staged_binary("subtract", x, y,
                                 [](const ArrayLike& x, const ArrayLike& y) -> Array {
                                   auto [a, b] = args("sub", x, y);
                                   return lax::sub(a, b);
                                 });
}

Array multiply(const ArrayLike& x, const ArrayLike& y) {
  return frontend::staged_binary(
      "multiply", x, y, [](const ArrayLike& x, const ArrayLike& y) -> Array {
        auto [a, b] = args("mul", x, y);
        return a.dtype() == DType::bool_ ? lax::bitwise_and(a, b) : lax::mul(a, b);
      });
}

Array true_divide(const ArrayLike& x, const ArrayLike& y) {
  return frontend::staged_binary("true_divide", x, y,
                                 [](const ArrayLike& x, const ArrayLike& y) -> Array {
                                   auto [a, b] = args_inexact("div", x, y);
                                   return lax::div(a, b);
                                 });
}
Array divide(const ArrayLike& x, const ArrayLike& y) { return true_divide(x, y); }

Array floor_divide(const ArrayLike& x, const ArrayLike& y) {
  return frontend::staged_binary(
      "floor_divide", x, y, [](const ArrayLike& x, const ArrayLike& y) -> Array {
        const bool floating = is_floating(result_type(x, y));
        auto [a, b] = args_numeric(floating ? "rem" : "div", x, y);
        if (is_unsigned_integer(a.dtype())) return lax::div(a, b);
        if (is_integer(a.dtype())) {
          Array quotient = lax::div(a, b);
          Array select = logical_and(lax::ne(lax::sign(a), lax::sign(b)), lax::rem(a, b) != 0);
          return where(select, quotient - 1, quotient);
        }
        return float_divmod(a, b).first;
      });
}

Array remainder(const ArrayLike& x, const ArrayLike& y) {
  return frontend::staged_binary(
      "remainder", x, y, [](const ArrayLike& x, const ArrayLike& y) -> Array {
        auto [a, b] = args_numeric("rem", x, y);
        Array zero = constant_like(a, 0);
        // Integer division by zero would trap; JAX divides by one there instead.
        if (is_integer(b.dtype())) b = where(b == 0, full_like(b, 1), b);
        Array trunc_mod = lax::rem(a, b);
        Array trunc_mod_not_zero = lax::ne(trunc_mod, zero);
        Array do_plus = lax::bitwise_and(lax::ne(lax::lt(trunc_mod, zero), lax::lt(b, zero)),
                                         trunc_mod_not_zero);
        return lax::select(do_plus, lax::add(trunc_mod, b), trunc_mod);
      });
}
Array mod(const ArrayLike& x, const ArrayLike& y) { return remainder(x, y); }

Array fmod(const ArrayLike& x, const ArrayLike& y) {
  return frontend::staged_binary("fmod", x, y, [](const ArrayLike& x, const ArrayLike& y) -> Array {
    Array b = y.array();
    if (is_integer(result_type(x, y))) b = where(b == 0, full_like(b, 1), b);
    auto [p, q] = args_numeric("rem", x, b);
    return lax::rem(p, q);
  });
}

Array power(const ArrayLike& x, const ArrayLike& y) {
  return frontend::staged_binary(
      "power", x, y, [](const ArrayLike& x, const ArrayLike& y) -> Array {
        // A concrete integer exponent unrolls into multiplications (JAX's case 1), which is
        // more precise than pow for x ** 2.
        if (std::optional<int64_t> n = concrete_int(y.array())) {
          return lax::integer_pow(numeric(x), *n);
        }
        std::vector<Array> shaped = frontend::promote_shapes("pow", {x.array(), y.array()});
        auto [a, b] = args_numeric("pow", shaped[0], shaped[1]);
        if (is_integral_or_bool(a.dtype())) return pow_int_int(a, b);
        // A floating base with an integer exponent keeps the exponent's dtype, as JAX does.
        if (is_floating(shaped[0].dtype()) && is_integer(shaped[1].dtype())) {
          return lax::pow(shaped[0], shaped[1]);
        }
        return lax::pow(a, b);
      });
}

Array maximum(const ArrayLike& x, const ArrayLike& y) {
  return frontend::staged_binary("maximum", x, y,
                                 [](const ArrayLike& x, const ArrayLike& y) -> Array {
                                   auto [a, b] = args("max", x, y);
                                   return lax::max(a, b);
                                 });
}

Array minimum(const ArrayLike& x, const ArrayLike& y) {
  return frontend::staged_binary("minimum", x, y,
                                 [](const ArrayLike& x, const ArrayLike& y) -> Array {
                                   auto [a, b] = args("min", x, y);
                                   return lax::min(a, b);
                                 });
}

Array arctan2(const ArrayLike& x, const ArrayLike& y) {
  return frontend::staged_binary("arctan2", x, y,
                                 [](const ArrayLike& x, const ArrayLike& y) -> Array {
                                   auto [a, b] = args_inexact("atan2", x, y);
                                   return lax::atan2(a, b);
                                 });
}

Array nextafter(const ArrayLike& x, const ArrayLike& y) {
  return frontend::staged_binary("nextafter", x, y,
                                 [](const ArrayLike& x, const ArrayLike& y) -> Array {
                                   auto [a, b] = args_inexact("nextafter", x, y);
                                   return lax::nextafter(a, b);
                                 });
}

Array bitwise_and(const ArrayLike& x, const ArrayLike& y) {
  return frontend::staged_binary("bitwise_and", x, y,
                                 [](const ArrayLike& x, const ArrayLike& y) -> Array {
                                   auto [a, b] = args("and", x, y);
                                   return lax::bitwise_and(a, b);
                                 });
}

Array bitwise_or(const ArrayLike& x, const ArrayLike& y) {
  return frontend::staged_binary("bitwise_or", x, y,
                                 [](const ArrayLike& x, const ArrayLike& y) -> Array {
                                   auto [a, b] = args("or", x, y);
                                   return lax::bitwise_or(a, b);
                                 });
}

Array bitwise_xor(const ArrayLike& x, const ArrayLike& y) {
  return frontend::staged_binary("bitwise_xor", x, y,
                                 [](const ArrayLike& x, const ArrayLike& y) -> Array {
                                   auto [a, b] = args("xor", x, y);
                                   return lax::bitwise_xor(a, b);
                                 });
}

Array left_shift(const ArrayLike& x, const ArrayLike& y) {
  return frontend::staged_binary("left_shift", x, y,
                                 [](const ArrayLike& x, const ArrayLike& y) -> Array {
                                   auto [a, b] = args_numeric("shift_left", x, y);
                                   return lax::shift_left(a, b);
                                 });
}

Array right_shift(const ArrayLike& x, const ArrayLike& y) {
  return frontend::staged_binary(
      "right_shift", x, y, [](const ArrayLike& x, const ArrayLike& y) -> Array {
        const bool logical = is_unsigned_integer(result_type(x, y));
        auto [a, b] =
            args_numeric(logical ? "shift_right_logical" : "shift_right_arithmetic", x, y);
        return logical ? lax::shift_right_logical(a, b) : lax::shift_right_arithmetic(a, b);
      });
}

Array logical_and(const ArrayLike& x, const ArrayLike& y) {
  return frontend::staged_binary("logical_and", x, y,
                                 [](const ArrayLike& x, const ArrayLike& y) -> Array {
                                   auto [a, b] = args("and", x, y);
                                   return lax::bitwise_and(to_bool(a), to_bool(b));
                                 });
}

Array logical_or(const ArrayLike& x, const ArrayLike& y) {
  return frontend::staged_binary("logical_or", x, y,
                                 [](const ArrayLike& x, const ArrayLike& y) -> Array {
                                   auto [a, b] = args("or", x, y);
                                   return lax::bitwise_or(to_bool(a), to_bool(b));
                                 });
}

Array logical_xor(const ArrayLike& x, const ArrayLike& y) {
  return frontend::staged_binary("logical_xor", x, y,
                                 [](const ArrayLike& x, const ArrayLike& y) -> Array {
                                   auto [a, b] = args("xor", x, y);
                                   return lax::bitwise_xor(to_bool(a), to_bool(b));
                                 });
}

Array equal(const ArrayLike& x, const ArrayLike& y) {
  return frontend::staged_binary("equal", x, y,
                                 [](const ArrayLike& x, const ArrayLike& y) -> Array {
                                   auto [a, b] = args("eq", x, y);
                                   return lax::eq(a, b);
                                 });
}

Array not_equal(const ArrayLike& x, const ArrayLike& y) {
  return frontend::staged_binary("not_equal", x, y,
                                 [](const ArrayLike& x, const ArrayLike& y) -> Array {
                                   auto [a, b] = args("ne", x, y);
                                   return lax::ne(a, b);
                                 });
}

Array less(const ArrayLike& x, const ArrayLike& y) {
  return frontend::staged_binary("less", x, y, [](const ArrayLike& x, const ArrayLike& y) -> Array {
    auto [a, b] = args("lt", x, y);
    return lax::lt(a, b);
  });
}

Array less_equal(const ArrayLike& x, const ArrayLike& y) {
  return frontend::staged_binary("less_equal", x, y,
                                 [](const ArrayLike& x, const ArrayLike& y) -> Array {
                                   auto [a, b] = args("le", x, y);
                                   return lax::le(a, b);
                                 });
}

Array greater(const ArrayLike& x, const ArrayLike& y) {
  return frontend::staged_binary("greater", x, y,
                                 [](const ArrayLike& x, const ArrayLike& y) -> Array {
                                   auto [a, b] = args("gt", x, y);
                                   return lax::gt(a, b);
                                 });
}

Array greater_equal(const ArrayLike& x, const ArrayLike& y) {
  return frontend::staged_binary("greater_equal", x, y,
                                 [](const ArrayLike& x, const ArrayLike& y) -> Array {
                                   auto [a, b] = args("ge", x, y);
                                   return lax::ge(a, b);
                                 });
}

Array where(const ArrayLike& condition, const ArrayLike& x, const ArrayLike& y) {
  Array c = to_bool(condition.array());
  std::vector<Array> xy = frontend::promote_dtypes({x.array(), y.array()});
  // A scalar condition selects whole operands; lax's select_n takes it as it is.
  if (c.ndim() == 0) {
    xy = frontend::broadcast_arrays(std::move(xy));
  } else {
    std::vector<Array> all = frontend::broadcast_arrays({c, xy[0], xy[1]});
    c = all[0];
    xy = {all[1], all[2]};
  }
  if (xy[0].size() == 0) return xy[0];
  return lax::select(c, xy[0], xy[1]);
}

Array clip(const ArrayLike& x, std::optional<ArrayLike> min, std::optional<ArrayLike> max) {
  Array a = x.array();
  if (min) a = maximum(*min, a);
  if (max) a = minimum(*max, a);
  return a;
}

Array isclose(const ArrayLike& a, const ArrayLike& b, double rtol, double atol, bool equal_nan) {
  std::vector<Array> ab = frontend::promote_args("sub", {a.array(), b.array()});
  ab = frontend::promote_args_inexact("sub", std::move(ab));
  const Array& x = ab[0];
  const Array& y = ab[1];
  const DType dtype = x.dtype();
  Array out = lax::le(lax::abs(lax::sub(x, y)),
                      lax::add(frontend::scalar(atol, dtype),
                               lax::mul(frontend::scalar(rtol, dtype), lax::abs(y))));
  // Infinities are close only to the same infinity; NaNs to nothing (unless equal_nan).
  Array x_inf = isinf(x);
  Array y_inf = isinf(y);
  out = logical_and(out, logical_not(logical_or(x_inf, y_inf)));
  out = logical_or(out, logical_and(logical_and(x_inf, y_inf), lax::eq(x, y)));
  Array x_nan = isnan(x);
  Array y_nan = isnan(y);
  out = logical_and(out, logical_not(logical_or(x_nan, y_nan)));
  if (equal_nan) out = logical_or(out, logical_and(x_nan, y_nan));
  return out;
}

Array allclose(const ArrayLike& a, const ArrayLike& b, double rtol, double atol, bool equal_nan) {
  return all(isclose(a, b, rtol, atol, equal_nan));
}

Array array_equal(const ArrayLike& a, const ArrayLike& b) {
  if (a.array().shape() != b.array().shape()) return frontend::scalar(0, DType::bool_);
  return all(equal(a, b));
}

// ---- inverse hyperbolics and logaddexp ------------------------------------------------------

Array arcsinh(const ArrayLike& x) { return core::bind1(core::Prim::asinh, {inexact(x)}); }
Array arccosh(const ArrayLike& x) { return core::bind1(core::Prim::acosh, {inexact(x)}); }
Array arctanh(const ArrayLike& x) { return core::bind1(core::Prim::atanh, {inexact(x)}); }

namespace {

// JAX's logaddexp (lax/other.py) with the larger and smaller operands chosen by select
// instead of max and abs: the values are the same operations, and the ordinary
// derivative is then JAX's custom one (exp(x - out)) at ties too, where max's and abs's
// derivative conventions would not add up to it.
Array logaddexp_impl(const ArrayLike& x, const ArrayLike& y, bool base2) {
  std::vector<Array> xs =
      frontend::promote_args_inexact(base2 ? "logaddexp2" : "logaddexp", {x.array(), y.array()});
  xs = frontend::broadcast_arrays(std::move(xs));
  const Array& a = xs[0];
  const Array& b = xs[1];
  Array ge = lax::ge(a, b);
  Array big = lax::select(ge, a, b);
  Array small = lax::select(ge, b, a);
  Array delta = lax::sub(a, b);
  Array term = base2 ? lax::mul(constant_like(a, 1 / std::numbers::ln2),
                                lax::log1p(lax::exp2(lax::sub(small, big))))
                     : lax::log1p(lax::exp(lax::sub(small, big)));
  // NaNs, or infinities of one sign, add.
  return lax::select(isnan(delta), lax::add(a, b), lax::add(big, term));
}

}  // namespace

Array logaddexp(const ArrayLike& x, const ArrayLike& y) {
  return frontend::staged_binary("logaddexp", x, y, [](const ArrayLike& x, const ArrayLike& y) {
    return logaddexp_impl(x, y, false);
  });
}

Array logaddexp2(const ArrayLike& x, const ArrayLike& y) {
  return frontend::staged_binary("logaddexp2", x, y, [](const ArrayLike& x, const ArrayLike& y) {
    return logaddexp_impl(x, y, true);
  });
}

}  // namespace parax::numpy
