#include "core/parse.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>

#include "core/rules.h"
#include "parax/errors.h"

namespace parax::core {
namespace {

enum class Kind { floating, integer, boolean };

// A program under construction, with its variables by name (each program its own scope).
struct Scope {
  Program p;
  std::map<std::string, int, std::less<>> vars;
};

// Words cover names, numbers (`-1`, `1e-05`) and printed primitive names (`all-gather`).
bool is_word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' ||
         c == '+' || c == '<' || c == '>';
}

bool is_identifier(std::string_view w) {
  if (w.empty() || std::isdigit(static_cast<unsigned char>(w[0]))) return false;
  return std::all_of(w.begin(), w.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::optional<int64_t> to_int(std::string_view w) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(w.data(), w.data() + w.size(), v);
  if (ec != std::errc() || end != w.data() + w.size()) return std::nullopt;
  return v;
}

// Python's float reprs: a '.' or an exponent, or nan / inf / -inf.
std::optional<double> to_float(std::string_view w) {
  if (w == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (w == "inf") return std::numeric_limits<double>::infinity();
  if (w == "-inf") return -std::numeric_limits<double>::infinity();
  if (w.find_first_of(".eE") == std::string_view::npos) return std::nullopt;
  const std::string s(w);
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return v;
}

std::optional<DType> dtype_named(std::string_view w, bool short_name) {
  for (int i = 0; i < kNumDTypes; ++i) {
    const DType t = DType(i);
    if ((short_name ? dtype_short_name(t) : dtype_name(t)) == w) return t;
  }
  return std::nullopt;
}

// Literals print by kind only: `1.0`, `1`, `True`.
Kind kind_of(DType t) {
  if (is_floating(t)) return Kind::floating;
  return t == DType::bool_ ? Kind::boolean : Kind::integer;
}

class Parser {
 public:
  // `api` names the caller in errors.
  Parser(std::string_view text, const Mesh* mesh, std::string_view api)
      : text_(text), mesh_(mesh), api_(api) {}

  Program parse() {
    Program p = program();
    skip_ws();
    if (pos_ != text_.size()) fail("the end of the text after the program's '}'");
    return p;
  }

  PartitionSpec parse_spec() {
    const size_t at = here();
    const std::string_view w = word();
    if (w != "P" && w != "PartitionSpec") fail_at(at, "P(...) or PartitionSpec(...)");
    PartitionSpec spec = spec_body();
    skip_ws();
    if (pos_ != text_.size()) fail("the end of the text after the partition spec");
    return spec;
  }

 private:
  [[noreturn]] void fail(const std::string& expected) { fail_at(pos_, expected); }
  [[noreturn]] void fail_at(size_t at, const std::string& expected) const;
  [[noreturn]] void fail_msg(size_t at, const std::string& msg) const;
  std::string where(size_t at) const;

  void skip_ws() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  // Returns the position of the next token.
  size_t here() {
    skip_ws();
    return pos_;
  }
  char peek() {
    skip_ws();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  bool accept(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  void expect(char c, const std::string& what) {
    if (!accept(c)) fail(what);
  }
  std::string_view word() {
    skip_ws();
    const size_t start = pos_;
    while (pos_ < text_.size() && is_word_char(text_[pos_])) ++pos_;
    return text_.substr(start, pos_ - start);
  }
  void expect_word(std::string_view w) {
    const size_t at = here();
    if (word() != w) fail_at(at, "'" + std::string(w) + "'");
  }
  bool at_closing_in();
  int64_t integer(const std::string& what);
  std::string quoted();

  struct TypedVar {
    size_t at;
    std::string name;
    Aval aval;
  };
  Program program();
  void binders(Scope& s, char end, std::vector<int>& vars);
  TypedVar typed_var(const std::string& what);
  int define(Scope& s, const TypedVar& v) const;
  Aval aval();
  void equation(Scope& s);
  Params params();
  static void type_literals(const Program& p, Eqn& eqn);
  std::optional<Atom> atom(Scope& s, size_t at, std::string_view w);
  std::vector<Atom> out_atoms(Scope& s);

  ParamValue param_value();
  std::string record(size_t at);
  std::vector<int64_t> tuple();
  Mesh mesh();
  PartitionSpec spec_body();
  SpecEntry spec_entry();
  ParamValue named_sharding(size_t at);
  ParamValue short_sharding(size_t at);
  ParamValue single_device_sharding(size_t at);

  std::string_view text_;
  size_t pos_ = 0;
  const Mesh* mesh_;
  std::string_view api_;
};

std::string Parser::where(size_t at) const {
  size_t line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < at && i < text_.size(); ++i) {
    if (text_[i] != '\n') continue;
    ++line;
    line_start = i + 1;
  }
  return "[" + std::string(api_) + "] line " + std::to_string(line) + ", column " +
         std::to_string(at - line_start + 1) + ": ";
}

void Parser::fail_at(size_t at, const std::string& expected) const {
  std::string got = "the end of the text";
  if (at < text_.size()) {
    size_t end = at;
    while (end < text_.size() && is_word_char(text_[end])) ++end;
    got = "'" + std::string(text_.substr(at, std::max(end, at + 1) - at)) + "'";
  }
  throw ValueError(where(at) + "expected " + expected + "; got " + got);
}

void Parser::fail_msg(size_t at, const std::string& msg) const {
  throw ValueError(where(at) + msg);
}

// `in (` ends the equations; a variable may also be named `in` (the 222nd printed name).
bool Parser::at_closing_in() {
  skip_ws();
  if (text_.substr(pos_, 2) != "in") return false;
  size_t q = pos_ + 2;
  if (q < text_.size() && is_word_char(text_[q])) return false;
  while (q < text_.size() && std::isspace(static_cast<unsigned char>(text_[q]))) ++q;
  return q < text_.size() && text_[q] == '(';
}

int64_t Parser::integer(const std::string& what) {
  const size_t at = here();
  auto v = to_int(word());
  if (!v) fail_at(at, what);
  return *v;
}

std::string Parser::quoted() {
  expect('\'', "a quoted mesh axis name such as 'a'");
  const size_t start = pos_;
  while (pos_ < text_.size() && text_[pos_] != '\'' && text_[pos_] != '\n') ++pos_;
  if (pos_ == text_.size() || text_[pos_] != '\'') fail("a closing quote");
  return std::string(text_.substr(start, pos_++ - start));
}

Program Parser::program() {
  Scope s;
  expect('{', "'{' starting a program");
  expect_word("lambda");
  binders(s, ';', s.p.constvars);
  binders(s, '.', s.p.invars);
  expect_word("let");
  while (!at_closing_in()) {
    equation(s);
    accept(';');  // equations on one line are separated by `; `
  }
  expect_word("in");
  s.p.outvars = out_atoms(s);
  expect('}', "'}' closing the program");
  return std::move(s.p);
}

// Reads and defines typed variables up to (and past) `end`.
void Parser::binders(Scope& s, char end, std::vector<int>& vars) {
  const std::string what = std::string("a typed variable such as a:f32[8] or '") + end + "'";
  while (peek() != end) {
    vars.push_back(define(s, typed_var(what)));
  }
  ++pos_;
}

Parser::TypedVar Parser::typed_var(const std::string& what) {
  const size_t at = here();
  const std::string_view name = word();
  if (pos_ >= text_.size() || text_[pos_] != ':') fail_at(at, what);
  if (!is_identifier(name)) fail_at(at, "a variable name such as a or ba");
  ++pos_;
  return TypedVar{at, std::string(name), aval()};
}

// Variables are numbered in order of definition, as the printer names them.
int Parser::define(Scope& s, const TypedVar& v) const {
  if (v.name == "_") return s.p.new_var(v.aval);  // a result nothing reads (JAX's `_`)
  auto [it, added] = s.vars.emplace(v.name, int(s.p.avals.size()));
  if (!added) fail_msg(v.at, "variable '" + v.name + "' is defined twice");
  return s.p.new_var(v.aval);
}

Aval Parser::aval() {
  const size_t at = here();
  const auto dtype = dtype_named(word(), /*short_name=*/true);
  if (!dtype) fail_at(at, "a dtype such as f32, i32, bool");
  if (pos_ >= text_.size() || text_[pos_] != '[') fail("'[' starting the shape");
  ++pos_;
  Shape shape;
  if (!accept(']')) {
    do {
      const size_t dim_at = here();
      shape.push_back(integer("a dimension size"));
      if (shape.back() < 0) fail_at(dim_at, "a nonnegative dimension size");
    } while (accept(','));
    expect(']', "',' or ']' in the shape");
  }
  return Aval{std::move(shape), *dtype, false};
}

void Parser::equation(Scope& s) {
  std::vector<TypedVar> outs;
  while (peek() != '=') outs.push_back(typed_var("a typed result such as b:f32[8], '=' or 'in ('"));
  ++pos_;
  const size_t prim_at = here();
  const std::string_view name = word();
  std::optional<Prim> prim;
#define PARAX_PRIM_MATCH(id, printed, traits) \
  if (name == printed) prim = Prim::id;
  PARAX_PRIMITIVES(PARAX_PRIM_MATCH)
#undef PARAX_PRIM_MATCH
  if (!prim) fail_at(prim_at, "a primitive name");
  Eqn eqn{*prim, {}, {}, accept('[') ? params() : Params{}};
  if (const ParseParamsFn read = rules(*prim).parse_params) {
    try {
      eqn.params = read(eqn.params);
    } catch (const Error& e) {
      fail_msg(prim_at, e.what());
    }
  }
  for (;;) {
    const char c = peek();
    if (c == '\0' || c == '}' || c == '=' || c == ';' || at_closing_in()) break;
    const size_t at = pos_;
    const std::string_view w = word();
    if (pos_ < text_.size() && text_[pos_] == ':') {
      pos_ = at;  // the next equation's first result
      break;
    }
    auto a = atom(s, at, w);
    if (!a) fail_at(at, "an operand (a variable or a literal), the next equation or 'in ('");
    eqn.inputs.push_back(*a);
  }
  // Results are defined only now, so an equation cannot read its own results.
  for (const TypedVar& v : outs) eqn.outputs.push_back(define(s, v));
  type_literals(s.p, eqn);
  s.p.eqns.push_back(std::move(eqn));
}

// The params after '[', up to and past ']'.
Params Parser::params() {
  Params params;
  while (!accept(']')) {
    const size_t at = here();
    const std::string name(word());
    if (name.empty()) fail("a param name or ']'");
    if (params.has(name)) fail_msg(at, "param '" + name + "' appears twice");
    expect('=', "'=' after the param name");
    params.set(name, param_value());
  }
  return params;
}

// Gives each literal the type of an operand (else a result) of its kind: JAX's promotion
// has made the operands of an elementwise equation one type, and literals print untyped.
void Parser::type_literals(const Program& p, Eqn& eqn) {
  for (Atom& lit : eqn.inputs) {
    if (!lit.is_literal()) continue;
    const Kind kind = kind_of(lit.literal->aval.dtype);
    std::optional<Aval> like;
    for (const Atom& in : eqn.inputs) {
      if (!like && !in.is_literal() && kind_of(p.avals[size_t(in.var)].dtype) == kind) {
        like = p.avals[size_t(in.var)];
      }
    }
    for (int v : eqn.outputs) {
      if (!like && kind_of(p.avals[size_t(v)].dtype) == kind) like = p.avals[size_t(v)];
    }
    if (like) lit.literal->aval = Aval{{}, like->dtype, like->weak_type};
  }
}

// Reads a variable or a literal from the word `w` at `at`; a literal gets the default
// type of its kind: float32 or int32 (weak, as Python scalars are), or bool.
std::optional<Atom> Parser::atom(Scope& s, size_t at, std::string_view w) {
  // A defined variable wins over a literal spelled the same (`nan`, `inf`).
  if (auto it = s.vars.find(w); it != s.vars.end()) return Atom::of(it->second);
  if (w == "True" || w == "False") {
    return Atom::of(Literal{Aval{{}, DType::bool_, false}, w == "True" ? 1.0 : 0.0});
  }
  if (auto i = to_int(w)) return Atom::of(Literal{Aval{{}, DType::int32, true}, double(*i)});
  if (auto x = to_float(w)) return Atom::of(Literal{Aval{{}, DType::float32, true}, *x});
  if (is_identifier(w)) {
    fail_msg(at, "variable '" + std::string(w) + "' is used before it is defined");
  }
  return std::nullopt;
}

std::vector<Atom> Parser::out_atoms(Scope& s) {
  expect('(', "'(' starting the outputs");
  std::vector<Atom> outs;
  if (accept(')')) return outs;
  for (;;) {
    const size_t at = here();
    auto a = atom(s, at, word());
    if (!a) fail_at(at, "an output (a variable or a literal)");
    outs.push_back(*a);
    if (accept(')')) break;
    expect(',', "',' or ')' in the outputs");
    if (accept(')')) break;
  }
  return outs;
}

ParamValue Parser::param_value() {
  const char c = peek();
  if (c == '(') {
    // `({ lambda ... } { lambda ... })`: cond's branches.
    size_t next = pos_ + 1;
    while (next < text_.size() && std::isspace(static_cast<unsigned char>(text_[next]))) ++next;
    if (next < text_.size() && text_[next] == '{') {
      expect('(', "'('");
      ProgramList programs;
      while (!accept(')')) programs.push_back(std::make_shared<const Program>(program()));
      return programs;
    }
    return tuple();
  }
  if (c == '{') return std::make_shared<const Program>(program());
  const size_t at = pos_;
  const std::string_view w = word();
  if (w.empty()) fail("a param value");
  if (pos_ < text_.size() && text_[pos_] == '(') {
    if (w == "NamedSharding") return named_sharding(at);
    if (w == "P") return short_sharding(at);
    if (w == "SingleDeviceSharding") return single_device_sharding(at);
    return record(at);
  }
  if (w == "True" || w == "False") return w == "True";
  if (auto i = to_int(w)) return *i;
  if (auto x = to_float(w)) return *x;
  if (auto t = dtype_named(w, /*short_name=*/false)) return *t;
  return std::string(w);
}

// A record such as `GatherDimensionNumbers(offset_dims=(1,), ...)`, from its name at `at`:
// its text, which the primitive's parse_params reads.
std::string Parser::record(size_t at) {
  int depth = 0;
  do {
    if (pos_ >= text_.size()) fail_at(at, "a record Name(...) closed by ')'");
    if (text_[pos_] == '(') ++depth;
    if (text_[pos_] == ')') --depth;
    ++pos_;
  } while (depth > 0);
  return std::string(text_.substr(at, pos_ - at));
}

// `(0, 1)`, `(0,)`, `()`; quoted mesh axis names (`('a', 'b')`) become their positions.
std::vector<int64_t> Parser::tuple() {
  expect('(', "'('");
  std::vector<int64_t> v;
  if (accept(')')) return v;
  for (;;) {
    if (peek() == '\'') {
      const size_t at = pos_;
      const std::string name = quoted();
      if (mesh_ == nullptr) {
        fail_msg(at, "mesh axis name '" + name + "' needs a mesh; pass one to parse_program");
      }
      const int axis = mesh_->axis_index(name);
      if (axis < 0) fail_msg(at, "mesh " + mesh_->to_string() + " has no axis '" + name + "'");
      v.push_back(axis);
    } else {
      v.push_back(integer("an integer or a quoted mesh axis name"));
    }
    if (accept(')')) break;
    expect(',', "',' or ')' in the tuple");
    if (accept(')')) break;
  }
  return v;
}

// `Mesh('a': 4, 'b': 2)`: the parser's mesh when it prints the same, else a new one.
Mesh Parser::mesh() {
  const size_t at = here();
  expect_word("Mesh");
  expect('(', "'(' after Mesh");
  std::vector<std::string> names;
  std::vector<int64_t> sizes;
  if (!accept(')')) {
    for (;;) {
      names.push_back(quoted());
      expect(':', "':' after the axis name");
      sizes.push_back(integer("the axis size"));
      if (accept(')')) break;
      expect(',', "',' or ')' in the mesh");
    }
  }
  if (mesh_ && mesh_->axis_names() == names && mesh_->axis_sizes() == sizes) return *mesh_;
  try {
    return make_mesh(sizes, names);
  } catch (const Error& e) {
    fail_msg(at, e.what());
  }
}

// The entries of `PartitionSpec(...)` or `P(...)`, from the '('.
PartitionSpec Parser::spec_body() {
  expect('(', "'(' starting the partition spec");
  std::vector<SpecEntry> entries;
  if (accept(')')) return PartitionSpec::from_entries(entries);
  for (;;) {
    entries.push_back(spec_entry());
    if (accept(')')) break;
    expect(',', "',' or ')' in the partition spec");
    if (accept(')')) break;
  }
  return PartitionSpec::from_entries(std::move(entries));
}

SpecEntry Parser::spec_entry() {
  const char c = peek();
  if (c == '\'') return SpecEntry(quoted());
  if (c == '(') {
    ++pos_;
    std::vector<std::string> axes;
    if (!accept(')')) {
      for (;;) {
        axes.push_back(quoted());
        if (accept(')')) break;
        expect(',', "',' or ')' in the axis group");
        if (accept(')')) break;
      }
    }
    return SpecEntry(std::move(axes));
  }
  const size_t at = pos_;
  const std::string_view w = word();
  if (w == "None") return SpecEntry(None);
  if (w == "UNCONSTRAINED") return SpecEntry::unconstrained();
  fail_at(at, "a spec entry: None, 'a', ('a', 'b') or UNCONSTRAINED");
}

ParamValue Parser::named_sharding(size_t at) {
  expect('(', "'('");
  expect_word("mesh");
  expect('=', "'=' after mesh");
  Mesh m = mesh();
  expect(',', "',' after the mesh");
  expect_word("spec");
  expect('=', "'=' after spec");
  expect_word("PartitionSpec");
  PartitionSpec spec = spec_body();
  expect(')', "')' closing NamedSharding");
  try {
    return std::make_shared<const Sharding>(NamedSharding(std::move(m), std::move(spec)));
  } catch (const Error& e) {
    fail_msg(at, e.what());
  }
}

ParamValue Parser::short_sharding(size_t at) {
  PartitionSpec spec = spec_body();
  if (mesh_ == nullptr) {
    fail_msg(at, "the sharding " + spec.to_ir_string() +
                     " needs a mesh; pass one to parse_program or write NamedSharding(...)");
  }
  try {
    return std::make_shared<const Sharding>(NamedSharding(*mesh_, std::move(spec)));
  } catch (const Error& e) {
    fail_msg(at, e.what());
  }
}

// `SingleDeviceSharding(device=CpuDevice(id=0))`.
ParamValue Parser::single_device_sharding(size_t at) {
  expect('(', "'('");
  expect_word("device");
  expect('=', "'=' after device");
  expect_word("CpuDevice");
  expect('(', "'(' after CpuDevice");
  expect_word("id");
  expect('=', "'=' after id");
  const int64_t id = integer("a device id");
  expect(')', "')' closing CpuDevice");
  expect(')', "')' closing SingleDeviceSharding");
  for (const Device& d : devices()) {
    if (d.id() == id) return std::make_shared<const Sharding>(SingleDeviceSharding(d));
  }
  fail_msg(at, "no device with id " + std::to_string(id));
}

}  // namespace

Program parse_program(std::string_view text, const Mesh* mesh) {
  return Parser(text, mesh, "parse_program").parse();
}

PartitionSpec parse_partition_spec(std::string_view text) {
  return Parser(text, nullptr, "parse_partition_spec").parse_spec();
}

}  // namespace parax::core
