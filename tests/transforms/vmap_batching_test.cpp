// The batching leg of the primitive sweep: for every primitive with operands, each row's
// one-equation program is vmapped with the primitive's batching rule and compared with the
// loop over batch elements (core::batch_by_loop), for batch dimensions at the front, at
// the end and in the middle, with some operands unbatched, and batch sizes 3, 1 and 0.
// Results agree exactly, except floating sums and products, which agree to a few ulps
// (a reduction tree may group a batch differently from its slices).
// A second pass traces each vmapped program and checks that the rule, not the loop, made
// it. iota has no operands, so nothing of it is ever batched.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/batching.h"
#include "core/program_trace.h"
#include "core/trace.h"
#include "parax/numpy.h"
#include "parax/sharding.h"

namespace parax {
namespace {

using core::Aval;
using core::BatchAxis;
using core::Batched;
using core::kNotMapped;
using core::Params;
using core::Prim;
using Ints = std::vector<int64_t>;

// One operand of a row: the type of one batch element and the values to draw.
struct Operand {
  Shape shape;
  DType dtype = DType::float32;
  double lo = -2;
  double hi = 2;
};

struct Case {
  std::string name;
  Prim prim;
  std::vector<Operand> operands;
  Params params;
};

Operand f32(Shape s, double lo = -2, double hi = 2) {
  return {std::move(s), DType::float32, lo, hi};
}
Operand i32(Shape s, double lo = -9, double hi = 9) { return {std::move(s), DType::int32, lo, hi}; }
Operand boolean(Shape s) { return {std::move(s), DType::bool_, 0, 1}; }

// ---------------------------------------------------------------------------------------
// The rows.

void add_elementwise(std::vector<Case>& cases) {
  struct Unary {
    Prim prim;
    double lo, hi;
  };
  const Unary unary[] = {
      {Prim::neg, -2, 2},          {Prim::abs, -2, 2},       {Prim::sign, -2, 2},
      {Prim::floor, -3, 3},        {Prim::ceil, -3, 3},      {Prim::exp, -2, 2},
      {Prim::exp2, -2, 2},         {Prim::log, 0.1, 3},      {Prim::log1p, -0.5, 2},
      {Prim::expm1, -2, 2},        {Prim::sin, -3, 3},       {Prim::cos, -3, 3},
      {Prim::tan, -1, 1},          {Prim::asin, -0.9, 0.9},  {Prim::acos, -0.9, 0.9},
      {Prim::atan, -3, 3},         {Prim::sinh, -2, 2},      {Prim::cosh, -2, 2},
      {Prim::tanh, -2, 2},         {Prim::sqrt, 0, 4},       {Prim::rsqrt, 0.1, 4},
      {Prim::cbrt, -4, 4},         {Prim::logistic, -4, 4},  {Prim::erf, -2, 2},
      {Prim::erf_inv, -0.9, 0.9},  {Prim::is_finite, -2, 2}, {Prim::copy, -2, 2},
      {Prim::stop_gradient, -2, 2}};
  for (const Unary& u : unary) {
    const std::string name(core::prim_name(u.prim));
    cases.push_back({name, u.prim, {f32({3, 4}, u.lo, u.hi)}, {}});
    cases.push_back({name + " of a scalar", u.prim, {f32({}, u.lo, u.hi)}, {}});
  }
  cases.push_back({"round", Prim::round, {f32({3, 4}, -3, 3)}, {{"rounding_method", int64_t{1}}}});
  cases.push_back({"not", Prim::not_, {i32({5})}, {}});
  cases.push_back({"not bool", Prim::not_, {boolean({2, 3})}, {}});
  cases.push_back({"integer_pow", Prim::integer_pow, {f32({3, 4})}, {{"y", int64_t{3}}}});
  cases.push_back({"integer_pow int", Prim::integer_pow, {i32({4})}, {{"y", int64_t{2}}}});
  cases.push_back({"convert_element_type",
                   Prim::convert_element_type,
                   {f32({3, 4}, -9, 9)},
                   {{"new_dtype", DType::int32}, {"weak_type", false}}});

  struct Binary {
    Prim prim;
    Operand x, y;
  };
  const Binary binary[] = {{Prim::add, f32({3, 4}), f32({3, 4})},
                           {Prim::sub, f32({3, 4}), f32({})},
                           {Prim::mul, f32({}), f32({2, 3})},
                           {Prim::div, f32({3, 4}), f32({3, 4}, 0.5, 2)},
                           {Prim::rem, f32({3, 4}), f32({3, 4}, 0.5, 2)},
                           {Prim::pow, f32({3, 4}, 0.1, 2), f32({3, 4})},
                           {Prim::max, f32({3, 4}), f32({3, 4})},
                           {Prim::min, i32({5}), i32({5})},
                           {Prim::atan2, f32({3, 4}), f32({3, 4})},
                           {Prim::nextafter, f32({4}), f32({4})},
                           {Prim::and_, i32({5}), i32({5})},
                           {Prim::or_, boolean({5}), boolean({5})},
                           {Prim::xor_, i32({2, 3}), i32({})},
                           {Prim::shift_left, i32({5}), i32({5}, 0, 31)},
                           {Prim::shift_right_logical, i32({5}), i32({5}, 0, 31)},
                           {Prim::shift_right_arithmetic, i32({5}), i32({5}, 0, 31)},
                           {Prim::eq, i32({3, 4}, 0, 2), i32({3, 4}, 0, 2)},
                           {Prim::ne, f32({3, 4}), f32({})},
                           {Prim::lt, f32({3, 4}), f32({3, 4})},
                           {Prim::le, i32({4}), i32({4})},
                           {Prim::gt, f32({}), f32({})},
                           {Prim::ge, f32({2, 3, 2}), f32({2, 3, 2})}};
  for (const Binary& b : binary) {
    cases.push_back({std::string(core::prim_name(b.prim)), b.prim, {b.x, b.y}, {}});
  }
  cases.push_back({"select_n", Prim::select_n, {boolean({3, 4}), f32({3, 4}), f32({3, 4})}, {}});
  cases.push_back(
      {"select_n by a scalar", Prim::select_n, {boolean({}), f32({2, 3}), f32({2, 3})}, {}});
  cases.push_back(
      {"select_n of three", Prim::select_n, {i32({4}, 0, 2), i32({4}), i32({4}), i32({4})}, {}});
  cases.push_back({"clamp", Prim::clamp, {f32({3, 4}, -2, 0), f32({3, 4}), f32({3, 4}, 0, 2)}, {}});
  cases.push_back(
      {"clamp by scalars", Prim::clamp, {f32({}, -1, 0), f32({3, 4}), f32({}, 0, 1)}, {}});
  cases.push_back({"fma", Prim::fma, {f32({3, 4}), f32({3, 4}), f32({3, 4})}, {}});
  cases.push_back({"fma by scalars", Prim::fma, {f32({}), f32({3, 4}), f32({})}, {}});
}

void add_structural(std::vector<Case>& cases) {
  cases.push_back({"broadcast_in_dim",
                   Prim::broadcast_in_dim,
                   {f32({3})},
                   {{"shape", Ints{2, 3, 4}}, {"broadcast_dimensions", Ints{1}}}});
  cases.push_back({"broadcast_in_dim of size 1",
                   Prim::broadcast_in_dim,
                   {f32({3, 1})},
                   {{"shape", Ints{3, 5}}, {"broadcast_dimensions", Ints{0, 1}}}});
  cases.push_back({"broadcast_in_dim of a scalar",
                   Prim::broadcast_in_dim,
                   {f32({})},
                   {{"shape", Ints{2, 3}}, {"broadcast_dimensions", Ints{}}}});
  cases.push_back({"reshape", Prim::reshape, {f32({2, 3, 4})}, {{"new_sizes", Ints{6, 4}}}});
  cases.push_back({"reshape split", Prim::reshape, {i32({6})}, {{"new_sizes", Ints{2, 3}}}});
  cases.push_back({"reshape of a scalar", Prim::reshape, {f32({})}, {{"new_sizes", Ints{1, 1}}}});
  cases.push_back(
      {"transpose", Prim::transpose, {f32({2, 3, 4})}, {{"permutation", Ints{2, 0, 1}}}});
  cases.push_back({"transpose 2-d", Prim::transpose, {i32({2, 3})}, {{"permutation", Ints{1, 0}}}});
  cases.push_back({"squeeze", Prim::squeeze, {f32({2, 1, 3, 1})}, {{"dimensions", Ints{1, 3}}}});
  cases.push_back({"squeeze to a scalar", Prim::squeeze, {f32({1})}, {{"dimensions", Ints{0}}}});
  cases.push_back({"expand_dims", Prim::expand_dims, {f32({2, 3})}, {{"dimensions", Ints{0, 2}}}});
  cases.push_back(
      {"expand_dims last", Prim::expand_dims, {f32({2, 3})}, {{"dimensions", Ints{2}}}});
  cases.push_back(
      {"expand_dims of a scalar", Prim::expand_dims, {i32({})}, {{"dimensions", Ints{0, 1}}}});
  cases.push_back(
      {"slice",
       Prim::slice,
       {f32({5, 6})},
       {{"start_indices", Ints{1, 0}}, {"limit_indices", Ints{4, 6}}, {"strides", Ints{}}}});
  cases.push_back(
      {"slice with strides",
       Prim::slice,
       {i32({5, 6})},
       {{"start_indices", Ints{0, 1}}, {"limit_indices", Ints{5, 6}}, {"strides", Ints{2, 3}}}});
  // Starts from below 0 to past the end: XLA clamps them so the window fits.
  cases.push_back({"dynamic_slice",
                   Prim::dynamic_slice,
                   {f32({5, 6}), i32({}, -2, 6), i32({}, -2, 6)},
                   {{"slice_sizes", Ints{2, 3}}}});
  cases.push_back({"dynamic_slice 1-d",
                   Prim::dynamic_slice,
                   {i32({9}), i32({}, -1, 9)},
                   {{"slice_sizes", Ints{3}}}});
  cases.push_back({"dynamic_slice whole and unit",
                   Prim::dynamic_slice,
                   {f32({4, 5}), i32({}, 0, 4), i32({}, -1, 5)},
                   {{"slice_sizes", Ints{4, 1}}}});
  cases.push_back({"dynamic_slice uint8 starts",
                   Prim::dynamic_slice,
                   {f32({7}), {{}, DType::uint8, 0, 255}},
                   {{"slice_sizes", Ints{2}}}});
  cases.push_back({"dynamic_update_slice",
                   Prim::dynamic_update_slice,
                   {f32({5, 6}), f32({2, 3}), i32({}, -2, 6), i32({}, -2, 6)},
                   {}});
  cases.push_back({"dynamic_update_slice 1-d",
                   Prim::dynamic_update_slice,
                   {i32({9}), i32({3}), i32({}, -1, 9)},
                   {}});
  cases.push_back({"dynamic_update_slice whole and unit",
                   Prim::dynamic_update_slice,
                   {f32({4, 5}), f32({4, 1}), i32({}, 0, 4), i32({}, -1, 5)},
                   {}});
  cases.push_back(
      {"concatenate", Prim::concatenate, {f32({2, 3}), f32({4, 3})}, {{"dimension", int64_t{0}}}});
  cases.push_back({"concatenate three",
                   Prim::concatenate,
                   {i32({2, 3}), i32({2, 1}), i32({2, 2})},
                   {{"dimension", int64_t{1}}}});
  cases.push_back(
      {"pad", Prim::pad, {f32({3, 4}), f32({})}, {{"padding_config", Ints{1, 2, 0, 0, 1, 1}}}});
  cases.push_back({"pad cropping",
                   Prim::pad,
                   {i32({3, 4}), i32({})},
                   {{"padding_config", Ints{-1, 2, 1, 2, -1, 0}}}});
  cases.push_back({"rev", Prim::rev, {f32({3, 4})}, {{"dimensions", Ints{1}}}});
  cases.push_back({"rev two", Prim::rev, {i32({3, 4, 2})}, {{"dimensions", Ints{0, 2}}}});
}

Params dot_params(Ints lc, Ints rc, Ints lb = {}, Ints rb = {}) {
  return {{"lhs_contracting_dimensions", lc},
          {"rhs_contracting_dimensions", rc},
          {"lhs_batch_dimensions", lb},
          {"rhs_batch_dimensions", rb}};
}

void add_contractions(std::vector<Case>& cases) {
  cases.push_back(
      {"dot_general matmul", Prim::dot_general, {f32({3, 4}), f32({4, 5})}, dot_params({1}, {0})});
  cases.push_back({"dot_general batched",
                   Prim::dot_general,
                   {f32({2, 3, 4}), f32({2, 4, 5})},
                   dot_params({2}, {1}, {0}, {0})});
  cases.push_back(
      {"dot_general vectors", Prim::dot_general, {f32({4}), f32({4})}, dot_params({0}, {0})});
  cases.push_back({"dot_general leading contraction",
                   Prim::dot_general,
                   {f32({4, 3}), f32({5, 4})},
                   dot_params({0}, {1})});
  cases.push_back(
      {"dot_general int", Prim::dot_general, {i32({2, 3}), i32({3})}, dot_params({1}, {0})});
  const Prim sums[] = {Prim::reduce_sum, Prim::reduce_prod, Prim::reduce_max, Prim::reduce_min};
  for (Prim p : sums) {
    const std::string name(core::prim_name(p));
    cases.push_back({name, p, {f32({3, 4}, 0.5, 1.5)}, {{"axes", Ints{1}}}});
    cases.push_back({name + " two axes", p, {f32({2, 3, 4}, 0.5, 1.5)}, {{"axes", Ints{0, 2}}}});
  }
  cases.push_back({"reduce_sum int", Prim::reduce_sum, {i32({3, 4})}, {{"axes", Ints{0}}}});
  cases.push_back({"reduce_and", Prim::reduce_and, {boolean({3, 4})}, {{"axes", Ints{1}}}});
  cases.push_back({"reduce_or", Prim::reduce_or, {boolean({3, 4})}, {{"axes", Ints{0, 1}}}});
  for (Prim p : {Prim::argmax, Prim::argmin}) {
    const std::string name(core::prim_name(p));
    cases.push_back({name, p, {f32({3, 4})}, {{"axes", Ints{1}}, {"index_dtype", DType::int32}}});
    cases.push_back({name + " ties",
                     p,
                     {i32({3, 4}, 0, 2)},
                     {{"axes", Ints{0}}, {"index_dtype", DType::int32}}});
  }
  cases.push_back(
      {"cumsum", Prim::cumsum, {f32({3, 4})}, {{"axis", int64_t{1}}, {"reverse", false}}});
  cases.push_back(
      {"cumsum reverse", Prim::cumsum, {i32({3, 4})}, {{"axis", int64_t{0}}, {"reverse", true}}});
  const Params sort_params{
      {"dimension", int64_t{1}}, {"is_stable", true}, {"num_keys", int64_t{1}}};
  cases.push_back({"sort", Prim::sort, {f32({3, 5})}, sort_params});
  cases.push_back({"sort by key",
                   Prim::sort,
                   {i32({4, 3}, 0, 2), f32({4, 3})},
                   {{"dimension", int64_t{0}}, {"is_stable", true}, {"num_keys", int64_t{1}}}});
  cases.push_back({"sort two keys",
                   Prim::sort,
                   {i32({6}, 0, 1), i32({6}, 0, 2), f32({6})},
                   {{"dimension", int64_t{0}}, {"is_stable", true}, {"num_keys", int64_t{2}}}});
}

void add_others(std::vector<Case>& cases) {
  const Mesh mesh = make_mesh({1}, {"a"});
  auto constraint = [](const Sharding& s) {
    return Params{{"sharding", std::make_shared<const Sharding>(s)}};
  };
  cases.push_back({"sharding_constraint",
                   Prim::sharding_constraint,
                   {f32({2, 3})},
                   constraint(NamedSharding(mesh, P("a", None)))});
  cases.push_back({"sharding_constraint positional",
                   Prim::sharding_constraint,
                   {f32({2, 3})},
                   constraint(PositionalSharding(devices()).reshape(1, 1))});
  const Operand key{{2}, DType::uint32, 0, 4294967295.0};
  for (bool partitionable : {true, false}) {
    cases.push_back(
        {partitionable ? "random_bits" : "random_bits original",
         Prim::random_bits,
         {key},
         {{"shape", Ints{3, 2}}, {"bit_width", int64_t{32}}, {"partitionable", partitionable}}});
  }
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  add_elementwise(cases);
  add_structural(cases);
  add_contractions(cases);
  add_others(cases);
  return cases;
}

// ---------------------------------------------------------------------------------------
// Placements of the batch dimension: one batch dimension per operand.

enum class Where { front, last, middle, none };

int place(Where w, size_t rank) {
  switch (w) {
    case Where::front:
      return 0;
    case Where::last:
      return int(rank);
    case Where::middle:
      return int(rank + 1) / 2;
    case Where::none:
      return kNotMapped;
  }
  return kNotMapped;
}

// All operands at the front, at the end or in the middle; each operand alone; and
// alternating front and end.
std::vector<std::vector<int>> placements(const Case& c) {
  const size_t n = c.operands.size();
  auto all = [&](auto where) {
    std::vector<int> dims;
    for (size_t i = 0; i < n; ++i) dims.push_back(place(where(i), c.operands[i].shape.size()));
    return dims;
  };
  std::set<std::vector<int>> out;
  out.insert(all([](size_t) { return Where::front; }));
  out.insert(all([](size_t) { return Where::last; }));
  out.insert(all([](size_t) { return Where::middle; }));
  out.insert(all([](size_t i) { return i % 2 ? Where::last : Where::front; }));
  for (size_t k = 0; n > 1 && k < n; ++k) {
    out.insert(all([&](size_t i) { return i == k ? Where::middle : Where::none; }));
    out.insert(all([&](size_t i) { return i == k ? Where::none : Where::last; }));
  }
  return {out.begin(), out.end()};
}

std::string dims_str(const std::vector<int>& dims) {
  std::string s;
  for (int d : dims) s += (s.empty() ? "" : ",") + (d == kNotMapped ? "-" : std::to_string(d));
  return "dims (" + s + ")";
}

// ---------------------------------------------------------------------------------------
// Running a row.

std::mt19937& rng() {
  static std::mt19937 gen(20240611);
  return gen;
}

Array draw(const Operand& o, const Shape& shape) {
  std::vector<double> v(size_t(shape_size(shape)));
  if (is_floating(o.dtype)) {
    std::uniform_real_distribution<double> u(o.lo, o.hi);
    for (double& e : v) e = u(rng());
  } else {
    std::uniform_int_distribution<int64_t> u(int64_t(o.lo), int64_t(o.hi));
    for (double& e : v) e = double(u(rng()));
  }
  return numpy::array(v, shape, o.dtype);
}

Shape with_batch(Shape s, int dim, int64_t size) {
  if (dim != kNotMapped) s.insert(s.begin() + dim, size);
  return s;
}

std::shared_ptr<const core::Program> one_equation(const Case& c) {
  std::vector<Aval> avals;
  for (const Operand& o : c.operands) avals.push_back(Aval{o.shape, o.dtype, false});
  core::ClosedProgram closed = core::trace_to_program(
      avals, [&](const std::vector<Array>& xs) { return core::bind(c.prim, xs, c.params); });
  EXPECT_TRUE(closed.consts.empty());
  return closed.program;
}

// Sums and products round differently when a batch changes the shape of their reduction
// tree (or, for dot_general, of the GEMM's blocking); everything else is exact, the vector
// loops of elementwise math included.
bool exact(Prim p) {
  return p != Prim::reduce_sum && p != Prim::reduce_prod && p != Prim::dot_general;
}

void expect_same(const Array& got, const Array& want, bool exact_floats, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  if (is_floating(want.dtype())) {
    const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
    const double tol = exact_floats ? 0 : (want.dtype() == DType::float64 ? 1e-13 : 1e-5);
    for (size_t i = 0; i < g.size(); ++i) {
      if (std::isnan(g[i]) && std::isnan(w[i])) continue;
      if (std::abs(g[i] - w[i]) <= tol * (1 + std::abs(w[i]))) continue;
      ADD_FAILURE() << what << ": element " << i << " is " << g[i] << ", the loop's " << w[i];
      return;  // the first difference is enough
    }
  } else {
    EXPECT_EQ(got.to_vector<int64_t>(), want.to_vector<int64_t>()) << what;
  }
}

// Compares the rule with the loop for one placement and batch size.
void check(const Case& c, const core::Program& program, const std::vector<int>& dims,
           int64_t size) {
  const std::string what = c.name + ", " + dims_str(dims) + ", batch of " + std::to_string(size);
  std::vector<Array> in;
  for (size_t i = 0; i < c.operands.size(); ++i) {
    in.push_back(draw(c.operands[i], with_batch(c.operands[i].shape, dims[i], size)));
  }
  const BatchAxis axis{size, ""};
  Batched got;
  Batched want;
  try {
    got = core::vmap_program(program, in, dims, axis);
    want = core::batch_by_loop(c.prim, in, dims, c.params, axis);
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": " << e.what();
    return;
  }
  ASSERT_EQ(got.outs.size(), want.outs.size()) << what;
  for (size_t k = 0; k < got.outs.size(); ++k) {
    const Array front = core::batch_first(got.outs[k], got.dims[k], size);
    expect_same(front, want.outs[k], exact(c.prim), what + ", result " + std::to_string(k));
  }
}

TEST(VmapBatching, EveryRuleAgreesWithTheLoop) {
  int checked = 0;
  for (const Case& c : all_cases()) {
    const auto program = one_equation(c);
    for (const std::vector<int>& dims : placements(c)) {
      for (int64_t size : {3, 1, 0}) {
        check(c, *program, dims, size);
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 500);
}

// vmap of vmap: the outer vmap batches the program the inner one made (other primitives,
// batch dimensions wherever the inner rules left them), checked against evaluating that
// program on each outer slice.
void check_nested(const Case& c, const std::vector<int>& inner_dims,
                  const std::vector<int>& outer_dims) {
  const int64_t inner = 2;
  const int64_t outer = 3;
  const std::string what =
      c.name + ", inner " + dims_str(inner_dims) + ", outer " + dims_str(outer_dims);
  const auto program = one_equation(c);
  std::vector<Aval> avals;
  std::vector<Array> in;
  for (size_t i = 0; i < c.operands.size(); ++i) {
    const Operand& o = c.operands[i];
    const Shape shape = with_batch(o.shape, inner_dims[i], inner);
    avals.push_back(Aval{shape, o.dtype, false});
    in.push_back(draw(o, with_batch(shape, outer_dims[i], outer)));
  }
  const BatchAxis inner_axis{inner, ""};
  const core::ClosedProgram batched =
      core::trace_to_program(avals, [&](const std::vector<Array>& xs) {
        Batched r = core::vmap_program(*program, xs, inner_dims, inner_axis);
        for (size_t k = 0; k < r.outs.size(); ++k) {
          r.outs[k] = core::batch_first(r.outs[k], r.dims[k], inner);
        }
        return r.outs;
      });
  std::vector<Array> args = batched.consts;
  std::vector<int> dims(batched.consts.size(), kNotMapped);
  args.insert(args.end(), in.begin(), in.end());
  dims.insert(dims.end(), outer_dims.begin(), outer_dims.end());
  Batched got;
  std::vector<std::vector<Array>> slices;
  try {
    got = core::vmap_program(*batched.program, args, dims, BatchAxis{outer, ""});
    for (int64_t b = 0; b < outer; ++b) {
      std::vector<Array> element = args;
      for (size_t i = 0; i < args.size(); ++i) {
        if (dims[i] == kNotMapped) continue;
        Array front = core::batch_first(args[i], dims[i], outer);
        element[i] = front[b];
      }
      // With nothing batched, vmap_program just evaluates the program.
      const std::vector<int> none(args.size(), kNotMapped);
      slices.push_back(core::vmap_program(*batched.program, element, none, inner_axis).outs);
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": " << e.what();
    return;
  }
  for (size_t k = 0; k < got.outs.size(); ++k) {
    std::vector<Array> parts;
    for (const auto& outs : slices) parts.push_back(outs[k]);
    expect_same(core::batch_first(got.outs[k], got.dims[k], outer), numpy::stack(parts),
                exact(c.prim), what + ", result " + std::to_string(k));
  }
}

TEST(VmapBatching, NestedVmapsAgreeWithEvaluatingEachSlice) {
  for (const Case& c : all_cases()) {
    std::vector<int> middle, last, first_only;
    for (size_t i = 0; i < c.operands.size(); ++i) {
      const size_t rank = c.operands[i].shape.size();
      middle.push_back(place(Where::middle, rank));
      last.push_back(place(Where::last, rank + 1));
      first_only.push_back(i == 0 ? 0 : kNotMapped);
    }
    check_nested(c, middle, last);
    check_nested(c, middle, first_only);
  }
}

// ---------------------------------------------------------------------------------------
// The rule, not the loop, batched each row: traced, the vmapped program applies the
// primitive at most once and concatenates nothing (the loop stacks its slices with a
// concatenate).

int count(const core::Program& p, Prim prim) {
  return int(std::count_if(p.eqns.begin(), p.eqns.end(),
                           [&](const core::Eqn& e) { return e.prim == prim; }));
}

core::ClosedProgram trace_vmapped(const core::Program& program, const std::vector<Aval>& avals,
                                  const std::vector<int>& dims, int64_t size) {
  return core::trace_to_program(avals, [&](const std::vector<Array>& xs) {
    return core::vmap_program(program, xs, dims, BatchAxis{size, ""}).outs;
  });
}

TEST(VmapBatching, RulesAreUsedInsteadOfTheLoop) {
  const int64_t size = 4;
  for (const Case& c : all_cases()) {
    const auto program = one_equation(c);
    for (const std::vector<int>& dims : placements(c)) {
      std::vector<Aval> avals;
      for (size_t i = 0; i < c.operands.size(); ++i) {
        const Operand& o = c.operands[i];
        avals.push_back(Aval{with_batch(o.shape, dims[i], size), o.dtype, false});
      }
      const core::ClosedProgram traced = trace_vmapped(*program, avals, dims, size);
      const core::Program& p = *traced.program;
      const std::string what = c.name + ", " + dims_str(dims) + ":\n" + core::to_string(p);
      EXPECT_EQ(core::verify(p), std::nullopt) << what;
      // Two rules apply their primitive twice: pad with batched padding values (the
      // operand and a mask of where it lands), dynamic_update_slice with batched starts
      // (the update and its mask, placed by the unbatched starts).
      const bool twice = c.prim == Prim::pad || c.prim == Prim::dynamic_update_slice;
      EXPECT_LE(count(p, c.prim), twice ? 2 : 1) << what;
      EXPECT_EQ(count(p, Prim::concatenate), c.prim == Prim::concatenate ? 1 : 0) << what;
    }
  }
}

// ---------------------------------------------------------------------------------------
// Where results land: rules leave batch dimensions where they fall instead of moving them.

core::Program traced_program(const Case& c, const std::vector<int>& dims, int64_t size,
                             std::vector<int>* out_dims) {
  const auto program = one_equation(c);
  std::vector<Aval> avals;
  for (size_t i = 0; i < c.operands.size(); ++i) {
    avals.push_back(
        Aval{with_batch(c.operands[i].shape, dims[i], size), c.operands[i].dtype, false});
  }
  core::ClosedProgram traced = core::trace_to_program(avals, [&](const std::vector<Array>& xs) {
    Batched r = core::vmap_program(*program, xs, dims, BatchAxis{size, ""});
    *out_dims = r.dims;
    return r.outs;
  });
  return *traced.program;
}

TEST(VmapBatching, ElementwiseKeepsAgreeingBatchDimensions) {
  std::vector<int> out;
  const Case add{"add", Prim::add, {f32({3, 4}), f32({3, 4})}, {}};
  core::Program p = traced_program(add, {1, 1}, 5, &out);
  EXPECT_EQ(out, std::vector<int>{1});
  EXPECT_EQ(p.eqns.size(), 1u) << core::to_string(p);
  // A scalar that is not batched still broadcasts in the primitive itself.
  const Case scaled{"mul", Prim::mul, {f32({3, 4}), f32({})}, {}};
  p = traced_program(scaled, {2, kNotMapped}, 5, &out);
  EXPECT_EQ(out, std::vector<int>{2});
  EXPECT_EQ(p.eqns.size(), 1u) << core::to_string(p);
  // Disagreeing batch dimensions meet at the first operand's.
  p = traced_program(add, {0, 2}, 5, &out);
  EXPECT_EQ(out, std::vector<int>{0});
  EXPECT_EQ(count(p, Prim::transpose), 1) << core::to_string(p);
}

TEST(VmapBatching, DotGeneralNeedsNoTranspose) {
  const Case matmul{"dot", Prim::dot_general, {f32({3, 4}), f32({4, 5})}, dot_params({1}, {0})};
  std::vector<int> out;
  core::Program p = traced_program(matmul, {2, 1}, 6, &out);
  EXPECT_EQ(out, std::vector<int>{0});  // a dot batch dimension
  EXPECT_EQ(p.eqns.size(), 1u) << core::to_string(p);
  p = traced_program(matmul, {kNotMapped, 0}, 6, &out);
  EXPECT_EQ(out, std::vector<int>{1});  // a free dimension of the right operand
  EXPECT_EQ(p.eqns.size(), 1u) << core::to_string(p);
  p = traced_program(matmul, {1, kNotMapped}, 6, &out);
  EXPECT_EQ(out, std::vector<int>{1});  // after the left operand's free dimension
  EXPECT_EQ(p.eqns.size(), 1u) << core::to_string(p);
}

TEST(VmapBatching, StructuralRulesNeedNoTranspose) {
  const Case cases[] = {
      {"broadcast_in_dim",
       Prim::broadcast_in_dim,
       {f32({3, 4})},
       {{"shape", Ints{3, 2, 4}}, {"broadcast_dimensions", Ints{0, 2}}}},
      {"expand_dims", Prim::expand_dims, {f32({2, 3})}, {{"dimensions", Ints{0, 2}}}},
      {"squeeze", Prim::squeeze, {f32({2, 1, 3})}, {{"dimensions", Ints{1}}}},
      {"reduce_max", Prim::reduce_max, {f32({2, 3, 4})}, {{"axes", Ints{0, 2}}}},
      {"cumsum", Prim::cumsum, {f32({3, 4})}, {{"axis", int64_t{1}}, {"reverse", false}}}};
  for (const Case& c : cases) {
    for (int d = 0; d <= int(c.operands[0].shape.size()); ++d) {
      std::vector<int> out;
      core::Program p = traced_program(c, {d}, 5, &out);
      EXPECT_EQ(p.eqns.size(), 1u) << c.name << " at " << d << ":\n" << core::to_string(p);
    }
  }
}

TEST(VmapBatching, ShardingConstraintLeavesTheBatchUnsharded) {
  const Mesh mesh = make_mesh({1}, {"a"});
  const Case c{"sharding_constraint",
               Prim::sharding_constraint,
               {f32({2, 3})},
               {{"sharding", std::make_shared<const Sharding>(NamedSharding(mesh, P(None, "a")))}}};
  std::vector<int> out;
  core::Program p = traced_program(c, {1}, 4, &out);
  ASSERT_EQ(p.eqns.size(), 1u);
  const auto& s = p.eqns[0].params.get<std::shared_ptr<const Sharding>>("sharding");
  ASSERT_TRUE(s->as_named().has_value());
  EXPECT_EQ(s->as_named()->spec(), P(None, None, "a"));
  EXPECT_EQ(out, std::vector<int>{1});
}

}  // namespace
}  // namespace parax
