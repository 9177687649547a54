#include "core/parse.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>

#include "parax/errors.h"

namespace parax::core {
namespace {

// Variables are numbered by their names; a cap keeps a typo such as `zzzzzz` from
// allocating hundreds of millions of placeholder types.
constexpr int kMaxVars = 1 << 20;

enum class Kind { floating, integer, boolean };

// A literal as written; its type waits until the whole equation is read.
struct RawLiteral {
  size_t input;
  Kind kind;
  double value;
};

// A program under construction: its variables by number, and which are defined so far.
struct Scope {
  Program p;
  std::vector<bool> defined;
};

// Words cover names, numbers (`-1`, `1e-05`) and printed primitive names (`all-gather`).
bool is_word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' ||
         c == '+' || c == '<' || c == '>';
}

// Returns the number `var_name` encodes in `name`, or nullopt for a name it never prints.
std::optional<int> var_number(std::string_view name) {
  if (name.empty() || name.size() > 5) return std::nullopt;
  int64_t n = 0;
  for (char c : name) {
    if (c < 'a' || c > 'z') return std::nullopt;
    n = n * 26 + (c - 'a');
  }
  if (n >= kMaxVars || var_name(int(n)) != name) return std::nullopt;
  return int(n);
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
  if (s.empty() || end != s.c_str() + s.size()) return std::nullopt;
  return v;
}

std::optional<DType> dtype_named(std::string_view w, bool short_name) {
  for (int i = 0; i < kNumDTypes; ++i) {
    const DType t = DType(i);
    if ((short_name ? dtype_short_name(t) : dtype_name(t)) == w) return t;
  }
  return std::nullopt;
}

bool is_kind(Kind k, DType t) {
  if (k == Kind::floating) return is_floating(t);
  if (k == Kind::integer) return is_integer(t);
  return t == DType::bool_;
}

class Parser {
 public:
  Parser(std::string_view text, const Mesh* mesh) : text_(text), mesh_(mesh) {}

  Program parse() {
    Program p = program();
    skip_ws();
    if (pos_ != text_.size()) fail("the end of the text after the program's '}'");
    return p;
  }

  PartitionSpec parse_spec() {
    const size_t at = (skip_ws(), pos_);
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
    const size_t at = (skip_ws(), pos_);
    if (word() != w) fail_at(at, "'" + std::string(w) + "'");
  }
  bool at_closing_in();
  int64_t integer(const std::string& what);
  std::string quoted();

  Program program();
  std::pair<int, Aval> typed_var(const std::string& what);
  void define(Scope& s, int n, Aval aval, size_t at) const;
  Aval aval();
  void equation(Scope& s);
  std::optional<Atom> atom(Scope& s, size_t at, std::string_view w, RawLiteral* lit);
  std::vector<Atom> out_atoms(Scope& s);

  ParamValue param_value();
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
};

std::string Parser::where(size_t at) const {
  size_t line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < at && i < text_.size(); ++i) {
    if (text_[i] != '\n') continue;
    ++line;
    line_start = i + 1;
  }
  return "[parse_program] line " + std::to_string(line) + ", column " +
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

// `in (` ends the equations; a variable may also be named `in` (number 221).
bool Parser::at_closing_in() {
  skip_ws();
  if (text_.substr(pos_, 2) != "in") return false;
  size_t q = pos_ + 2;
  if (q < text_.size() && is_word_char(text_[q])) return false;
  while (q < text_.size() && std::isspace(static_cast<unsigned char>(text_[q]))) ++q;
  return q < text_.size() && text_[q] == '(';
}

int64_t Parser::integer(const std::string& what) {
  const size_t at = (skip_ws(), pos_);
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
  while (peek() != ';') {
    const size_t at = pos_;
    auto [n, a] = typed_var("a typed variable such as a:f32[8] or ';'");
    define(s, n, a, at);
    s.p.constvars.push_back(n);
  }
  ++pos_;
  while (peek() != '.') {
    const size_t at = pos_;
    auto [n, a] = typed_var("a typed variable such as a:f32[8] or '. let'");
    define(s, n, a, at);
    s.p.invars.push_back(n);
  }
  ++pos_;
  expect_word("let");
  while (!at_closing_in()) equation(s);
  expect_word("in");
  s.p.outvars = out_atoms(s);
  expect('}', "'}' closing the program");
  return std::move(s.p);
}

std::pair<int, Aval> Parser::typed_var(const std::string& what) {
  const size_t at = (skip_ws(), pos_);
  const std::string_view name = word();
  if (pos_ >= text_.size() || text_[pos_] != ':') fail_at(at, what);
  const auto n = var_number(name);
  if (!n) fail_at(at, "a variable name as programs print them (a, ..., z, ba, bb, ...)");
  ++pos_;
  return {*n, aval()};
}

void Parser::define(Scope& s, int n, Aval aval, size_t at) const {
  if (size_t(n) >= s.p.avals.size()) {
    // Unnamed numbers in between get placeholder types: the printer never shows them.
    s.p.avals.resize(size_t(n) + 1);
    s.defined.resize(size_t(n) + 1, false);
  }
  if (s.defined[size_t(n)]) fail_msg(at, "variable '" + var_name(n) + "' is defined twice");
  s.defined[size_t(n)] = true;
  s.p.avals[size_t(n)] = std::move(aval);
}

Aval Parser::aval() {
  const size_t at = (skip_ws(), pos_);
  const auto dtype = dtype_named(word(), /*short_name=*/true);
  if (!dtype) fail_at(at, "a dtype such as f32, i32, bool");
  if (pos_ >= text_.size() || text_[pos_] != '[') fail("'[' starting the shape");
  ++pos_;
  Shape shape;
  if (!accept(']')) {
    do {
      const size_t dim_at = (skip_ws(), pos_);
      shape.push_back(integer("a dimension size"));
      if (shape.back() < 0) fail_at(dim_at, "a nonnegative dimension size");
    } while (accept(','));
    expect(']', "',' or ']' in the shape");
  }
  return Aval{std::move(shape), *dtype, false};
}

void Parser::equation(Scope& s) {
  std::vector<std::pair<size_t, std::pair<int, Aval>>> outs;
  while (peek() != '=') {
    const size_t at = pos_;
    outs.push_back({at, typed_var("a typed result such as b:f32[8], '=' or 'in ('")});
  }
  ++pos_;
  const size_t prim_at = (skip_ws(), pos_);
  const std::string_view name = word();
  std::optional<Prim> prim;
#define PARAX_PRIM_MATCH(id, printed, traits) \
  if (name == printed) prim = Prim::id;
  PARAX_PRIMITIVES(PARAX_PRIM_MATCH)
#undef PARAX_PRIM_MATCH
  if (!prim) fail_at(prim_at, "a primitive name");
  Eqn eqn{*prim, {}, {}, {}};
  if (accept('[')) {
    while (!accept(']')) {
      const size_t at = (skip_ws(), pos_);
      const std::string param(word());
      if (param.empty()) fail("a param name or ']'");
      if (eqn.params.has(param)) fail_msg(at, "param '" + param + "' appears twice");
      expect('=', "'=' after the param name");
      eqn.params.set(param, param_value());
    }
  }
  std::vector<RawLiteral> literals;
  for (;;) {
    const char c = peek();
    if (c == '\0' || c == '}' || c == '=' || at_closing_in()) break;
    const size_t at = pos_;
    const std::string_view w = word();
    if (pos_ < text_.size() && text_[pos_] == ':') {
      pos_ = at;  // the next equation's first result
      break;
    }
    RawLiteral lit{eqn.inputs.size(), Kind::floating, 0};
    auto a = atom(s, at, w, &lit);
    if (!a) fail_at(at, "an operand (a variable or a literal), the next equation or 'in ('");
    if (a->is_literal()) literals.push_back(lit);
    eqn.inputs.push_back(*a);
  }
  // Results are defined only now, so an equation cannot read its own results.
  for (auto& [at, out] : outs) {
    define(s, out.first, out.second, at);
    eqn.outputs.push_back(out.first);
  }
  // A literal takes the type of an operand (else a result) of its kind, as JAX's
  // promotion has made every operand of an elementwise equation the same type.
  for (const RawLiteral& lit : literals) {
    std::optional<Aval> like;
    for (const Atom& in : eqn.inputs) {
      if (!like && !in.is_literal() && is_kind(lit.kind, s.p.avals[size_t(in.var)].dtype)) {
        like = s.p.avals[size_t(in.var)];
      }
    }
    for (int v : eqn.outputs) {
      if (!like && is_kind(lit.kind, s.p.avals[size_t(v)].dtype)) like = s.p.avals[size_t(v)];
    }
    Literal& l = *eqn.inputs[lit.input].literal;
    if (like) l.aval = Aval{{}, like->dtype, like->weak_type};
  }
  s.p.eqns.push_back(std::move(eqn));
}

// Reads a variable or a literal from the word `w` at `at`; a literal gets the default
// type of its kind (float32 / int32, weak; bool), and its kind and value go to `lit`.
std::optional<Atom> Parser::atom(Scope& s, size_t at, std::string_view w, RawLiteral* lit) {
  const auto n = var_number(w);
  // A defined variable wins over a literal spelled the same (`nan`, `inf`).
  if (n && size_t(*n) < s.defined.size() && s.defined[size_t(*n)]) return Atom::of(*n);
  std::optional<Literal> l;
  if (w == "True" || w == "False") {
    lit->kind = Kind::boolean;
    l = Literal{Aval{{}, DType::bool_, false}, w == "True" ? 1.0 : 0.0};
  } else if (auto i = to_int(w)) {
    lit->kind = Kind::integer;
    l = Literal{Aval{{}, DType::int32, true}, double(*i)};
  } else if (auto x = to_float(w)) {
    lit->kind = Kind::floating;
    l = Literal{Aval{{}, DType::float32, true}, *x};
  }
  if (l) {
    lit->value = l->value;
    return Atom::of(*l);
  }
  if (n) fail_msg(at, "variable '" + std::string(w) + "' is used before it is defined");
  return std::nullopt;
}

std::vector<Atom> Parser::out_atoms(Scope& s) {
  expect('(', "'(' starting the outputs");
  std::vector<Atom> outs;
  if (accept(')')) return outs;
  for (;;) {
    const size_t at = (skip_ws(), pos_);
    RawLiteral lit{0, Kind::floating, 0};
    auto a = atom(s, at, word(), &lit);
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
  if (c == '(') return tuple();
  if (c == '{') return std::make_shared<const Program>(program());
  const size_t at = pos_;
  const std::string_view w = word();
  if (w.empty()) fail("a param value");
  if (pos_ < text_.size() && text_[pos_] == '(') {
    if (w == "NamedSharding") return named_sharding(at);
    if (w == "P") return short_sharding(at);
    if (w == "SingleDeviceSharding") return single_device_sharding(at);
    fail_at(at, "NamedSharding(...), SingleDeviceSharding(...) or P(...)");
  }
  if (w == "True" || w == "False") return w == "True";
  if (auto i = to_int(w)) return *i;
  if (auto x = to_float(w)) return *x;
  if (auto t = dtype_named(w, /*short_name=*/false)) return *t;
  return std::string(w);
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
  const size_t at = (skip_ws(), pos_);
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
  return Parser(text, mesh).parse();
}

PartitionSpec parse_partition_spec(std::string_view text) {
  return Parser(text, nullptr).parse_spec();
}

}  // namespace parax::core
