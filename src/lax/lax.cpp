// parax::lax: each function checks what JAX's Python wrapper checks and binds one primitive
// (traced negative start indices of dynamic slices add JAX's select, as JAX's wrapper
// does); shape and dtype errors come from the primitive's rules.
#include "parax/lax.h"

#include <algorithm>
#include <memory>

#include "base/promotion.h"
#include "core/source_site.h"
#include "core/trace.h"
#include "lax/promote.h"
#include "sharding/sharding_impl.h"

namespace parax::lax {
namespace {

using core::Params;
using core::Prim;
using frontend::is_literal;

// A C++ scalar passed to lax takes the dtype of the array operands, as a Python scalar
// does in JAX, when that loses nothing of its kind (an int may become a float, not the
// reverse). Anything else is left for the primitive's dtype check to report.
std::vector<Array> adopt_literals(std::vector<Array> in) {
  const Array* strong = nullptr;
  for (const Array& x : in) {
    if (!is_literal(x)) {
      strong = &x;
      break;
    }
  }
  if (strong == nullptr) return in;
  const DType to = strong->dtype();
  for (Array& x : in) {
    if (!is_literal(x) || x.dtype() == to || to == DType::bool_) continue;
    if (is_floating(x.dtype()) && !is_floating(to)) continue;
    x = frontend::convert(x, to, true);
  }
  return in;
}

Array unary(Prim p, const ArrayLike& x) { return core::bind1(p, {x.array()}); }

Array binary(Prim p, const ArrayLike& x, const ArrayLike& y) {
  return core::bind1(p, adopt_literals({x.array(), y.array()}));
}

std::vector<Array> arrays_of(std::initializer_list<const ArrayLike*> xs) {
  std::vector<Array> out;
  for (const ArrayLike* x : xs) out.push_back(x->array());
  return out;
}

// jax.lax's _dynamic_slice_indices: one index per dimension, negative ones counted from
// the end. Concrete indices are fixed on the host; traced ones by select(i < 0, i + d, i).
std::vector<Array> dynamic_slice_indices(const Array& x, const std::vector<Array>& indices) {
  if (int64_t(indices.size()) != x.ndim()) {
    throw ValueError("Length of slice indices must match number of operand dimensions (" +
                     std::to_string(indices.size()) + " vs " + shape_str(x.shape()) + ")");
  }
  std::vector<Array> out;
  for (size_t d = 0; d < indices.size(); ++d) {
    const Array& i = indices[d];
    const int64_t dim = x.shape()[d];
    if (is_unsigned_integer(i.dtype())) {
      out.push_back(i);
    } else if (core::tracer_of(i) == nullptr && i.ndim() == 0 && is_integer(i.dtype())) {
      int64_t v = i.item<int64_t>();
      out.push_back(v < 0 ? frontend::scalar_int(v + dim, i.dtype(), i.weak_type()) : i);
    } else {
      Array d_arr = frontend::scalar_int(dim, i.dtype());
      Array zero = frontend::scalar_int(0, i.dtype());
      out.push_back(select(lt(i, zero), add(i, d_arr), i));
    }
  }
  return out;
}

}  // namespace

namespace internal {
Array convert_element_type(const Array& x, DType new_dtype, bool weak_type) {
  return core::bind1(Prim::convert_element_type, {x},
                     {{"new_dtype", new_dtype}, {"weak_type", weak_type}});
}
}  // namespace internal

Array neg(const ArrayLike& x) { return unary(Prim::neg, x); }
Array abs(const ArrayLike& x) { return unary(Prim::abs, x); }
Array sign(const ArrayLike& x) { return unary(Prim::sign, x); }
Array floor(const ArrayLike& x) { return unary(Prim::floor, x); }
Array ceil(const ArrayLike& x) { return unary(Prim::ceil, x); }
Array round(const ArrayLike& x, RoundingMethod method) {
  return core::bind1(Prim::round, {x.array()}, {{"rounding_method", int64_t(method)}});
}
Array exp(const ArrayLike& x) { return unary(Prim::exp, x); }
Array exp2(const ArrayLike& x) { return unary(Prim::exp2, x); }
Array log(const ArrayLike& x) { return unary(Prim::log, x); }
Array log1p(const ArrayLike& x) { return unary(Prim::log1p, x); }
Array expm1(const ArrayLike& x) { return unary(Prim::expm1, x); }
Array sin(const ArrayLike& x) { return unary(Prim::sin, x); }
Array cos(const ArrayLike& x) { return unary(Prim::cos, x); }
Array tan(const ArrayLike& x) { return unary(Prim::tan, x); }
Array asin(const ArrayLike& x) { return unary(Prim::asin, x); }
Array acos(const ArrayLike& x) { return unary(Prim::acos, x); }
Array atan(const ArrayLike& x) { return unary(Prim::atan, x); }
Array sinh(const ArrayLike& x) { return unary(Prim::sinh, x); }
Array cosh(const ArrayLike& x) { return unary(Prim::cosh, x); }
Array tanh(const ArrayLike& x) { return unary(Prim::tanh, x); }
Array sqrt(const ArrayLike& x) { return unary(Prim::sqrt, x); }
Array rsqrt(const ArrayLike& x) { return unary(Prim::rsqrt, x); }
Array cbrt(const ArrayLike& x) { return unary(Prim::cbrt, x); }
Array logistic(const ArrayLike& x) { return unary(Prim::logistic, x); }
Array erf(const ArrayLike& x) { return unary(Prim::erf, x); }
Array erf_inv(const ArrayLike& x) { return unary(Prim::erf_inv, x); }
Array erfc(const ArrayLike& x) { return unary(Prim::erfc, x); }
Array asinh(const ArrayLike& x) { return unary(Prim::asinh, x); }
Array acosh(const ArrayLike& x) { return unary(Prim::acosh, x); }
Array atanh(const ArrayLike& x) { return unary(Prim::atanh, x); }
Array is_finite(const ArrayLike& x) { return unary(Prim::is_finite, x); }
Array bitwise_not(const ArrayLike& x) { return unary(Prim::not_, x); }
Array integer_pow(const ArrayLike& x, int64_t y) {
  return core::bind1(Prim::integer_pow, {x.array()}, {{"y", y}});
}
Array convert_element_type(const ArrayLike& x, DType new_dtype) {
  // An explicitly requested dtype is honoured whatever jax_enable_x64 says (README,
  // "dtypes"); JAX would narrow int64 to int32 with x64 off.
  return frontend::convert(x.array(), new_dtype, false);
}
Array copy(const ArrayLike& x) { return unary(Prim::copy, x); }

Array add(const ArrayLike& x, const ArrayLike& y) { return binary(Prim::add, x, y); }
Array sub(const ArrayLike& x, const ArrayLike& y) { return binary(Prim::sub, x, y); }
Array mul(const ArrayLike& x, const ArrayLike& y) { return binary(Prim::mul, x, y); }
Array div(const ArrayLike& x, const ArrayLike& y) { return binary(Prim::div, x, y); }
Array rem(const ArrayLike& x, const ArrayLike& y) { return binary(Prim::rem, x, y); }
Array pow(const ArrayLike& x, const ArrayLike& y) { return binary(Prim::pow, x, y); }
Array max(const ArrayLike& x, const ArrayLike& y) { return binary(Prim::max, x, y); }
Array min(const ArrayLike& x, const ArrayLike& y) { return binary(Prim::min, x, y); }
Array atan2(const ArrayLike& x, const ArrayLike& y) { return binary(Prim::atan2, x, y); }
Array nextafter(const ArrayLike& x, const ArrayLike& y) { return binary(Prim::nextafter, x, y); }
Array bitwise_and(const ArrayLike& x, const ArrayLike& y) { return binary(Prim::and_, x, y); }
Array bitwise_or(const ArrayLike& x, const ArrayLike& y) { return binary(Prim::or_, x, y); }
Array bitwise_xor(const ArrayLike& x, const ArrayLike& y) { return binary(Prim::xor_, x, y); }
Array shift_left(const ArrayLike& x, const ArrayLike& y) { return binary(Prim::shift_left, x, y); }
Array shift_right_logical(const ArrayLike& x, const ArrayLike& y) {
  return binary(Prim::shift_right_logical, x, y);
}
Array shift_right_arithmetic(const ArrayLike& x, const ArrayLike& y) {
  return binary(Prim::shift_right_arithmetic, x, y);
}
Array eq(const ArrayLike& x, const ArrayLike& y) { return binary(Prim::eq, x, y); }
Array ne(const ArrayLike& x, const ArrayLike& y) { return binary(Prim::ne, x, y); }
Array lt(const ArrayLike& x, const ArrayLike& y) { return binary(Prim::lt, x, y); }
Array le(const ArrayLike& x, const ArrayLike& y) { return binary(Prim::le, x, y); }
Array gt(const ArrayLike& x, const ArrayLike& y) { return binary(Prim::gt, x, y); }
Array ge(const ArrayLike& x, const ArrayLike& y) { return binary(Prim::ge, x, y); }

Array select(const ArrayLike& pred, const ArrayLike& on_true, const ArrayLike& on_false) {
  // select_n picks cases[which], so false comes first.
  return select_n(pred, {on_false.array(), on_true.array()});
}

Array select_n(const ArrayLike& which, const std::vector<Array>& cases) {
  if (cases.empty()) throw ValueError("select_n() must have at least one case");
  std::vector<Array> in = adopt_literals(cases);
  in.insert(in.begin(), which.array());
  return core::bind1(Prim::select_n, std::move(in));
}

Array clamp(const ArrayLike& min, const ArrayLike& x, const ArrayLike& max) {
  // The bounds adopt x's dtype; x goes first so a literal bound never sets the dtype.
  std::vector<Array> in = adopt_literals(arrays_of({&x, &min, &max}));
  return core::bind1(Prim::clamp, {in[1], in[0], in[2]});
}

Array iota(DType dtype, int64_t size) { return broadcasted_iota(dtype, Shape{size}, 0); }

Array broadcasted_iota(DType dtype, Shape shape, int64_t dimension) {
  return core::bind1(Prim::iota, {},
                     {{"dtype", dtype}, {"shape", std::move(shape)}, {"dimension", dimension}});
}

Array broadcast_in_dim(const ArrayLike& x, Shape shape, std::vector<int64_t> broadcast_dimensions) {
  const Array& a = x.array();
  // JAX's shortcut: a rank-0 operand "broadcast" to rank 0 is itself.
  if (a.ndim() == int64_t(shape.size()) && broadcast_dimensions.empty()) return a;
  return core::bind1(
      Prim::broadcast_in_dim, {a},
      {{"shape", std::move(shape)}, {"broadcast_dimensions", std::move(broadcast_dimensions)}});
}

Array broadcast(const ArrayLike& x, Shape sizes) {
  const Array& a = x.array();
  if (sizes.empty()) return a;
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < a.ndim(); ++d) dims.push_back(int64_t(sizes.size()) + d);
  sizes.insert(sizes.end(), a.shape().begin(), a.shape().end());
  return broadcast_in_dim(a, std::move(sizes), std::move(dims));
}

Array reshape(const ArrayLike& x, Shape new_sizes) {
  const Array& a = x.array();
  if (a.ndim() > 0 && a.shape() == new_sizes) return a;
  return core::bind1(Prim::reshape, {a}, {{"new_sizes", std::move(new_sizes)}});
}

Array transpose(const ArrayLike& x, std::vector<int64_t> permutation) {
  const Array& a = x.array();
  bool identity = int64_t(permutation.size()) == a.ndim();
  for (size_t d = 0; identity && d < permutation.size(); ++d) {
    identity = permutation[d] == int64_t(d);
  }
  if (identity) return a;
  return core::bind1(Prim::transpose, {a}, {{"permutation", std::move(permutation)}});
}

Array squeeze(const ArrayLike& x, std::vector<int64_t> dimensions) {
  const Array& a = x.array();
  for (int64_t& d : dimensions) d = frontend::canonicalize_axis(d, a.ndim());
  std::sort(dimensions.begin(), dimensions.end());
  if (dimensions.empty()) return a;
  return core::bind1(Prim::squeeze, {a}, {{"dimensions", std::move(dimensions)}});
}

Array expand_dims(const ArrayLike& x, std::vector<int64_t> dimensions) {
  const Array& a = x.array();
  auto repeated = [](std::vector<int64_t> v) {
    std::sort(v.begin(), v.end());
    return std::adjacent_find(v.begin(), v.end()) != v.end();
  };
  if (repeated(dimensions)) {
    throw ValueError("repeated axis in lax.expand_dims: " + shape_str(dimensions));
  }
  const int64_t ndim_out = a.ndim() + int64_t(dimensions.size());
  for (int64_t& d : dimensions) d = frontend::canonicalize_axis(d, ndim_out);
  if (repeated(dimensions)) {
    throw ValueError("repeated axis in lax.expand_dims: " + shape_str(dimensions));
  }
  std::sort(dimensions.begin(), dimensions.end());
  return core::bind1(Prim::expand_dims, {a}, {{"dimensions", std::move(dimensions)}});
}

Array slice(const ArrayLike& x, std::vector<int64_t> start_indices,
            std::vector<int64_t> limit_indices, std::vector<int64_t> strides) {
  return core::bind1(Prim::slice, {x.array()},
                     {{"start_indices", std::move(start_indices)},
                      {"limit_indices", std::move(limit_indices)},
                      {"strides", std::move(strides)}});
}

Array dynamic_slice(const ArrayLike& x, const std::vector<Array>& start_indices,
                    std::vector<int64_t> slice_sizes) {
  std::vector<Array> in = dynamic_slice_indices(x.array(), start_indices);
  in.insert(in.begin(), x.array());
  return core::bind1(Prim::dynamic_slice, std::move(in), {{"slice_sizes", std::move(slice_sizes)}});
}

Array dynamic_update_slice(const ArrayLike& x, const ArrayLike& update,
                           const std::vector<Array>& start_indices) {
  std::vector<Array> in = dynamic_slice_indices(x.array(), start_indices);
  in.insert(in.begin(), update.array());
  in.insert(in.begin(), x.array());
  return core::bind1(Prim::dynamic_update_slice, std::move(in));
}

Array concatenate(const std::vector<Array>& operands, int64_t dimension) {
  if (operands.empty()) {
    throw ValueError("concatenate requires a non-empty sequences of arrays");
  }
  if (operands.size() == 1) return operands[0];
  return core::bind1(Prim::concatenate, operands, {{"dimension", dimension}});
}

Array pad(const ArrayLike& x, const ArrayLike& padding_value, std::vector<PadConfig> config) {
  std::vector<int64_t> flat;
  for (const PadConfig& c : config) flat.insert(flat.end(), {c.low, c.high, c.interior});
  return core::bind1(Prim::pad, adopt_literals(arrays_of({&x, &padding_value})),
                     {{"padding_config", std::move(flat)}});
}

Array rev(const ArrayLike& x, std::vector<int64_t> dimensions) {
  return core::bind1(Prim::rev, {x.array()}, {{"dimensions", std::move(dimensions)}});
}

Array dot_general(const ArrayLike& lhs, const ArrayLike& rhs, DotDimensionNumbers dims,
                  std::optional<DType> preferred_element_type) {
  Params params{{"lhs_contracting_dimensions", std::move(dims.lhs_contracting)},
                {"rhs_contracting_dimensions", std::move(dims.rhs_contracting)},
                {"lhs_batch_dimensions", std::move(dims.lhs_batch)},
                {"rhs_batch_dimensions", std::move(dims.rhs_batch)}};
  // Absent (JAX's None), the result has the operands' dtype.
  if (preferred_element_type) {
    params.set("preferred_element_type", *preferred_element_type);
  }
  return core::bind1(Prim::dot_general, {lhs.array(), rhs.array()}, std::move(params));
}

Array dot(const ArrayLike& lhs, const ArrayLike& rhs, std::optional<DType> preferred_element_type) {
  const Array& a = lhs.array();
  const Array& b = rhs.array();
  auto matrix_like = [](const Array& x) { return x.ndim() >= 1 && x.ndim() <= 2; };
  if (!matrix_like(a) || !matrix_like(b) || a.shape().back() != b.shape()[0]) {
    throw TypeError("Incompatible shapes for dot: got " + shape_str(a.shape()) + " and " +
                    shape_str(b.shape()) + ".");
  }
  return dot_general(a, b, {{a.ndim() - 1}, {0}, {}, {}}, preferred_element_type);
}

Array reduce_sum(const ArrayLike& x, std::vector<int64_t> axes) {
  return core::bind1(Prim::reduce_sum, {x.array()}, {{"axes", std::move(axes)}});
}
Array reduce_max(const ArrayLike& x, std::vector<int64_t> axes) {
  return core::bind1(Prim::reduce_max, {x.array()}, {{"axes", std::move(axes)}});
}
Array reduce_min(const ArrayLike& x, std::vector<int64_t> axes) {
  return core::bind1(Prim::reduce_min, {x.array()}, {{"axes", std::move(axes)}});
}
Array reduce_prod(const ArrayLike& x, std::vector<int64_t> axes) {
  return core::bind1(Prim::reduce_prod, {x.array()}, {{"axes", std::move(axes)}});
}
Array reduce_and(const ArrayLike& x, std::vector<int64_t> axes) {
  return core::bind1(Prim::reduce_and, {x.array()}, {{"axes", std::move(axes)}});
}
Array reduce_or(const ArrayLike& x, std::vector<int64_t> axes) {
  return core::bind1(Prim::reduce_or, {x.array()}, {{"axes", std::move(axes)}});
}

Array argmax(const ArrayLike& x, int64_t axis, DType index_dtype) {
  return core::bind1(Prim::argmax, {x.array()},
                     {{"axes", std::vector<int64_t>{axis}}, {"index_dtype", index_dtype}});
}
Array argmin(const ArrayLike& x, int64_t axis, DType index_dtype) {
  return core::bind1(Prim::argmin, {x.array()},
                     {{"axes", std::vector<int64_t>{axis}}, {"index_dtype", index_dtype}});
}

Array cumsum(const ArrayLike& x, int64_t axis, bool reverse) {
  return core::bind1(Prim::cumsum, {x.array()}, {{"axis", axis}, {"reverse", reverse}});
}
Array cumprod(const ArrayLike& x, int64_t axis, bool reverse) {
  return core::bind1(Prim::cumprod, {x.array()}, {{"axis", axis}, {"reverse", reverse}});
}
Array cummax(const ArrayLike& x, int64_t axis, bool reverse) {
  return core::bind1(Prim::cummax, {x.array()}, {{"axis", axis}, {"reverse", reverse}});
}
Array cummin(const ArrayLike& x, int64_t axis, bool reverse) {
  return core::bind1(Prim::cummin, {x.array()}, {{"axis", axis}, {"reverse", reverse}});
}
Array cumlogsumexp(const ArrayLike& x, int64_t axis, bool reverse) {
  return core::bind1(Prim::cumlogsumexp, {x.array()}, {{"axis", axis}, {"reverse", reverse}});
}

Array sort(const ArrayLike& x, int64_t dimension, bool is_stable) {
  return sort(std::vector<Array>{x.array()}, dimension, is_stable, 1)[0];
}

std::vector<Array> sort(const std::vector<Array>& operands, int64_t dimension, bool is_stable,
                        int64_t num_keys) {
  if (operands.empty()) throw TypeError("Sort requires at least one operand");
  if (num_keys < 1 || num_keys > int64_t(operands.size())) {
    throw ValueError("num_keys=" + std::to_string(num_keys) + " must be between 1 and " +
                     "len(operand)=" + std::to_string(operands.size()));
  }
  dimension = frontend::canonicalize_axis(dimension, operands[0].ndim());
  return core::bind(Prim::sort, operands,
                    {{"dimension", dimension}, {"is_stable", is_stable}, {"num_keys", num_keys}});
}

namespace {

// `api` is "with_sharding_constraint" or "reshard"; a reshard's constraint is the explicit
// kind, which the implicit-reshard policy never reports.
Array constrain(const Array& x, const Sharding& sharding, const std::string& api) {
  std::optional<Sharding> resolved = parax::detail::try_resolve_spec(sharding);
  if (!resolved && api == "reshard" && core::tracer_of(x) == nullptr) {
    // Eagerly, a bare spec may also mean x's own mesh.
    if (const std::optional<NamedSharding> own = x.sharding().as_named()) {
      resolved = NamedSharding(own->mesh(), parax::detail::bare_spec(sharding));
    }
  }
  if (!resolved) {
    throw RuntimeError(api +
                       " requires a non-empty mesh if you are passing "
                       "`PartitionSpec`s or `None` to shardings! Is a mesh defined at the call "
                       "site? Alternatively, provide `Sharding`s to shardings and then the mesh "
                       "context manager is not required.");
  }
  try {
    resolved->impl().check_rank(x.ndim());
  } catch (const ValueError& e) {
    throw ValueError("One of " + api +
                     " arguments is incompatible with its "
                     "sharding annotation " +
                     resolved->to_string() + ": " + e.what());
  }
  core::Params params{{"sharding", std::make_shared<const Sharding>(*resolved)}};
  if (api == "reshard") params.set("_api", api);
  return core::bind1(Prim::sharding_constraint, {x}, std::move(params));
}

}  // namespace

Array with_sharding_constraint(const Array& x, const Sharding& sharding,
                               std::source_location site) {
  const core::UserCallScope call(site);
  return constrain(x, sharding, "with_sharding_constraint");
}

}  // namespace parax::lax

namespace parax {

Array reshard(const Array& x, const Sharding& sharding, std::source_location site) {
  const core::UserCallScope call(site);
  return lax::constrain(x, sharding, "reshard");
}

}  // namespace parax
