// Structural primitives (data movement): the values leg of the sweep (each kernel against
// the naive index map of its rows in prims/prim_table.cpp, over many dtypes); iota, index
// dtypes and weak types; sharding rules, localized params and error messages as tables.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>

#include "base/dtype_dispatch.h"
#include "core/rules.h"
#include "parax/errors.h"
#include "prims/prim_table.h"
#include "support/kernel_harness.h"

namespace parax {
namespace {

using core::Aval;
using core::Params;
using core::Prim;
using testing::HostBuffer;
using testing::run_kernel;
using Ints = std::vector<int64_t>;

int64_t flat(const Shape& shape, const Ints& index) {
  int64_t f = 0;
  for (size_t d = 0; d < shape.size(); ++d) f = f * shape[d] + index[d];
  return f;
}

// Calls f(index) for every multi-index of `shape` in row-major order.
void for_each_index(const Shape& shape, const std::function<void(const Ints&)>& f) {
  if (shape_size(shape) == 0) return;
  Ints index(shape.size(), 0);
  while (true) {
    f(index);
    size_t d = shape.size();
    while (d > 0 && ++index[d - 1] == shape[d - 1]) index[--d] = 0;
    if (d == 0) return;
  }
}

// Operand i holds 1 + k + 1000 i at flat index k, reduced so the dtype stores it exactly.
HostBuffer pattern(DType dtype, const Shape& shape, int64_t operand) {
  HostBuffer b{Aval{shape, dtype, false}, {}};
  const int64_t modulus = dtype == DType::bool_        ? 2
                          : dtype_itemsize(dtype) == 1 ? 101
                          : dtype_itemsize(dtype) == 2 ? 251
                                                       : int64_t(1) << 20;
  b.bytes.resize(b.aval.nbytes());
  dispatch_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    for (int64_t k = 0; k < b.aval.size(); ++k) {
      const T v = scalar_cast<T>((1 + k + 1000 * operand) % modulus);
      std::memcpy(b.bytes.data() + k * int64_t(sizeof(T)), &v, sizeof(T));
    }
  });
  return b;
}

Params P(std::initializer_list<std::pair<std::string, core::ParamValue>> items) {
  return Params(items);
}

const DType kDTypes[] = {DType::float32,  DType::int8,  DType::bool_, DType::float64,
                         DType::bfloat16, DType::int64, DType::uint16};

// The values leg of the sweep for data movement: each row of prims/prim_table.cpp with an
// index map, over several dtypes, bit for bit.
TEST(StructuralKernel, MatchesIndexReference) {
  int checked = 0;
  for (const prim_table::Case& c : prim_table::cases()) {
    if (!c.has(prim_table::kValues) || !c.ref.index) continue;
    for (DType dtype : kDTypes) {
      SCOPED_TRACE(c.name + " " + std::string(dtype_name(dtype)));
      // Array operands take the dtype; operands with given values are int32 start indices.
      std::vector<HostBuffer> in;
      for (size_t i = 0; i < c.operands.size(); ++i) {
        const prim_table::Operand& o = c.operands[i];
        in.push_back(o.values.empty() ? pattern(dtype, o.shape, int64_t(i))
                                      : HostBuffer::of<int32_t>({}, {int32_t(o.values[0])}));
      }
      const std::vector<HostBuffer> out = run_kernel(c.prim, in, c.params);
      ASSERT_EQ(out.size(), 1u);
      const Shape& out_shape = c.ref.out_shape;
      ASSERT_EQ(out[0].aval, (Aval{out_shape, dtype, false}));
      const size_t item = size_t(dtype_itemsize(dtype));
      std::vector<uint8_t> expected(out[0].bytes.size());
      for_each_index(out_shape, [&](const Ints& o) {
        const prim_table::Source s = c.ref.index(o);
        std::memcpy(expected.data() + size_t(flat(out_shape, o)) * item,
                    in[s.input].bytes.data() + size_t(s.index) * item, item);
      });
      ASSERT_EQ(out[0].bytes, expected);
      ++checked;
    }
  }
  EXPECT_GT(checked, 300);
}

TEST(StructuralKernel, DynamicSliceReadsEveryIndexDtype) {
  const HostBuffer x = pattern(DType::float32, {4, 6}, 0);
  for (DType t : {DType::int8, DType::uint8, DType::int64, DType::uint64, DType::uint32}) {
    SCOPED_TRACE(dtype_name(t));
    HostBuffer i0{Aval{{}, t, false}, std::vector<uint8_t>(size_t(dtype_itemsize(t)), 0)};
    HostBuffer i1 = i0;
    i0.bytes[0] = 1;
    std::fill(i1.bytes.begin(), i1.bytes.end(), 0xFF);  // -1 signed, huge unsigned
    const auto out = run_kernel(Prim::dynamic_slice, {x, i0, i1}, P({{"slice_sizes", Ints{2, 2}}}));
    const int64_t col = is_unsigned_integer(t) ? 4 : 0;
    const std::vector<float> v = out[0].values<float>();
    EXPECT_EQ(
        v, (std::vector<float>{float(7 + col), float(8 + col), float(13 + col), float(14 + col)}));
  }
}

TEST(StructuralShape, KeepsWeakType) {
  const Aval weak{{2, 3}, DType::float32, true};
  const Aval strong_scalar{{}, DType::float32, false};
  auto weak_of = [](Prim p, std::vector<Aval> in, const Params& params) {
    return core::abstract_eval(p, in, params)[0].weak_type;
  };
  EXPECT_TRUE(weak_of(Prim::transpose, {weak}, P({{"permutation", Ints{1, 0}}})));
  EXPECT_TRUE(weak_of(Prim::reshape, {weak}, P({{"new_sizes", Ints{6}}})));
  // pad and concatenate follow JAX's standard rule: weak only if every operand is.
  EXPECT_FALSE(
      weak_of(Prim::pad, {weak, strong_scalar}, P({{"padding_config", Ints{0, 0, 0, 1, 1, 0}}})));
  EXPECT_FALSE(weak_of(Prim::concatenate, {weak, Aval{{2, 3}, DType::float32, false}},
                       P({{"dimension", 0}})));
}

// iota: values as doubles, per dtype.
double iota_value(const HostBuffer& b, int64_t k) {
  return dispatch_dtype(b.aval.dtype, [&](auto zero) {
    using T = decltype(zero);
    T v;
    std::memcpy(&v, b.bytes.data() + k * int64_t(sizeof(T)), sizeof(T));
    return scalar_cast<double>(v);
  });
}

TEST(StructuralKernel, Iota) {
  struct Case {
    Shape shape;
    int64_t dimension;
  };
  const Case cases[] = {{{5}, 0},    {{2, 3, 4}, 1},  {{2, 3, 4}, 2}, {{0, 3}, 1},
                        {{3, 0}, 0}, {{120, 400}, 0}, {{3, 20000}, 1}};
  for (DType dtype : {DType::float32, DType::int8, DType::int32, DType::bfloat16, DType::float64,
                      DType::uint16}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " dim " + std::to_string(c.dimension));
      const Params params{{"dtype", dtype}, {"shape", c.shape}, {"dimension", c.dimension}};
      const auto out = run_kernel(Prim::iota, {}, params);
      ASSERT_EQ(out[0].aval, (Aval{c.shape, dtype, false}));
      for_each_index(c.shape, [&](const Ints& o) {
        // The index converted to the dtype, as the kernel must do.
        const double want = dispatch_dtype(dtype, [&](auto zero) {
          return scalar_cast<double>(scalar_cast<decltype(zero)>(o[size_t(c.dimension)]));
        });
        ASSERT_EQ(iota_value(out[0], flat(c.shape, o)), want);
      });
    }
  }
}

TEST(StructuralKernel, IotaShardOffset) {
  const Params global{{"dtype", DType::int32}, {"shape", Ints{8, 3}}, {"dimension", 0}};
  const std::vector<Aval> local_out = {Aval{{2, 3}, DType::int32, false}};
  const std::vector<Ints> out_dim_axes = {{0, 1}, {}};
  const Params local =
      core::rules(Prim::iota).localize(global, core::LocalizeInfo{{}, local_out, out_dim_axes});
  EXPECT_EQ(local.get<Ints>("shape"), (Ints{2, 3}));
  EXPECT_EQ(local.get<Ints>("offset_axes"), (Ints{0, 1}));
  // Device (1, 0) on a 2x2 mesh is shard 2 of dimension 0: rows 4 and 5.
  const Ints coords = {1, 0};
  const Ints axis_sizes = {2, 2};
  const core::DeviceContext device{coords, axis_sizes};
  std::vector<int32_t> out(7, -1);
  void* outputs[] = {out.data()};
  core::rules(Prim::iota).kernel(core::KernelCall{{}, {}, outputs, local_out, local, device});
  EXPECT_EQ(out, (std::vector<int32_t>{4, 4, 4, 5, 5, 5, -1}));
  // Replicated along the iota dimension: no offset.
  const std::vector<Ints> replicated = {{}, {1}};
  const Params plain =
      core::rules(Prim::iota).localize(global, core::LocalizeInfo{{}, local_out, replicated});
  EXPECT_FALSE(plain.has("offset_axes"));
}

TEST(StructuralLocalize, ShapeParams) {
  struct Case {
    Prim prim;
    Params global;
    Shape local_out;
    std::string name;
    Ints expected;
  };
  const Case cases[] = {
      {Prim::broadcast_in_dim,
       P({{"shape", Ints{8, 3}}, {"broadcast_dimensions", Ints{1}}}),
       {4, 3},
       "shape",
       {4, 3}},
      {Prim::reshape, P({{"new_sizes", Ints{8, 6}}}), {2, 6}, "new_sizes", {2, 6}},
      {Prim::dynamic_slice, P({{"slice_sizes", Ints{8, 2}}}), {4, 2}, "slice_sizes", {4, 2}},
      {Prim::slice,
       P({{"start_indices", Ints{0, 1}}, {"limit_indices", Ints{8, 5}}, {"strides", Ints{}}}),
       {4, 4},
       "limit_indices",
       {4, 5}},
      {Prim::slice,
       P({{"start_indices", Ints{0, 1}}, {"limit_indices", Ints{8, 7}}, {"strides", Ints{1, 2}}}),
       {2, 3},
       "limit_indices",
       {2, 7}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::vector<Aval> out = {Aval{c.local_out, DType::float32, false}};
    const std::vector<Ints> axes(c.local_out.size());
    const Params local = core::rules(c.prim).localize(c.global, core::LocalizeInfo{{}, out, axes});
    EXPECT_EQ(local.get<Ints>(c.name), c.expected);
  }
}

Aval f32(Shape s) { return Aval{std::move(s), DType::float32, false}; }
Aval i32() { return Aval{{}, DType::int32, false}; }

TEST(StructuralShardingRule, FactorMaps) {
  struct Case {
    Prim prim;
    std::vector<Aval> in;
    Params params;
    std::string rule;
    Ints factor_sizes;
  };
  const Case cases[] = {
      {Prim::iota,
       {},
       P({{"dtype", DType::int32}, {"shape", Ints{2, 3}}, {"dimension", 1}}),
       "() -> ([i, j])",
       {2, 3}},
      {Prim::broadcast_in_dim,
       {f32({3, 1})},
       P({{"shape", Ints{2, 3, 5}}, {"broadcast_dimensions", Ints{1, 2}}}),
       "([j, _]) -> ([i, j, k])",
       {2, 3, 5}},
      {Prim::reshape, {f32({4, 6})}, P({{"new_sizes", Ints{24}}}), "([i, _]) -> ([i])", {4}},
      {Prim::reshape, {f32({24})}, P({{"new_sizes", Ints{4, 6}}}), "([i]) -> ([i, _])", {4}},
      {Prim::reshape,
       {f32({2, 3, 4})},
       P({{"new_sizes", Ints{6, 4}}}),
       "([i, _, j]) -> ([i, j])",
       {2, 4}},
      {Prim::reshape, {f32({4, 6})}, P({{"new_sizes", Ints{2, 12}}}), "([i, _]) -> ([i, _])", {2}},
      {Prim::reshape, {f32({6, 4})}, P({{"new_sizes", Ints{4, 6}}}), "([_, _]) -> ([_, _])", {}},
      {Prim::reshape,
       {f32({1, 8, 1, 3})},
       P({{"new_sizes", Ints{8, 3, 1}}}),
       "([_, i, _, j]) -> ([i, j, _])",
       {8, 3}},
      {Prim::reshape, {f32({0, 4})}, P({{"new_sizes", Ints{4, 0}}}), "([_, _]) -> ([_, _])", {}},
      {Prim::transpose,
       {f32({2, 3, 4})},
       P({{"permutation", Ints{2, 0, 1}}}),
       "([i, j, k]) -> ([k, i, j])",
       {2, 3, 4}},
      {Prim::squeeze,
       {f32({1, 3, 1})},
       P({{"dimensions", Ints{0, 2}}}),
       "([_, i, _]) -> ([i])",
       {3}},
      {Prim::expand_dims,
       {f32({3, 4})},
       P({{"dimensions", Ints{1}}}),
       "([i, j]) -> ([i, _, j])",
       {3, 4}},
      {Prim::slice,
       {f32({4, 6, 5})},
       P({{"start_indices", Ints{0, 1, 0}},
          {"limit_indices", Ints{4, 6, 5}},
          {"strides", Ints{1, 1, 2}}}),
       "([i, _, _]) -> ([i, _, _])",
       {4}},
      {Prim::dynamic_slice,
       {f32({4, 5}), i32(), i32()},
       P({{"slice_sizes", Ints{4, 2}}}),
       "([i, _], [], []) -> ([i, _])",
       {4}},
      {Prim::dynamic_update_slice,
       {f32({4, 5}), f32({2, 5}), i32(), i32()},
       {},
       "([_, i], [_, i], [], []) -> ([_, i])",
       {5}},
      {Prim::concatenate,
       {f32({2, 3}), f32({2, 1})},
       P({{"dimension", 1}}),
       "([i, _], [i, _]) -> ([i, _])",
       {2}},
      {Prim::pad,
       {f32({2, 3}), f32({})},
       P({{"padding_config", Ints{0, 0, 0, 1, 0, 0}}}),
       "([i, _], []) -> ([i, _])",
       {2}},
      // A reversed dimension keeps its layout: rev's lower_local trades mirror blocks.
      {Prim::rev, {f32({2, 3})}, P({{"dimensions", Ints{1}}}), "([i, j]) -> ([i, j])", {2, 3}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.rule);
    const std::vector<Aval> out = core::abstract_eval(c.prim, c.in, c.params);
    const core::ShardingRule rule = core::sharding_rule(c.prim, c.in, out, c.params);
    EXPECT_EQ(rule.str(), c.rule);
    EXPECT_EQ(rule.factor_sizes, c.factor_sizes);
    EXPECT_EQ(rule.reduction, core::ReduceOp::none);
  }
}

enum class Kind { type, value };

TEST(StructuralErrors, MessagesAndKinds) {
  struct Case {
    Prim prim;
    std::vector<Aval> in;
    Params params;
    Kind kind;
    std::string message;
  };
  const Aval bf16_scalar{{}, DType::bfloat16, false};
  const Case cases[] = {
      {Prim::iota,
       {},
       P({{"dtype", DType::int32}, {"shape", Ints{3}}, {"dimension", 1}}),
       Kind::value,
       "iota dimension must be between 0 and len(shape), got dimension=1 for "
       "shape=(3,)"},
      {Prim::iota,
       {},
       P({{"dtype", DType::int32}, {"shape", Ints{-3}}, {"dimension", 0}}),
       Kind::type,
       "iota shape must have every element be nonnegative, got (-3,)."},
      {Prim::iota,
       {},
       P({{"dtype", DType::bool_}, {"shape", Ints{3}}, {"dimension", 0}}),
       Kind::type,
       "iota does not accept dtype bool. Accepted dtypes are subtypes of "
       "signedinteger, unsignedinteger, floating."},
      {Prim::broadcast_in_dim,
       {f32({3})},
       P({{"shape", Ints{2, 4}}, {"broadcast_dimensions", Ints{1}}}),
       Kind::type,
       "broadcast_in_dim operand dimension sizes must either be 1, or be equal to their "
       "corresponding dimensions in the target broadcast shape; got operand of shape (3,), "
       "target broadcast shape (2, 4), broadcast_dimensions (1,)"},
      {Prim::broadcast_in_dim,
       {f32({3})},
       P({{"shape", Ints{3}}, {"broadcast_dimensions", Ints{0, 1}}}),
       Kind::type,
       "broadcast_in_dim broadcast_dimensions must have length equal to operand ndim; got "
       "broadcast_dimensions (0, 1) for operand ndim 1."},
      {Prim::broadcast_in_dim,
       {f32({3})},
       P({{"shape", Ints{3}}, {"broadcast_dimensions", Ints{2}}}),
       Kind::type,
       "broadcast_in_dim broadcast_dimensions must be a subset of output dimensions, got (2,) "
       "for operand ndim 1 and shape (3,)."},
      {Prim::broadcast_in_dim,
       {f32({3, 3})},
       P({{"shape", Ints{3, 3}}, {"broadcast_dimensions", Ints{1, 0}}}),
       Kind::type,
       "broadcast_in_dim broadcast_dimensions must be strictly increasing; got "
       "broadcast_dimensions (1, 0)"},
      {Prim::reshape,
       {f32({2, 3})},
       P({{"new_sizes", Ints{5}}}),
       Kind::type,
       "reshape total size must be unchanged, got new_sizes (5,) (of total size 5) for shape "
       "(2, 3) (of total size 6)."},
      {Prim::reshape,
       {f32({2, 3})},
       P({{"new_sizes", Ints{-1, 6}}}),
       Kind::type,
       "reshape new_sizes must all be positive, got (-1, 6)."},
      {Prim::transpose,
       {f32({2, 3})},
       P({{"permutation", Ints{1, 1}}}),
       Kind::type,
       "transpose permutation isn't a permutation of operand dimensions, got permutation "
       "(1, 1) for operand shape (2, 3)."},
      {Prim::squeeze,
       {f32({2, 3})},
       P({{"dimensions", Ints{1}}}),
       Kind::value,
       "cannot select an axis to squeeze out which has size not equal to one, got "
       "shape=(2, 3) and dimensions=(1,)"},
      {Prim::squeeze,
       {f32({1})},
       P({{"dimensions", Ints{1}}}),
       Kind::value,
       "dimensions outside range [0, ndim): (1,)"},
      {Prim::squeeze,
       {f32({1})},
       P({{"dimensions", Ints{0, 0}}}),
       Kind::value,
       "dimensions are not unique: (0, 0)"},
      {Prim::expand_dims,
       {f32({2})},
       P({{"dimensions", Ints{2}}}),
       Kind::value,
       "axis 2 is out of bounds for array of dimension 2"},
      {Prim::expand_dims,
       {f32({2})},
       P({{"dimensions", Ints{0, 0}}}),
       Kind::value,
       "repeated axis in lax.expand_dims: (0, 0)"},
      {Prim::slice,
       {f32({4})},
       P({{"start_indices", Ints{1}}, {"limit_indices", Ints{5}}}),
       Kind::type,
       "slice limit_indices must be less than or equal to operand shape, got "
       "limit_indices (5,) for operand shape (4,)."},
      {Prim::slice,
       {f32({4})},
       P({{"start_indices", Ints{3}}, {"limit_indices", Ints{2}}}),
       Kind::type,
       "slice limit_indices must be greater than or equal to start_indices, got "
       "start_indices (3,) and limit_indices (2,)."},
      {Prim::slice,
       {f32({4, 4})},
       P({{"start_indices", Ints{0}}, {"limit_indices", Ints{2}}}),
       Kind::type,
       "slice start_indices must have length equal to the number of dimensions of "
       "the operand, got indices (0,) for operand shape (4, 4)."},
      {Prim::slice,
       {f32({4})},
       P({{"start_indices", Ints{0}}, {"limit_indices", Ints{2}}, {"strides", Ints{0}}}),
       Kind::type,
       "slice strides must be positive, got (0,)"},
      {Prim::slice,
       {f32({4})},
       P({{"start_indices", Ints{-1}}, {"limit_indices", Ints{2}}}),
       Kind::type,
       "slice start_indices must have every element be nonnegative, got (-1,)."},
      {Prim::dynamic_slice,
       {f32({4}), i32()},
       P({{"slice_sizes", Ints{5}}}),
       Kind::type,
       "slice slice_sizes must be less than or equal to operand shape, got slice_sizes (5,) "
       "for operand shape (4,)."},
      {Prim::dynamic_slice,
       {f32({4, 2}), i32()},
       P({{"slice_sizes", Ints{1, 1}}}),
       Kind::type,
       "dynamic_slice start_indices must have length equal to the number of dimensions of the "
       "operand, got indices [int32[]] for operand shape (4, 2)."},
      {Prim::dynamic_slice,
       {f32({4}), f32({})},
       P({{"slice_sizes", Ints{1}}}),
       Kind::type,
       "index arguments to dynamic_slice must be integers of the same type, got: float32"},
      {Prim::dynamic_slice,
       {f32({4}), Aval{{1}, DType::int32, false}},
       P({{"slice_sizes", Ints{1}}}),
       Kind::type,
       "dynamic_slice start_indices must be scalars, got indices [int32[1]]"},
      {Prim::dynamic_update_slice,
       {f32({4}), Aval{{2}, DType::int32, false}, i32()},
       {},
       Kind::type,
       "lax.dynamic_update_slice requires arguments to have the same dtypes, got "
       "float32, int32."},
      {Prim::dynamic_update_slice,
       {f32({4}), f32({5}), i32()},
       {},
       Kind::type,
       "dynamic_update_slice update shape must be smaller than operand shape, got update shape "
       "(5,) for operand shape (4,)."},
      {Prim::dynamic_update_slice,
       {f32({4}), f32({2, 1}), i32()},
       {},
       Kind::type,
       "dynamic_update_slice update must have the same rank as operand, got update shape "
       "(2, 1) for operand shape (4,)."},
      {Prim::concatenate,
       {f32({2, 3}), f32({3, 3})},
       P({{"dimension", 1}}),
       Kind::type,
       "Cannot concatenate arrays with shapes that differ in dimensions other than the one "
       "being concatenated: concatenating along dimension 1 for shapes (2, 3), (3, 3)."},
      {Prim::concatenate,
       {f32({2}), f32({2, 1})},
       P({{"dimension", 0}}),
       Kind::type,
       "Cannot concatenate arrays with different numbers of dimensions: got (2,), (2, 1)."},
      {Prim::concatenate,
       {f32({2})},
       P({{"dimension", 1}}),
       Kind::type,
       "concatenate dimension out of bounds: dimension 1 for shapes (2,)."},
      {Prim::concatenate,
       {f32({2}), bf16_scalar},
       P({{"dimension", 0}}),
       Kind::type,
       "Cannot concatenate arrays with different numbers of dimensions: got (2,), ()."},
      {Prim::concatenate,
       {f32({2}), Aval{{1}, DType::bfloat16, false}},
       P({{"dimension", 0}}),
       Kind::type,
       "lax.concatenate requires arguments to have the same dtypes, got float32, "
       "bfloat16."},
      {Prim::pad,
       {f32({3}), f32({})},
       P({{"padding_config", Ints{-2, -2, 0}}}),
       Kind::value,
       "Dimension size after padding is not at least 0, got result shape (-1,), for "
       "padding_config ((-2, -2, 0),) and operand shape (3,)"},
      {Prim::pad,
       {f32({3}), f32({})},
       P({{"padding_config", Ints{0, 0, -1}}}),
       Kind::value,
       "interior padding in padding_config must be nonnegative, got padding_config "
       "((0, 0, -1),)"},
      {Prim::pad,
       {f32({3, 2}), f32({})},
       P({{"padding_config", Ints{0, 0, 0}}}),
       Kind::value,
       "length of padding_config must equal the number of axes of operand, got padding_config "
       "((0, 0, 0),) for operand shape (3, 2)"},
      {Prim::pad,
       {f32({3}), f32({1})},
       P({{"padding_config", Ints{0, 0, 0}}}),
       Kind::value,
       "padding_value must be a scalar; got np.shape(padding_value)=(1,)"},
      {Prim::pad,
       {f32({3}), bf16_scalar},
       P({{"padding_config", Ints{0, 0, 0}}}),
       Kind::type,
       "pad operand and padding_value must be same dtype: got float32 and bfloat16."},
      {Prim::rev,
       {f32({3})},
       P({{"dimensions", Ints{1}}}),
       Kind::type,
       "rev dimensions must all be less than operand ndim, got dimensions (1,) for operand "
       "ndim 1."},
      {Prim::rev,
       {f32({3})},
       P({{"dimensions", Ints{0, 0}}}),
       Kind::type,
       "rev dimensions must be unique, got (0, 0)."},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message);
    try {
      core::abstract_eval(c.prim, c.in, c.params);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.what(), c.message);
      const bool is_type = dynamic_cast<const TypeError*>(&e) != nullptr;
      const bool is_value = dynamic_cast<const ValueError*>(&e) != nullptr;
      EXPECT_TRUE(c.kind == Kind::type ? is_type : is_value);
    }
  }
}

}  // namespace
}  // namespace parax
