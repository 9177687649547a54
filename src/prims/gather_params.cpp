// gather's and the scatters' params as JAX prints them (their print_params and
// parse_params rules): the dimension numbers as one record, gather's fill_value written
// out, a scatter's update_jaxpr (the scalar combiner) and update_consts.
#include <cmath>
#include <limits>

#include "core/rules.h"
#include "prims/gather_util.h"

namespace parax::prims {
namespace {

using Printed = std::vector<std::pair<std::string, core::ParamValue>>;

std::string record(const std::string& name, const std::vector<std::string>& fields,
                   const std::vector<std::vector<int64_t>>& values) {
  std::string out = name + "(";
  for (size_t i = 0; i < fields.size(); ++i) {
    out += (i ? ", " : "") + fields[i] + "=" + shape_str(values[i]);
  }
  return out + ")";
}

const std::vector<std::string> kGatherFields = {"offset_dims", "collapsed_slice_dims",
                                                "start_index_map", "operand_batching_dims",
                                                "start_indices_batching_dims"};
const std::vector<std::string> kScatterFields = {
    "update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims",
    "operand_batching_dims", "scatter_indices_batching_dims"};

// Reads `Name(field=(i, ...), ...)` into `params`, the fields in `fields`' order.
void read_record(const core::ParamValue& value, const std::string& name,
                 const std::vector<std::string>& fields, Params& params) {
  const std::string* text = std::get_if<std::string>(&value);
  auto bad = [&](const std::string& what) -> ValueError {
    return ValueError("dimension_numbers: expected " + name + "(" + fields[0] + "=(...), ...); " +
                      what);
  };
  if (text == nullptr) throw bad("got a value of another kind");
  size_t pos = 0;
  auto skip = [&] {
    while (pos < text->size() && std::isspace(static_cast<unsigned char>((*text)[pos]))) ++pos;
  };
  auto expect = [&](const std::string& s) {
    skip();
    if (text->compare(pos, s.size(), s) != 0) {
      throw bad("expected '" + s + "' at column " + std::to_string(pos) + " of " + *text);
    }
    pos += s.size();
  };
  expect(name + "(");
  for (size_t f = 0; f < fields.size(); ++f) {
    if (f) expect(",");
    expect(fields[f]);
    expect("=(");
    std::vector<int64_t> ints;
    skip();
    while (pos < text->size() && (*text)[pos] != ')') {
      size_t used = 0;
      try {
        ints.push_back(std::stoll(text->substr(pos), &used));
      } catch (const std::exception&) {
        throw bad("expected an integer at column " + std::to_string(pos) + " of " + *text);
      }
      pos += used;
      skip();
      if (pos < text->size() && (*text)[pos] == ',') ++pos;
      skip();
    }
    expect(")");
    params.set(fields[f], std::move(ints));
  }
  expect(")");
}

// JAX's lax.gather writes out the fill value of mode FILL_OR_DROP: NaN, the lowest signed
// or highest unsigned integer, True.
core::ParamValue fill_value_of(const Aval& operand, const Params& params) {
  if (gather_mode(params) != GatherScatterMode::FILL_OR_DROP) return std::string("None");
  const DType t = operand.dtype;
  if (params.has("fill_value")) {
    const double v = params.get<double>("fill_value");
    if (t == DType::bool_) return v != 0;
    if (is_integer(t) && std::isfinite(v)) return int64_t(v);
    return v;
  }
  if (t == DType::bool_) return true;
  if (is_floating(t)) return std::numeric_limits<double>::quiet_NaN();
  if (t == DType::uint64) return std::to_string(std::numeric_limits<uint64_t>::max());
  if (is_unsigned_integer(t)) return int64_t((uint64_t{1} << (8 * dtype_itemsize(t))) - 1);
  return -(int64_t{1} << (8 * dtype_itemsize(t) - 1));
}

// The scalar combiner JAX's scatters hold: `{ lambda ; a:f32[] b:f32[]. let c:f32[] = add
// a b in (c,) }`.
std::shared_ptr<const core::Program> combiner(core::Prim prim, DType dtype) {
  auto p = std::make_shared<core::Program>();
  const Aval scalar{{}, dtype, false};
  const int a = p->new_var(scalar);
  const int b = p->new_var(scalar);
  const int c = p->new_var(scalar);
  p->invars = {a, b};
  p->eqns.push_back(core::Eqn{prim, {core::Atom::of(a), core::Atom::of(b)}, {c}, {}});
  p->outvars = {core::Atom::of(c)};
  return p;
}

}  // namespace

std::vector<std::pair<std::string, core::ParamValue>> gather_print_params(std::span<const Aval> in,
                                                                          const Params& params) {
  const GatherDimensionNumbers d = gather_dnums(params);
  const Aval operand = in.empty() ? Aval{} : in[0];
  return Printed{
      {"dimension_numbers", record("GatherDimensionNumbers", kGatherFields,
                                   {d.offset_dims, d.collapsed_slice_dims, d.start_index_map,
                                    d.operand_batching_dims, d.start_indices_batching_dims})},
      {"fill_value", fill_value_of(operand, params)},
      {"indices_are_sorted", params.get<bool>("indices_are_sorted")},
      {"mode", params.get<std::string>("mode")},
      {"slice_sizes", param_ints(params, "slice_sizes")},
      {"unique_indices", params.get<bool>("unique_indices")},
  };
}

Params gather_parse_params(const Params& printed) {
  Params out;
  for (const auto& [name, value] : printed.items()) {
    if (name == "dimension_numbers") {
      read_record(value, "GatherDimensionNumbers", kGatherFields, out);
    } else if (name == "fill_value") {
      // None (another mode) and uint64's highest value (which a double cannot hold) are
      // the kernel's default.
      if (const bool* b = std::get_if<bool>(&value)) out.set(name, *b ? 1.0 : 0.0);
      if (const int64_t* i = std::get_if<int64_t>(&value)) out.set(name, double(*i));
      if (const double* x = std::get_if<double>(&value)) out.set(name, *x);
    } else {
      out.set(name, value);
    }
  }
  return out;
}

std::vector<std::pair<std::string, core::ParamValue>> scatter_print_params(core::Prim prim,
                                                                           std::span<const Aval> in,
                                                                           const Params& params) {
  const ScatterDimensionNumbers d = scatter_dnums(params);
  core::ParamValue update_jaxpr = std::string("None");
  const DType dtype = in.empty() ? DType::float32 : in[0].dtype;
  switch (prim) {
    case core::Prim::scatter_add:
      update_jaxpr = combiner(core::Prim::add, dtype);
      break;
    case core::Prim::scatter_mul:
      update_jaxpr = combiner(core::Prim::mul, dtype);
      break;
    case core::Prim::scatter_min:
      update_jaxpr = combiner(core::Prim::min, dtype);
      break;
    case core::Prim::scatter_max:
      update_jaxpr = combiner(core::Prim::max, dtype);
      break;
    default:
      break;
  }
  return Printed{
      {"dimension_numbers",
       record("ScatterDimensionNumbers", kScatterFields,
              {d.update_window_dims, d.inserted_window_dims, d.scatter_dims_to_operand_dims,
               d.operand_batching_dims, d.scatter_indices_batching_dims})},
      {"indices_are_sorted", params.get<bool>("indices_are_sorted")},
      {"mode", params.get<std::string>("mode")},
      {"unique_indices", params.get<bool>("unique_indices")},
      {"update_consts", std::vector<int64_t>{}},
      {"update_jaxpr", std::move(update_jaxpr)},
  };
}

Params scatter_parse_params(const Params& printed) {
  Params out;
  for (const auto& [name, value] : printed.items()) {
    if (name == "dimension_numbers") {
      read_record(value, "ScatterDimensionNumbers", kScatterFields, out);
    } else if (name != "update_consts" && name != "update_jaxpr") {
      // The combiner is the primitive's own (scatter-add's is add).
      out.set(name, value);
    }
  }
  return out;
}

}  // namespace parax::prims
