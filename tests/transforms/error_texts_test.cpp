// The errors of vmap, pmap, shard_map and jit in JAX's wording: in_axes and specs named by
// key path, pjit's sharding errors, the arguments shown when there are no arrays, and what
// inside a jit asked for incompatible devices.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "parax/parax.h"
#include "support/errors.h"

namespace parax {
namespace {

namespace np = numpy;

// ---- error texts: JAX's wording, with key paths ----

namespace error_texts {

Array id(const Array& x) { return x; }

const char* const kPmapNote =
    "\n\nThe 'full pytree' here is the tuple of arguments passed positionally to the pmapped "
    "function, and the value of `in_axes` must be a tree prefix of that tuple. But it was not "
    "a prefix.\n\nCheck that the value of the `in_axes` argument to `pmap` is a tree prefix of "
    "the tuple of arguments passed positionally to the pmapped function.";

TEST(ErrorTexts, VmapInAxesPrintNestedListsAsLists) {
  EXPECT_THROW_MSG(vmap(id, {.in_axes = {{0}}})(np::ones({2})), ValueError,
                   "vmap in_axes specification must be a tree prefix of the corresponding value, "
                   "got specification ([0],) for value tree PyTreeDef((*,)).");
  EXPECT_THROW_MSG(vmap(id, {.in_axes = {0, 1}})(np::ones({2})), ValueError,
                   "vmap in_axes must be an int, None, or a tuple of entries corresponding to "
                   "the positional arguments passed to the function, but got len(in_axes)=2, "
                   "len(args)=1");
}

TEST(ErrorTexts, VmapAxisSizeErrorsNameLeavesByKeyPath) {
  using Tree = std::pair<Array, std::map<std::string, Array>>;
  auto f = [](const Tree& t) { return t.first; };
  const Tree t{np::ones({2}), {{"w", np::ones({3})}}};
  EXPECT_THROW_MSG(
      vmap(f)(t), ValueError,
      "vmap got inconsistent sizes for array axes to be mapped:\n"
      "  * one axis had size 2: axis 0 of argument args[0][0] of type float32[2];\n"
      "  * one axis had size 3: axis 0 of argument args[0][1]['w'] of type float32[3]");
}

TEST(ErrorTexts, PmapInAxesPrefixErrorHasKeyPath) {
  EXPECT_THROW_MSG(pmap(id, {.in_axes = {0, 1}})(np::ones({8})), ValueError,
                   std::string("pytree structure error: different lengths of tuple at key path\n"
                               "    pmap in_axes\n"
                               "At that key path, the prefix pytree pmap in_axes has a subtree "
                               "of type tuple of length 2, but the full pytree has a subtree of "
                               "the same type but of length 1.") +
                       kPmapNote);
  auto pair = [](const Array& a) { return std::make_pair(a, a); };
  EXPECT_THROW_MSG(pmap(pair, {.out_axes = {0, 0, 0}})(np::ones({8})), ValueError,
                   "pytree structure error: different lengths of tuple at key path\n"
                   "    pmap out_axes\n"
                   "At that key path, the prefix pytree pmap out_axes has a subtree of type "
                   "tuple of length 3, but the full pytree has a subtree of the same type but of "
                   "length 2.\n\nThe full pytree is the output of the pmapped function. Ensure "
                   "that the `out_axes` argument to `pmap` is a pytree prefix of the pmapped "
                   "function's output.");
}

TEST(ErrorTexts, ShardMapPrefixErrorsHaveKeyPaths) {
  Mesh mesh = make_mesh({4, 2}, {"x", "y"});
  EXPECT_THROW_MSG(shard_map(id, mesh, {P("x"), P("x")}, P())(np::ones({8})), ValueError,
                   "pytree structure error: different lengths of tuple at key path\n"
                   "    shard_map in_specs\n"
                   "At that key path, the prefix pytree shard_map in_specs has a subtree of type "
                   "tuple of length 2, but the full pytree has a subtree of the same type but of "
                   "length 1.");
  auto first = [](const Array& a, const Array&) { return a; };
  EXPECT_THROW_MSG(
      shard_map(first, mesh, {{P("x"), P("x")}, P()}, P())(np::ones({8}), np::ones({8})),
      ValueError,
      "pytree structure error: different types at key path\n"
      "    shard_map in_specs[0]\n"
      "At that key path, the prefix pytree shard_map in_specs has a subtree of "
      "type\n    <class 'list'>\n"
      "but at the same key path the full pytree has a subtree of different type\n"
      "    <class 'parax::Array'>.");
  auto pair = [](const Array& a) { return std::make_pair(a, a); };
  EXPECT_THROW_MSG(shard_map(pair, mesh, P("x"), {P("x"), P("x"), P()})(np::ones({8})), ValueError,
                   "pytree structure error: different lengths of tuple at key path\n"
                   "    shard_map out_specs\n"
                   "At that key path, the prefix pytree shard_map out_specs has a subtree of "
                   "type tuple of length 3, but the full pytree has a subtree of the same type "
                   "but of length 2.");
}

std::string rank_error(const std::string& label, const std::string& spec, const std::string& value,
                       int rank, int length) {
  const std::string r = std::to_string(rank), l = std::to_string(length);
  return "shard_map applied to the function 'f' was given an in_specs entry which is too long "
         "to be compatible with the corresponding input value from the function:\n\n" +
         label + " is " + spec + " which has length " + l + ", but " + value + ", which has rank " +
         r + " (and " + r + " < " + l +
         ")\n\nEntries in in_specs must be "
         "of length no greater than the number of axes in the corresponding input value.\n\n"
         "Either revise the spec to be shorter, or modify 'f' so that its inputs have "
         "sufficient rank.";
}

TEST(ErrorTexts, ShardMapRankErrorsNameSpecAndValueByKeyPath) {
  Mesh mesh = make_mesh({4, 2}, {"x", "y"});
  EXPECT_THROW_MSG(
      shard_map(id, mesh, {P("x")}, P())(np::ones({})), ValueError,
      rank_error("in_specs[0]", "PartitionSpec('x',)", "args[0] has shape float32[]", 0, 1) +
          "\n\nFor scalar values (rank 0), consider using an in_specs entry of `P()`, where "
          "`P = jax.sharding.PartitionSpec`.");
  using Pair = std::pair<Array, Array>;
  auto first = [](const Pair& p) { return p.first; };
  const Pair two{np::ones({8}), np::ones({8})};
  EXPECT_THROW_MSG(shard_map(first, mesh, {{P("x"), P("x", "y")}}, P("x"))(two), ValueError,
                   rank_error("in_specs[0][1]", "PartitionSpec('x', 'y')",
                              "args[0][1] has shape float32[8]", 1, 2));
}

TEST(ErrorTexts, ShardMapReplicationErrorNamesTheSpecByKeyPath) {
  Mesh mesh = make_mesh({4, 2}, {"i", "j"});
  auto pair = [](const Array& b) { return std::make_pair(b * 2.0f, b); };
  // One spec for both results: JAX's label is out_specs (its key path is empty).
  try {
    shard_map(pair, mesh, P("i", "j"), P("i"))(np::ones({8, 4}));
    ADD_FAILURE() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("\n\nout_specs is PartitionSpec('i',) which implies "
                                         "that the corresponding output value is replicated "
                                         "across mesh axis 'j'"),
              std::string::npos)
        << e.what();
  }
}

TEST(ErrorTexts, JitShardingErrorsArePjits) {
  Mesh mesh = make_mesh({4, 2}, {"x", "y"});
  const NamedSharding s2(mesh, P("x", "y")), s1(mesh, P("x"));
  const std::string s2_str =
      "NamedSharding(mesh=Mesh('x': 4, 'y': 2), spec=PartitionSpec('x', "
      "'y'))";
  const std::string s1_str = "NamedSharding(mesh=Mesh('x': 4, 'y': 2), spec=PartitionSpec('x',))";
  EXPECT_THROW_MSG(jit(id, {.in_shardings = {s2}})(np::ones({8})), ValueError,
                   "One of pjit arguments with pytree key path args[0] is incompatible with its "
                   "sharding annotation " +
                       s2_str + ": Sharding " + s2_str +
                       " is only valid for values of rank at least 2, but was applied to a "
                       "value of rank 1.");
  auto second = [](const Array&, const std::vector<Array>& b) { return b[1]; };
  EXPECT_THROW_MSG(
      jit(second, {.in_shardings = {std::nullopt, s1}})(
          np::ones({}), std::vector<Array>{np::ones({8}), np::ones({})}),
      ValueError,
      "One of pjit arguments with pytree key path args[1][1] is incompatible with its sharding "
      "annotation " +
          s1_str + ": Sharding " + s1_str +
          " is only valid for values of rank at "
          "least 1, but was applied to a value of rank 0. For scalars the PartitionSpec should be "
          "P()");
  auto pair = [](const Array& a) { return std::make_pair(a, a); };
  EXPECT_THROW_MSG(jit(pair, {.out_shardings = {std::nullopt, s2}})(np::ones({8})), ValueError,
                   "One of pjit outputs with pytree key path [1] is incompatible with its "
                   "sharding annotation " +
                       s2_str + ": Sharding " + s2_str +
                       " is only valid for values of rank at least 2, but was applied to a "
                       "value of rank 1.");
  EXPECT_THROW_MSG(jit(pair, {.out_shardings = {std::nullopt, s1}})(np::ones({6})), ValueError,
                   "One of pjit outputs with pytree key path [1] was given the sharding of " +
                       s1_str +
                       ", which implies that the global size of its dimension 0 "
                       "should be divisible by 4, but it is equal to 6 (full shape: (6,))");
  EXPECT_THROW_MSG(jit(id, {.out_shardings = {s1}})(np::ones({6})), ValueError,
                   "One of pjit outputs was given the sharding of " + s1_str +
                       ", which implies that the global size of its dimension 0 should be "
                       "divisible by 4, but it is equal to 6 (full shape: (6,))");
  const NamedSharding r(mesh, P());
  EXPECT_THROW_MSG(jit(id, {.in_shardings = {r, r}})(np::ones({2})), ValueError,
                   "pjit in_shardings specification must be a tree prefix of the positional "
                   "arguments tuple passed to the `pjit`-decorated function. In particular, "
                   "pjit in_shardings must either be a None, a PartitionSpec, or a tuple of "
                   "length equal to the number of positional arguments. But pjit in_shardings "
                   "is the wrong length: got a tuple or list of length 2 for an args tuple of "
                   "length 1.");
  EXPECT_THROW_MSG(jit(pair, {.out_shardings = {r, r, r}})(np::ones({2})), ValueError,
                   "pytree structure error: different lengths of tuple at key path\n"
                   "    pjit out_shardings\n"
                   "At that key path, the prefix pytree pjit out_shardings has a subtree of type "
                   "tuple of length 3, but the full pytree has a subtree of the same type but of "
                   "length 2.");
  EXPECT_THROW_MSG(
      jit([&](const Array& x) { return lax::with_sharding_constraint(x, s2); })(np::ones({8})),
      ValueError,
      "One of with_sharding_constraint arguments is incompatible with its sharding "
      "annotation " +
          s2_str + ": Sharding " + s2_str +
          " is only valid for values "
          "of rank at least 2, but was applied to a value of rank 1.");
}

TEST(ErrorTexts, JitPadsAnArgumentItsShardingDoesNotDivide) {
  // A deliberate extension (README's decisions): JAX raises "One of pjit arguments ... should
  // be divisible by 4"; parax pads the argument to even shards inside the program.
  Mesh mesh = make_mesh({4, 2}, {"x", "y"});
  const NamedSharding s1(mesh, P("x"));
  const Array y =
      jit([](const Array& x) { return x * 2; }, {.in_shardings = {s1}})(np::arange(6.0f));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 2, 4, 6, 8, 10}));
}

}  // namespace error_texts

// ---- the texts JAX 0.4.35 gives where it names an argument or what asked for devices ----

TEST(ErrorTexts, VmapAndPmapOfNoArraysShowTheArguments) {
  auto none = [] { return np::ones({2}); };
  const std::string need =
      " wrapped function must be passed at least one argument containing an array, got empty ";
  EXPECT_THROW_MSG(vmap(none)(), ValueError, "vmap" + need + "*args=() and **kwargs={}");
  EXPECT_THROW_MSG(pmap(none)(), ValueError, "pmap" + need + "*args=() and **kwargs={}");
  using Dict = std::map<std::string, Array>;
  auto empties = [](const std::vector<Array>&, const Dict&) { return np::ones({2}); };
  EXPECT_THROW_MSG(vmap(empties)(std::vector<Array>{}, Dict{}), ValueError,
                   "vmap" + need + "*args=([], {}) and **kwargs={}");
  auto list = [](const std::vector<Array>&) { return np::ones({2}); };
  EXPECT_THROW_MSG(pmap(list)(std::vector<Array>{}), ValueError,
                   "pmap" + need + "*args=([],) and **kwargs={}");
  // With axis_size there is nothing to infer: JAX maps the function with no arrays.
  EXPECT_EQ(vmap(none, {.axis_size = 3})().shape(), (Shape{3, 2}));
}

TEST(ErrorTexts, IncompatibleDevicesNameWhatInsideJitAskedForThem) {
  const std::vector<Device> all = devices();
  const NamedSharding upper(Mesh({all.begin() + 4, all.end()}, "x"), P("x"));
  const Array x = device_put(np::ones({8}), all[0]);
  const std::string got =
      "Received incompatible devices for jitted computation. Got argument args[0] of f with "
      "shape float32[8] and device ids [0] on platform CPU and ";
  const std::string on_upper = " with device ids [4, 5, 6, 7] on platform CPU";
  auto constrained = [&](const Array& a) { return lax::with_sharding_constraint(a * 2, upper); };
  EXPECT_THROW_MSG(jit(constrained)(x), ValueError,
                   got + "sharding_constraint inside jit" + on_upper);
  // A constraint inside a nested jit is still the constraint's; the nested jit's own
  // in_shardings and out_shardings are that jit's (JAX's pjit).
  auto nested_constraint = [&](const Array& a) { return jit(constrained)(a); };
  EXPECT_THROW_MSG(jit(nested_constraint)(x), ValueError,
                   got + "sharding_constraint inside jit" + on_upper);
  auto doubled = [](const Array& a) { return a * 2; };
  auto in_upper = jit(doubled, {.in_shardings = {upper}});
  EXPECT_THROW_MSG(jit([&](const Array& a) { return in_upper(a); })(x), ValueError,
                   got + "pjit inside jit" + on_upper);
  auto out_upper = jit(doubled, {.out_shardings = {upper}});
  EXPECT_THROW_MSG(jit([&](const Array& a) { return out_upper(a); })(x), ValueError,
                   got + "pjit inside jit" + on_upper);
  auto mapped = shard_map(doubled, Mesh({all.begin() + 4, all.end()}, "i"), P("i"), P("i"));
  EXPECT_THROW_MSG(jit([&](const Array& a) { return mapped(a); })(x), ValueError,
                   got + "shard_map inside jit" + on_upper);
  // The jit's own in_shardings lay its arguments out; its out_shardings are explicit.
  auto both =
      jit(doubled, {.in_shardings = {SingleDeviceSharding(all[0])}, .out_shardings = {upper}});
  EXPECT_THROW_MSG(both(np::ones({8})), ValueError, got + "explicit output sharding" + on_upper);
}

}  // namespace
}  // namespace parax
