// The lax and numpy front ends against JAX 0.4.35: every case of
// tools/make_lax_numpy_goldens.py is computed here with the same inputs and compared with
// JAX's repr (values, dtype, weak type and shape at once), within a tolerance for
// transcendental kernels, or with JAX's error kind and text. Promotion tables are checked
// pair by pair; behaviour parax chose differently from JAX is tested at the end.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <sstream>
#include <variant>

#include "base/promotion.h"
#include "core/program_trace.h"
#include "parax/lax.h"
#include "parax/parax.h"
#include "support/golden.h"
#include "support/golden_record.h"

namespace parax {
namespace {

namespace jnp = parax::numpy;
using Result = std::variant<Array, std::vector<Array>>;
using Case = std::pair<std::string, std::function<Result()>>;

const std::map<std::string, std::string>& goldens() {
  static const auto* records =
      new std::map<std::string, std::string>(testing::read_golden("lax_numpy_cases.txt"));
  return *records;
}

// The inputs of the golden script, in the same order.
struct Inputs {
  Array f = jnp::array({{-1.5f, 0.0f, 2.25f}, {3.0f, -4.75f, 0.5f}});
  Array v = jnp::array({1.0f, -2.0f, 3.0f});
  Array w = jnp::array({0.5f, 4.0f, -1.0f});
  Array i = jnp::array({{-3, 0, 5}, {7, -2, 4}});
  Array j = jnp::array({2, -3, 4});
  Array u8 = jnp::array({1, 2, 250}, std::nullopt, DType::uint8);
  Array i8 = jnp::array({-100, 50, 127}, std::nullopt, DType::int8);
  Array u32 = jnp::array({1, 2, 3}, std::nullopt, DType::uint32);
  Array b = jnp::array({true, false, true});
  Array h = jnp::array({1.5f, -2.25f, 3.0f}, std::nullopt, DType::float16);
  Array bf = jnp::array({1.5f, -2.25f, 3.0f}, std::nullopt, DType::bfloat16);
  Array m = jnp::arange(12, DType::float32).reshape({3, 4});
  Array n = jnp::arange(8, DType::float32).reshape({4, 2});
  Array t3 = jnp::arange(24, DType::float32).reshape({2, 3, 4});
  Array col = jnp::array({{1.0f}, {2.0f}});
  Array r = jnp::array({0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.675f});
  Array special = jnp::array({1.0f, NAN, INFINITY, -INFINITY});
  Array sq = jnp::arange(9, DType::float32).reshape({3, 3});
  Array ws = ArrayLike(2.0).array();  // weak float32, as jnp.asarray(2.0)
  Array wi = ArrayLike(3).array();    // weak int32
};

constexpr double inf = HUGE_VAL;

Array f32(float x) { return jnp::array(x); }
Array i32(int x) { return jnp::array(x); }
Array ones(Shape s) { return jnp::ones(std::move(s)); }
Slice sl(std::optional<int64_t> a, std::optional<int64_t> b) { return Slice{a, b}; }

#define CASE(name, ...)                           \
  {                                               \
    name, [&]() -> Result { return __VA_ARGS__; } \
  }

std::vector<Case> cases(const Inputs& in) {
  const auto& [f, v, w, i, j, u8, i8, u32, b, h, bf, m, n, t3, col, r, special, sq, ws, wi] = in;
  using lax::RoundingMethod;
  return {
      // Promotion through operators.
      CASE("add_f_int", f + 1),
      CASE("add_i_float", i + 2.5),
      CASE("mul_h_float", h * 2.0),
      CASE("div_i_int", i / 2),
      CASE("add_i_u32", j + u32),
      CASE("add_bf_h", bf + h),
      CASE("add_b_int", b + 1),
      CASE("add_b_b", b + b),
      CASE("mul_b_b", b * b),
      CASE("add_u8_int", u8 + 1),
      CASE("add_i8_u8", i8 + u8),
      CASE("sub_f_col", f - col),
      CASE("add_f_v", f + v),
      CASE("add_weak_weak", ws + wi),
      CASE("mul_weak_i8", ws * i8),
      CASE("sub_int_f", 1 - f),
      CASE("neg_f", -f),
      CASE("invert_i", ~i),
      CASE("mod_i_int", i % 3),
      CASE("and_i_j", j & 6),
      CASE("or_b_b", b | jnp::array({false, false, true})),
      CASE("xor_i", j ^ 5),
      CASE("lshift_j", j << 2),
      CASE("rshift_j", j >> 1),
      CASE("rshift_u8", u8 >> 1),
      CASE("eq_f_v", f == v),
      CASE("ne_i_int", i != 0),
      CASE("lt_f", f < 0.5),
      CASE("ge_i_j", i >= j),
      CASE("err_add_shapes", v + ones({4})),
      CASE("err_add_ranks", f + ones({4})),
      CASE("err_add_2d", f + ones({3, 3})),
      // Unary math.
      CASE("abs_i", jnp::abs(i)),
      CASE("abs_u8", jnp::abs(u8)),
      CASE("abs_b", jnp::abs(b)),
      CASE("sign_f", jnp::sign(f)),
      CASE("sign_i", jnp::sign(i)),
      CASE("floor_f", jnp::floor(f)),
      CASE("floor_i", jnp::floor(i)),
      CASE("ceil_f", jnp::ceil(f)),
      CASE("round_r", jnp::round(r)),
      CASE("round_r1", jnp::round(r, 1)),
      CASE("round_h1", jnp::round(h, 1)),
      CASE("round_i", jnp::round(i)),
      CASE("trunc_f", jnp::trunc(f)),
      CASE("exp_f", jnp::exp(f)),
      CASE("exp_i", jnp::exp(j)),
      CASE("exp_weak", jnp::exp(wi)),
      CASE("exp2_f", jnp::exp2(f)),
      CASE("expm1_f", jnp::expm1(f)),
      CASE("log_v", jnp::log(v)),
      CASE("log1p_w", jnp::log1p(w)),
      CASE("log2_m", jnp::log2(m)),
      CASE("log10_m", jnp::log10(m)),
      CASE("sin_f", jnp::sin(f)),
      CASE("cos_f", jnp::cos(f)),
      CASE("tan_f", jnp::tan(f)),
      CASE("arcsin_w", jnp::arcsin(w)),
      CASE("arccos_w", jnp::arccos(w)),
      CASE("arctan_f", jnp::arctan(f)),
      CASE("sinh_f", jnp::sinh(f)),
      CASE("cosh_f", jnp::cosh(f)),
      CASE("tanh_f", jnp::tanh(f)),
      CASE("sqrt_m", jnp::sqrt(m)),
      CASE("sqrt_i8", jnp::sqrt(i8)),
      CASE("cbrt_f", jnp::cbrt(f)),
      CASE("square_i", jnp::square(i)),
      CASE("square_b", jnp::square(b)),
      CASE("reciprocal_j", jnp::reciprocal(j)),
      CASE("isfinite_s", jnp::isfinite(special)),
      CASE("isfinite_i", jnp::isfinite(i)),
      CASE("isnan_s", jnp::isnan(special)),
      CASE("isinf_s", jnp::isinf(special)),
      CASE("logical_not_i", jnp::logical_not(i)),
      CASE("invert_b", jnp::invert(b)),
      CASE("positive_f", jnp::positive(f)),
      CASE("err_neg_b", jnp::negative(b)),
      // Binary math.
      CASE("true_divide_i_j", jnp::true_divide(i, j)),
      CASE("floor_divide_i_j", jnp::floor_divide(i, j)),
      CASE("floor_divide_f_v", jnp::floor_divide(f, v)),
      CASE("floor_divide_u8", jnp::floor_divide(u8, 3)),
      CASE("remainder_i_j", jnp::remainder(i, j)),
      CASE("remainder_f_v", jnp::remainder(f, v)),
      CASE("remainder_i_zero", jnp::remainder(j, 0)),
      CASE("fmod_i_j", jnp::fmod(i, j)),
      CASE("fmod_f_v", jnp::fmod(f, v)),
      CASE("power_f_2", jnp::power(f, 2)),
      CASE("power_f_half", jnp::power(m, 0.5)),
      CASE("power_f_v", jnp::power(m, ones({3, 4}) * 1.5)),
      CASE("power_i_2", jnp::power(i, 2)),
      CASE("power_j_j", jnp::power(j, jnp::array({3, 2, 1}))),
      CASE("power_v_j", jnp::power(v, jnp::array({3, 2, -1}))),
      CASE("power_f_neg", jnp::power(v, -2)),
      CASE("maximum_f_v", jnp::maximum(f, v)),
      CASE("minimum_s", jnp::minimum(special, 2.0)),
      CASE("maximum_i_f", jnp::maximum(j, 0.5)),
      CASE("arctan2_f_v", jnp::arctan2(f, v)),
      CASE("nextafter_v_w", jnp::nextafter(v, w)),
      CASE("bitwise_and_i_j", jnp::bitwise_and(i, j)),
      CASE("bitwise_or_u8", jnp::bitwise_or(u8, 4)),
      CASE("bitwise_xor_b", jnp::bitwise_xor(b, true)),
      CASE("left_shift_i8", jnp::left_shift(i8, 1)),
      CASE("right_shift_i8", jnp::right_shift(i8, 2)),
      CASE("logical_and_i_f", jnp::logical_and(i, f)),
      CASE("logical_or_b_i", jnp::logical_or(b, j)),
      CASE("logical_xor_f", jnp::logical_xor(f, 1.0)),
      CASE("equal_i_f", jnp::equal(i, f)),
      CASE("less_equal_j", jnp::less_equal(j, 2)),
      CASE("greater_f", jnp::greater(f, v)),
      CASE("where_b", jnp::where(b, v, w)),
      CASE("where_i_scalar", jnp::where(i, 1.0, 0)),
      CASE("where_scalar_cond", jnp::where(true, f, 0)),
      CASE("where_f_col", jnp::where(f > 0, f, col)),
      CASE("where_promote", jnp::where(b, j, 2.5)),
      CASE("err_where", jnp::where(b, f, ones({4}))),
      CASE("clip_f", jnp::clip(f, -1.0, 2.0)),
      CASE("clip_i_min", jnp::clip(i, 0, std::nullopt)),
      CASE("clip_i_max_f", jnp::clip(i, std::nullopt, 2.5)),
      CASE("isclose_s", jnp::isclose(special, jnp::array({1.0f + 1e-6f, NAN, INFINITY, INFINITY}))),
      CASE("isclose_nan", jnp::isclose(special, special, 1e-5, 1e-8, true)),
      CASE("isclose_i", jnp::isclose(j, jnp::array({2, -3, 5}))),
      CASE("allclose_true", jnp::allclose(v, v + 1e-7)),
      CASE("allclose_false", jnp::allclose(v, w)),
      CASE("array_equal_same", jnp::array_equal(v, v)),
      CASE("array_equal_shape", jnp::array_equal(v, f)),
      CASE("array_equal_int_float", jnp::array_equal(j, jnp::array({2.0f, -3.0f, 4.0f}))),
      // Reductions.
      CASE("sum_f", jnp::sum(f)),
      CASE("sum_f_0", jnp::sum(f, 0)),
      CASE("sum_f_neg1_keep", jnp::sum(f, -1, true)),
      CASE("sum_t3_02", jnp::sum(t3, {0, 2})),
      CASE("sum_b", jnp::sum(b)),
      CASE("sum_i8", jnp::sum(i8)),
      CASE("sum_u8", jnp::sum(u8)),
      CASE("sum_h", jnp::sum(h)),
      CASE("sum_i_dtype", jnp::sum(i, {}, false, DType::float32)),
      CASE("sum_weak", jnp::sum(ws)),
      CASE("sum_empty_axes", jnp::sum(f, std::vector<int64_t>{})),
      CASE("err_sum_axis", jnp::sum(f, 2)),
      CASE("err_sum_dup", jnp::sum(f, {0, 0})),
      CASE("prod_f_1", jnp::prod(f, 1)),
      CASE("prod_i", jnp::prod(i)),
      CASE("prod_b", jnp::prod(b)),
      CASE("mean_f", jnp::mean(f)),
      CASE("mean_i_0", jnp::mean(i, 0)),
      CASE("mean_h", jnp::mean(h)),
      CASE("mean_b", jnp::mean(b)),
      CASE("mean_t3_keep", jnp::mean(t3, {1, 2}, true)),
      CASE("mean_i_dtype", jnp::mean(i, {}, false, DType::float16)),
      CASE("var_f", jnp::var(f)),
      CASE("var_i_1", jnp::var(i, 1)),
      CASE("std_m_ddof", jnp::std(m, 0, 1)),
      CASE("var_h", jnp::var(h)),
      CASE("var_ddof_big", jnp::var(v, {}, 3)),
      CASE("max_f", jnp::max(f)),
      CASE("max_f_1", jnp::max(f, 1)),
      CASE("min_i_0_keep", jnp::min(i, 0, true)),
      CASE("max_b", jnp::max(b)),
      CASE("min_u8", jnp::min(u8)),
      CASE("max_s", jnp::max(special)),
      CASE("err_max_empty", jnp::max(jnp::zeros({0, 3}), 0)),
      CASE("all_b", jnp::all(b)),
      CASE("any_i_1", jnp::any(i, 1)),
      CASE("all_f_0", jnp::all(f, 0)),
      CASE("argmax_f", jnp::argmax(f)),
      CASE("argmax_f_1", jnp::argmax(f, 1)),
      CASE("argmin_i_0_keep", jnp::argmin(i, 0, true)),
      CASE("argmax_keep_none", jnp::argmax(f, std::nullopt, true)),
      CASE("argmax_s", jnp::argmax(special)),
      CASE("err_argmax_empty", jnp::argmax(jnp::zeros({0}))),
      CASE("cumsum_f", jnp::cumsum(f)),
      CASE("cumsum_f_1", jnp::cumsum(f, 1)),
      CASE("cumsum_b", jnp::cumsum(b)),
      CASE("cumsum_i8", jnp::cumsum(i8)),
      CASE("cumsum_i_dtype", jnp::cumsum(i, 0, DType::float32)),
      CASE("sort_f", jnp::sort(f)),
      CASE("sort_f_0", jnp::sort(f, 0)),
      CASE("sort_none", jnp::sort(i, std::nullopt)),
      CASE("sort_s", jnp::sort(special)),
      CASE("argsort_f", jnp::argsort(f)),
      CASE("argsort_dups", jnp::argsort(jnp::array({3, 1, 2, 1, 3}))),
      CASE("argsort_none", jnp::argsort(i, std::nullopt)),
      // Shapes.
      CASE("reshape_m", jnp::reshape(m, {2, -1})),
      CASE("reshape_method", m.reshape({4, 3})),
      CASE("err_reshape_size", m.reshape({5, 2})),
      CASE("err_reshape_div", m.reshape({5, -1})),
      CASE("err_reshape_two", m.reshape({-1, -1})),
      CASE("transpose_f", jnp::transpose(f)),
      CASE("transpose_t3", jnp::transpose(t3, std::vector<int64_t>{1, 0, 2})),
      CASE("transpose_t3_neg", jnp::transpose(t3, std::vector<int64_t>{-1, 0, 1})),
      CASE("swapaxes_t3", jnp::swapaxes(t3, 0, 2)),
      CASE("moveaxis_t3", jnp::moveaxis(t3, 0, -1)),
      CASE("ravel_f", jnp::ravel(f)),
      CASE("squeeze_col", jnp::squeeze(col)),
      CASE("squeeze_axis", jnp::squeeze(ones({1, 3, 1}), 0)),
      CASE("err_squeeze", jnp::squeeze(f, 0)),
      CASE("expand_dims_v", jnp::expand_dims(v, 0)),
      CASE("expand_dims_multi", jnp::expand_dims(v, {0, 2})),
      CASE("expand_dims_neg", jnp::expand_dims(f, -1)),
      CASE("broadcast_to_v", jnp::broadcast_to(v, {2, 3})),
      CASE("broadcast_to_col", jnp::broadcast_to(col, {2, 2, 4})),
      CASE("err_broadcast_to", jnp::broadcast_to(v, {2, 4})),
      CASE("err_broadcast_to_rank", jnp::broadcast_to(f, {3})),
      CASE("concatenate_fi", jnp::concatenate({f, i})),
      CASE("concatenate_1", jnp::concatenate({f, col}, 1)),
      CASE("concatenate_many", jnp::concatenate(std::vector<Array>(20, v))),
      CASE("err_concatenate_0d", jnp::concatenate({f32(1), f32(2)})),
      CASE("err_concatenate_empty", jnp::concatenate({})),
      CASE("stack_v_w", jnp::stack({v, w})),
      CASE("stack_v_w_1", jnp::stack({v, w}, 1)),
      CASE("stack_neg", jnp::stack({f, f}, -1)),
      CASE("err_stack_shapes", jnp::stack({v, f})),
      CASE("vstack_v_w", jnp::vstack({v, w})),
      CASE("vstack_f_v", jnp::vstack({f, v})),
      CASE("hstack_v_w", jnp::hstack({v, w})),
      CASE("hstack_f_col", jnp::hstack({f, col})),
      CASE("split_m_3", jnp::split(m, 2, 1)),
      CASE("split_m_idx", jnp::split(m, std::vector<int64_t>{1, 3}, -1)),
      CASE("split_v", jnp::split(v, 3)),
      CASE("err_split", jnp::split(m, 3, 1)),
      CASE("flip_f", jnp::flip(f)),
      CASE("flip_f_1", jnp::flip(f, 1)),
      CASE("tile_v", jnp::tile(v, {2})),
      CASE("tile_f", jnp::tile(f, {2, 1, 2})),
      CASE("repeat_v", jnp::repeat(v, 2)),
      CASE("repeat_f_0", jnp::repeat(f, 2, 0)),
      CASE("repeat_f_none", jnp::repeat(f, 2)),
      CASE("tril_m", jnp::tril(m)),
      CASE("tril_m_k", jnp::tril(m, -1)),
      CASE("triu_m_k", jnp::triu(m, 1)),
      CASE("tril_t3", jnp::tril(t3)),
      CASE("err_tril", jnp::tril(v)),
      CASE("zeros_like_i", jnp::zeros_like(i)),
      CASE("ones_like_f", jnp::ones_like(f, DType::int8)),
      CASE("zeros_like_weak", jnp::zeros_like(ws)),
      CASE("full_like_f", jnp::full_like(f, 7)),
      CASE("full_like_i_f", jnp::full_like(i, 2.5)),
      CASE("full_like_array", jnp::full_like(f, v)),
      CASE("copy_f", jnp::copy(f)),
      CASE("astype_f_i", f.astype(DType::int32)),
      CASE("astype_f_b", f.astype(DType::bool_)),
      CASE("astype_i_u8", i.astype(DType::uint8)),
      CASE("astype_weak", ws.astype(DType::float32)),
      CASE("asarray_weak", jnp::asarray(ws)),
      CASE("asarray_dtype", jnp::asarray(j, DType::float16)),
      // Products.
      CASE("dot_v_w", jnp::dot(v, w)),
      CASE("dot_f_v", jnp::dot(f, v)),
      CASE("dot_m_n", jnp::dot(m, n)),
      CASE("dot_t3_n", jnp::dot(t3, n)),
      CASE("dot_scalar", jnp::dot(f, 2.0)),
      CASE("dot_i_v", jnp::dot(i, v)),
      CASE("dot_v_i", jnp::dot(j, j)),
      CASE("err_dot", jnp::dot(f, f)),
      CASE("matmul_m_n", jnp::matmul(m, n)),
      CASE("matmul_t3_n", jnp::matmul(t3, n)),
      CASE("matmul_v_m", jnp::matmul(ones({3}), m)),
      CASE("matmul_m_vec", jnp::matmul(m, jnp::array({1.0f, 2.0f, 3.0f, 4.0f}))),
      CASE("matmul_batch_bcast",
           jnp::matmul(ones({2, 1, 3, 4}), jnp::arange(40, DType::float32).reshape({5, 4, 2}))),
      CASE("matmul_batch_one", jnp::matmul(ones({1, 3, 4}), t3.reshape({2, 4, 3}))),
      CASE("matmul_i_f", jnp::matmul(i, ones({3, 2}))),
      CASE("err_matmul_scalar", jnp::matmul(v, 2.0)),
      CASE("err_matmul_batch", jnp::matmul(ones({2, 3, 4}), ones({3, 4, 2}))),
      CASE("err_matmul_k", jnp::matmul(m, m)),
      CASE("vdot_f_f", jnp::vdot(f, f)),
      CASE("outer_v_j", jnp::outer(v, j)),
      CASE("inner_v_w", jnp::inner(v, w)),
      CASE("inner_f_f", jnp::inner(f, f)),
      CASE("inner_scalar", jnp::inner(v, 2)),
      CASE("einsum_ij_jk", jnp::einsum("ij,jk->ik", m, n)),
      CASE("einsum_implicit", jnp::einsum("ij,jk", m, n)),
      CASE("einsum_batch", jnp::einsum("bij,bjk->bik", t3, t3.reshape({2, 4, 3}))),
      CASE("einsum_transpose_out", jnp::einsum("ij,jk->ki", m, n)),
      CASE("einsum_sum_unique", jnp::einsum("ij,k->ik", f, v)),
      CASE("einsum_outer", jnp::einsum("i,j->ij", v, w)),
      CASE("einsum_full", jnp::einsum("ij,ij->", f, f)),
      CASE("einsum_ellipsis", jnp::einsum("...ij,jk->...ik", t3, n)),
      CASE("einsum_diag_two", jnp::einsum("ii,i->i", sq, v)),
      CASE("einsum_int_float", jnp::einsum("i,i->", j, v)),
      CASE("einsum1_transpose", jnp::einsum("ij->ji", f)),
      CASE("einsum1_diag", jnp::einsum("ii->i", sq)),
      CASE("einsum1_trace", jnp::einsum("ii", sq)),
      CASE("einsum1_sum", jnp::einsum("ijk->j", t3)),
      CASE("einsum1_weak", jnp::einsum("i->", jnp::array({1.0f, 2.0f}) * ws)),
      CASE("norm_f", jnp::linalg::norm(f)),
      CASE("norm_f_keep", jnp::linalg::norm(f, std::nullopt, {}, true)),
      CASE("norm_f_axis1", jnp::linalg::norm(f, std::nullopt, 1)),
      CASE("norm_v_1", jnp::linalg::norm(v, 1)),
      CASE("norm_v_inf", jnp::linalg::norm(v, inf)),
      CASE("norm_v_ninf", jnp::linalg::norm(v, -inf)),
      CASE("norm_v_0", jnp::linalg::norm(jnp::array({0.0f, 2.0f, 0.0f, -1.0f}), 0)),
      CASE("norm_v_3", jnp::linalg::norm(v, 3)),
      CASE("norm_m_1", jnp::linalg::norm(m, 1)),
      CASE("norm_m_inf", jnp::linalg::norm(m, inf)),
      CASE("norm_m_ninf_keep", jnp::linalg::norm(m, -inf, {}, true)),
      CASE("norm_i", jnp::linalg::norm(i)),
      CASE("norm_t3_axes", jnp::linalg::norm(t3, 1, {2, 0})),
      CASE("err_norm_axes", jnp::linalg::norm(t3, 1)),
      CASE("err_norm_ord", jnp::linalg::norm(m, 3)),
      // lax.
      CASE("lax_add_int", lax::add(j, 2)),
      CASE("err_lax_add_shapes", lax::add(v, ones({4}))),
      CASE("lax_sub_scalar", lax::sub(v, f32(1))),
      CASE("lax_div_int", lax::div(j, i32(2))),
      CASE("lax_rem_int", lax::rem(j, i32(3))),
      CASE("lax_pow_f_i", lax::pow(v, j)),
      CASE("lax_max", lax::max(v, w)),
      CASE("lax_shift_right_logical", lax::shift_right_logical(j, i32(1))),
      CASE("lax_shift_right_arithmetic", lax::shift_right_arithmetic(j, i32(1))),
      CASE("lax_round_away", lax::round(r)),
      CASE("lax_round_even", lax::round(r, RoundingMethod::TO_NEAREST_EVEN)),
      CASE("lax_integer_pow", lax::integer_pow(v, 3)),
      CASE("lax_integer_pow_neg", lax::integer_pow(v, -2)),
      CASE("lax_convert_f_i", lax::convert_element_type(f, DType::int32)),
      CASE("lax_convert_f_b", lax::convert_element_type(f, DType::bool_)),
      CASE("lax_convert_weak", lax::convert_element_type(ws, DType::float32)),
      // lax_convert_i64 is JAX's int32 without x64; parax honours int64 (test below).
      CASE("lax_rsqrt", lax::rsqrt(m)),
      CASE("lax_logistic", lax::logistic(f)),
      CASE("lax_erf", lax::erf(f)),
      CASE("lax_erf_inv", lax::erf_inv(jnp::array({-0.5f, 0.0f, 0.9f}))),
      CASE("lax_is_finite", lax::is_finite(special)),
      CASE("lax_not_i", lax::bitwise_not(j)),
      CASE("lax_not_b", lax::bitwise_not(b)),
      CASE("lax_nextafter", lax::nextafter(v, w)),
      CASE("lax_atan2", lax::atan2(v, w)),
      CASE("lax_select", lax::select(b, v, w)),
      CASE("lax_select_n", lax::select_n(jnp::array({0, 2, 1}), {v, w, v * 10})),
      CASE("err_lax_select_n_empty", lax::select_n(b, {})),
      CASE("lax_clamp", lax::clamp(f32(-1), f, f32(1))),
      CASE("lax_clamp_arrays", lax::clamp(jnp::zeros({3}), w, ones({3}))),
      CASE("lax_iota", lax::iota(DType::int32, 5)),
      CASE("lax_iota_f", lax::iota(DType::float32, 3)),
      CASE("lax_broadcasted_iota", lax::broadcasted_iota(DType::int32, {2, 3}, 1)),
      CASE("lax_broadcast_in_dim", lax::broadcast_in_dim(v, {2, 3}, {1})),
      CASE("lax_broadcast_in_dim_1", lax::broadcast_in_dim(col, {2, 4}, {0, 1})),
      CASE("lax_broadcast", lax::broadcast(v, {2})),
      CASE("lax_reshape", lax::reshape(m, {4, 3})),
      CASE("lax_transpose", lax::transpose(t3, {2, 0, 1})),
      CASE("lax_squeeze", lax::squeeze(ones({1, 3, 1}), {0, -1})),
      CASE("lax_expand_dims", lax::expand_dims(v, {0, -1})),
      CASE("err_lax_expand_dims", lax::expand_dims(v, {0, 0})),
      CASE("lax_slice", lax::slice(m, {1, 0}, {3, 4})),
      CASE("lax_slice_strides", lax::slice(m, {0, 1}, {3, 4}, {2, 2})),
      CASE("lax_dynamic_slice", lax::dynamic_slice(m, {i32(1), i32(1)}, {2, 2})),
      CASE("lax_dynamic_slice_neg", lax::dynamic_slice(m, {i32(-2), i32(0)}, {1, 4})),
      CASE("lax_dynamic_slice_clamp", lax::dynamic_slice(m, {i32(2), i32(3)}, {2, 2})),
      CASE("err_lax_dynamic_slice", lax::dynamic_slice(m, {i32(0)}, {1, 1})),
      CASE("lax_dynamic_update_slice",
           lax::dynamic_update_slice(m, ones({2, 2}), {i32(1), i32(-1)})),
      CASE("lax_concatenate", lax::concatenate({v, w, v}, 0)),
      CASE("lax_concatenate_1", lax::concatenate({f, f}, 1)),
      CASE("err_lax_concatenate", lax::concatenate({}, 0)),
      CASE("lax_pad", lax::pad(v, f32(0), {{1, 2, 1}})),
      CASE("lax_pad_neg", lax::pad(m, f32(-1), {{-1, 0, 0}, {0, 1, 0}})),
      CASE("lax_rev", lax::rev(m, {0, 1})),
      CASE("lax_dot_general", lax::dot_general(t3, t3, {{2}, {2}, {0}, {0}})),
      CASE("lax_dot_general_pref", lax::dot_general(i, i, {{1}, {1}, {}, {}}, DType::float32)),
      CASE("lax_dot", lax::dot(m, n)),
      CASE("lax_dot_mv", lax::dot(f, v)),
      CASE("err_lax_dot", lax::dot(f, f)),
      CASE("err_lax_dot_general_k", lax::dot_general(m, m, {{1}, {0}, {}, {}})),
      CASE("lax_reduce_sum", lax::reduce_sum(t3, {0, 2})),
      CASE("lax_reduce_max", lax::reduce_max(f, {1})),
      CASE("lax_reduce_min", lax::reduce_min(i, {0})),
      CASE("lax_reduce_prod", lax::reduce_prod(f, {0})),
      CASE("lax_reduce_and", lax::reduce_and(b, {0})),
      CASE("lax_reduce_or", lax::reduce_or(b, {0})),
      CASE("lax_argmax", lax::argmax(f, 1, DType::int32)),
      CASE("lax_argmin", lax::argmin(f, 0, DType::int32)),
      CASE("lax_cumsum", lax::cumsum(m, 1)),
      CASE("lax_cumsum_rev", lax::cumsum(m, 0, true)),
      CASE("lax_sort", lax::sort(f)),
      CASE("lax_sort_0", lax::sort(f, 0)),
      CASE(
          "lax_sort_multi",
          lax::sort({jnp::array({3, 1, 2, 1}), jnp::array({0.0f, 1.0f, 2.0f, 3.0f})}, -1, true, 1)),
      CASE("err_lax_sort_keys", lax::sort({v, w}, -1, true, 3)),
      CASE("lax_copy", lax::copy(f)),
      // Indexing.
      CASE("index_0", f[0]),
      CASE("index_neg", f[-1]),
      CASE("index_t3", t3[1]),
      CASE("index_v", v[2]),
      CASE("slice_rows", m.slice({sl(1, {})})),
      CASE("slice_neg", m.slice({sl(-2, {}), sl(1, 3)})),
      CASE("slice_clip", m.slice({sl({}, 10), sl(-10, 2)})),
      CASE("slice_empty", m.slice({sl(2, 1)})),
      CASE("err_slice_many", v.slice({sl(0, 1), sl(0, 1)})),
  };
}

#undef CASE

// Floats within 4e-6 (halves 1e-2) plus 1e-6.
constexpr testing::RecordTolerance kTolerance{
    .rtol = 4e-6, .atol = 1e-6, .float16_rtol = 1e-2, .bfloat16_rtol = 1e-2};

void check_array(const std::string& name, const Array& x) {
  const auto& g = goldens();
  auto it = g.find(name);
  ASSERT_NE(it, g.end()) << "no golden for " << name;
  if (g.count(name + "#approx")) {
    testing::expect_record(name, x, g.at(name + "#v"), kTolerance);
  } else {
    EXPECT_EQ(x.to_string(), it->second) << name;
  }
}

TEST(LaxNumpy, MatchesJax) {
  Inputs in;
  int checked = 0;
  for (const auto& [name, fn] : cases(in)) {
    SCOPED_TRACE(name);
    const auto& g = goldens();
    std::optional<Result> result;
    std::string error;
    try {
      result = fn();
    } catch (const Error& e) {
      error = testing::error_record(e);
    }
    std::string key = name;
    if (result && std::holds_alternative<std::vector<Array>>(*result)) key += "[0]";
    auto it = g.find(key);
    ASSERT_NE(it, g.end()) << "no golden for " << name;
    if (it->second.starts_with("!")) {
      EXPECT_EQ(error, it->second) << name;
    } else if (!result) {
      ADD_FAILURE() << name << " threw " << error << "; JAX gives " << it->second;
    } else if (auto* x = std::get_if<Array>(&*result)) {
      check_array(name, *x);
    } else {
      const auto& xs = std::get<std::vector<Array>>(*result);
      for (size_t k = 0; k < xs.size(); ++k) {
        check_array(name + "[" + std::to_string(k) + "]", xs[k]);
      }
      EXPECT_FALSE(g.count(name + "[" + std::to_string(xs.size()) + "]")) << name;
    }
    ++checked;
  }
  EXPECT_GT(checked, 300);
}

// The same cases traced: every result must have JAX's type without any value being read,
// and errors must not depend on tracing.
TEST(LaxNumpy, TracedCasesHaveJaxTypes) {
  Inputs in;
  core::ProgramTrace trace;
  auto arg = [&](Array& x) { x = trace.new_arg(core::aval_of(x)); };
  for (Array* x :
       {&in.f,  &in.v, &in.w, &in.i,  &in.j,   &in.u8, &in.i8,      &in.u32, &in.b,  &in.h,
        &in.bf, &in.m, &in.n, &in.t3, &in.col, &in.r,  &in.special, &in.sq,  &in.ws, &in.wi}) {
    arg(*x);
  }
  core::TraceScope scope(trace);
  const auto& g = goldens();
  int checked = 0;
  for (const auto& [name, fn] : cases(in)) {
    SCOPED_TRACE(name);
    std::vector<Array> results;
    std::string error;
    try {
      Result r = fn();
      if (auto* x = std::get_if<Array>(&r)) {
        results = {*x};
      } else {
        results = std::get<std::vector<Array>>(r);
      }
    } catch (const Error& e) {
      error = testing::error_record(e);
    }
    const bool many = g.count(name + "[0]") > 0;
    const std::string& want = g.at(many ? name + "[0]" : name);
    if (want.starts_with("!")) {
      EXPECT_EQ(error, want);
      continue;
    }
    ASSERT_EQ(error, "");
    for (size_t k = 0; k < results.size(); ++k) {
      const std::string key = many ? name + "[" + std::to_string(k) + "]" : name;
      std::vector<std::string> parts = testing::split_fields(g.at(key + "#v"), '|');
      const core::Aval& aval = core::aval_of(results[k]);
      std::string shape;
      for (size_t d = 0; d < aval.shape.size(); ++d) {
        shape += (d ? "," : "") + std::to_string(aval.shape[d]);
      }
      EXPECT_EQ(
          std::string(dtype_name(aval.dtype)) + "|" + (aval.weak_type ? "w" : "s") + "|" + shape,
          parts[0] + "|" + parts[1] + "|" + parts[2]);
    }
    ++checked;
  }
  EXPECT_GT(checked, 300);
}

// ---- promotion tables --------------------------------------------------------------------

const std::vector<DType> kAllDTypes = {
    DType::bool_,    DType::int8,    DType::int16,  DType::int32,  DType::int64,
    DType::uint8,    DType::uint16,  DType::uint32, DType::uint64, DType::float16,
    DType::bfloat16, DType::float32, DType::float64};

std::string typed_str(base::TypedDType t) {
  return std::string(dtype_name(t.dtype)) + "|" + (t.weak ? "1" : "0");
}

void check_promotion_tables(const std::string& prefix) {
  const auto& g = goldens();
  for (DType a : kAllDTypes) {
    for (DType c : kAllDTypes) {
      const std::string pair = std::string(dtype_name(a)) + "/" + std::string(dtype_name(c));
      EXPECT_EQ(dtype_name(base::promote_types(a, c)), g.at(prefix + "promote/" + pair)) << pair;
      for (bool wa : {false, true}) {
        for (bool wc : {false, true}) {
          const std::string key = std::string(dtype_name(a)) + (wa ? "w" : "s") + "/" +
                                  std::string(dtype_name(c)) + (wc ? "w" : "s");
          std::vector<base::TypedDType> in = {{a, wa}, {c, wc}};
          // parax's one departure (README, "dtypes"): a strong 64-bit operand is an explicit
          // request for 64 bits, so the result is JAX's with x64 on in both modes.
          auto wide = [](DType t, bool weak) {
            return !weak && (t == DType::int64 || t == DType::uint64 || t == DType::float64);
          };
          const std::string p = wide(a, wa) || wide(c, wc) ? "x64/" : prefix;
          EXPECT_EQ(typed_str(base::lattice_result_type(in)), g.at(p + "lattice/" + key))
              << p << key;
          EXPECT_EQ(typed_str(base::result_type(in)), g.at(p + "result/" + key)) << p << key;
        }
      }
    }
  }
}

TEST(Promotion, MatchesJaxLattice) { check_promotion_tables(""); }

TEST(Promotion, MatchesJaxLatticeWithX64) {
  config::update("jax_enable_x64", true);
  check_promotion_tables("x64/");
  config::update("jax_enable_x64", false);
}

// ---- where parax differs from JAX, on purpose ----------------------------------------------

TEST(LaxNumpy, ExplicitInt64IsHonouredWithoutX64) {
  // JAX narrows convert_element_type(x, int64) to int32 without x64 (its golden
  // lax_convert_i64); parax honours an explicitly requested dtype (README, "dtypes").
  Array x = lax::convert_element_type(jnp::array({2, -3, 4}), DType::int64);
  EXPECT_EQ(x.to_string(), "Array([ 2, -3,  4], dtype=int64)");
}

TEST(LaxNumpy, IndexOutOfRangeRaises) {
  // JAX clamps x[7]; parax keeps numpy's IndexError (Array::operator[]'s contract).
  Array v = jnp::array({1.0f, 2.0f, 3.0f});
  try {
    (void)v[3];
    FAIL() << "expected IndexError";
  } catch (const IndexError& e) {
    EXPECT_STREQ(e.what(), "index 3 is out of bounds for axis 0 with size 3");
  }
  EXPECT_THROW((void)jnp::array(1.0f)[0], IndexError);
  EXPECT_EQ(v[-3].item<float>(), 1.0f);
}

TEST(LaxNumpy, LaxScalarsAdoptOperandDtype) {
  // JAX 0.4.35 fails to lower lax.mul(f16, 2.0); a C++ scalar adopts the array's dtype.
  Array h = jnp::array({1.5f, -2.0f}, std::nullopt, DType::float16);
  Array y = lax::mul(h, 2.0);
  EXPECT_EQ(y.dtype(), DType::float16);
  EXPECT_FALSE(y.weak_type());
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{3.0f, -4.0f}));
  Array x = lax::add(jnp::array({1.0f, 2.0f}), 1);  // an int literal may become a float
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{2.0f, 3.0f}));
  // A float literal never silently truncates into an integer operand.
  EXPECT_THROW(lax::add(jnp::array({1, 2}), 1.5), TypeError);
}

TEST(LaxNumpy, LaxDtypeMismatchIsTypeError) {
  try {
    lax::add(jnp::array({1, 2}), jnp::array({1.0f, 2.0f}));
    FAIL() << "expected TypeError";
  } catch (const TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("requires arguments to have the same dtypes"),
              std::string::npos)
        << e.what();
  }
}

TEST(LaxNumpy, ScalarLiteralsAreWeak) {
  Array a = ArrayLike(2.5).array();
  EXPECT_EQ(a.dtype(), DType::float32);
  EXPECT_TRUE(a.weak_type());
  Array k = ArrayLike(int64_t(7)).array();
  EXPECT_EQ(k.dtype(), DType::int32);
  EXPECT_TRUE(k.weak_type());
  Array t = ArrayLike(true).array();
  EXPECT_EQ(t.dtype(), DType::bool_);
  EXPECT_FALSE(t.weak_type());
  Array half = ArrayLike(float16_t(1.5f)).array();
  EXPECT_EQ(half.dtype(), DType::float16);
  EXPECT_FALSE(half.weak_type());
  // Beyond int32 the weak value stays int64, so an explicit int64 operand keeps it exact;
  // narrowing it to int32 fails as JAX's OverflowError does.
  Array big = ArrayLike(int64_t(3000000000)).array();
  EXPECT_EQ(big.dtype(), DType::int64);
  EXPECT_TRUE(big.weak_type());
  try {
    (void)jnp::add(jnp::array({1, 2}), int64_t(3000000000));
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(), "Python int 3000000000 too large to convert to int32");
  }
}

// ord 2 and -2 over matrices are singular values (tests/lax/linalg_test.cpp checks them against
// JAX).
TEST(LaxNumpy, MatrixTwoNormIsTheLargestSingularValue) {
  Array m = jnp::ones({2, 2});
  EXPECT_FLOAT_EQ(jnp::linalg::norm(m, 2).item<float>(), 2.0f);
  EXPECT_NEAR(jnp::linalg::norm(m, -2).item<float>(), 0.0f, 1e-6);
}

TEST(LaxNumpy, CompoundAssignment) {
  Array x = jnp::array({1, 2, 3});
  x += 1;
  x *= 2;
  EXPECT_EQ(x.to_vector<int>(), (std::vector<int>{4, 6, 8}));
  x /= 4;
  EXPECT_EQ(x.dtype(), DType::float32);
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{1.0f, 1.5f, 2.0f}));
}

TEST(LaxNumpy, LikeFunctionsKeepCommittedLayout) {
  // jnp.zeros_like of a committed array is laid out like it (lax.full_like's sharding).
  Array x = device_put(jnp::array({1.0f, 2.0f}), devices()[0]);
  Array z = jnp::zeros_like(x);
  EXPECT_TRUE(z.is_committed());
  EXPECT_EQ(z.sharding(), x.sharding());
  EXPECT_FALSE(jnp::zeros_like(jnp::array({1.0f})).is_committed());
  Array c = lax::with_sharding_constraint(jnp::array({1, 2}), SingleDeviceSharding(devices()[0]));
  EXPECT_EQ(c.to_vector<int>(), (std::vector<int>{1, 2}));
  EXPECT_EQ(c.sharding(), Sharding(SingleDeviceSharding(devices()[0])));
}

TEST(LaxNumpy, ParaxErrorTexts) {
  auto message = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  Array m = jnp::ones({2, 4});
  EXPECT_EQ(message([&] { jnp::split(m, 0, 1); }),
            "[numpy.split] number sections must be larger than 0: 0; expected a positive count");
  EXPECT_EQ(message([&] { jnp::einsum("ij,jk->ik", m); }),
            "[numpy.einsum] 'ij,jk->ik' names 2 operands; expected 1");
  EXPECT_EQ(message([&] { jnp::einsum("ijk,kl->il", m, m); }),
            "[numpy.einsum] operand 0 has shape (2, 4); expected rank 3 for 'ijk'");
  EXPECT_EQ(message([&] {
              jnp::einsum("ij,jk->iz", m, m.reshape({4, 2}));
            }),
            "[numpy.einsum] output label 'z' does not appear in any input of 'ij,jk->iz'");
  EXPECT_EQ(message([&] {
              jnp::einsum("ij,ij->ij", m, jnp::ones({2, 3}));
            }),
            "Size of label 'j' for operand 1 (3) does not match previous terms (4).");
  EXPECT_EQ(message([&] { jnp::expand_dims(m, None); }),
            "[numpy.expand_dims] axis is None; expected one axis or a list of axes");
}

// Traced, the front ends record the equations JAX's make_jaxpr shows. (dot_general is
// left out: parax prints its dimension numbers as four params, JAX as one tuple.)
struct TraceCase {
  std::string name;
  std::vector<core::Aval> args;
  std::function<Array(const std::vector<Array>&)> fn;
};

TEST(LaxNumpy, TracesLikeJax) {
  const core::Aval x23{{2, 3}, DType::float32, false};
  const core::Aval i3{{3}, DType::int32, false};
  const std::vector<TraceCase> cases = {
      {"mul_int", {x23}, [](auto& a) { return a[0] * 2; }},
      {"sin", {x23}, [](auto& a) { return jnp::sin(a[0]); }},
      {"sin_int", {i3}, [](auto& a) { return jnp::sin(a[0]); }},
      {"div_int", {i3}, [](auto& a) { return a[0] / 2; }},
      {"sum_axis", {x23}, [](auto& a) { return jnp::sum(a[0], 1); }},
      {"sum_int", {i3}, [](auto& a) { return jnp::sum(a[0]); }},
      {"mean_axis", {x23}, [](auto& a) { return jnp::mean(a[0], 0); }},
      {"astype", {x23}, [](auto& a) { return a[0].astype(DType::int32); }},
      {"argmax", {x23}, [](auto& a) { return jnp::argmax(a[0], 1); }},
      {"transpose", {x23}, [](auto& a) { return jnp::transpose(a[0]); }},
      {"lax_add", {i3}, [](auto& a) { return lax::add(a[0], 1); }},
      {"maximum", {x23, x23}, [](auto& a) { return jnp::maximum(a[0], a[1]); }},
  };
  for (const TraceCase& c : cases) {
    auto closed = core::trace_to_program(
        c.args, [&](const std::vector<Array>& args) { return std::vector<Array>{c.fn(args)}; });
    EXPECT_EQ(core::to_string(*closed.program), goldens().at("jaxpr/" + c.name)) << c.name;
  }
}

}  // namespace
}  // namespace parax
