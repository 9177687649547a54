// The IR: a typed SSA program in A-normal form, JAX's jaxpr. Immutable once built; every
// transform and pass reads one program and writes another. Prints in jaxpr notation.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "core/aval.h"
#include "core/primitive.h"
#include "parax/sharding.h"

namespace parax::core {

struct Program;
// Several sub-programs of one equation (cond's branches).
using ProgramList = std::vector<std::shared_ptr<const Program>>;

// A primitive's static parameters (axes, shapes, dtypes, shardings, sub-programs). A name
// starting with '_' is not printed: it only serves messages (which api made the equation).
using ParamValue = std::variant<bool, int64_t, double, std::string, DType, std::vector<int64_t>,
                                std::shared_ptr<const Sharding>, std::shared_ptr<const Program>,
                                std::vector<std::string>, std::vector<PartitionSpec>, ProgramList>;

class Params {
 public:
  Params() = default;
  Params(std::initializer_list<std::pair<std::string, ParamValue>> items);
  // Sets `name` (replacing an earlier value); keeps names sorted, as JAX prints them.
  Params& set(std::string name, ParamValue value);
  bool has(std::string_view name) const;
  template <class T>
  const T& get(std::string_view name) const {
    return std::get<T>(find(name));
  }
  const std::vector<std::pair<std::string, ParamValue>>& items() const { return items_; }
  bool operator==(const Params& o) const;

 private:
  const ParamValue& find(std::string_view name) const;
  std::vector<std::pair<std::string, ParamValue>> items_;
};

// A scalar constant written inline in an equation (JAX's Literal).
struct Literal {
  Aval aval;     // rank 0
  double value;  // exact for every dtype parax inlines (ints up to 2^53, floats)
  bool operator==(const Literal&) const = default;
};

// Writes the literal's value as one element of its dtype (at most 8 bytes) to `dst`.
void write_literal(const Literal& l, void* dst);

// An equation input: a variable (its index into Program::avals) or a literal.
struct Atom {
  int var = -1;
  std::optional<Literal> literal;

  static Atom of(int v) { return Atom{v, std::nullopt}; }
  static Atom of(Literal l) { return Atom{-1, l}; }
  bool is_literal() const { return literal.has_value(); }
  bool operator==(const Atom&) const = default;
};

struct Eqn {
  Prim prim;
  std::vector<Atom> inputs;
  std::vector<int> outputs;
  Params params;
  // The user's line that made it (core/source_site.h); empty when none did. Not part of
  // the program's meaning: never printed, compared or serialized.
  std::source_location site{};
};

struct Program {
  std::vector<Aval> avals;     // the type of every variable, by index
  std::vector<int> constvars;  // inputs bound to closed-over constants
  std::vector<int> invars;
  std::vector<Eqn> eqns;
  std::vector<Atom> outvars;

  // Adds a variable of type `aval` and returns its index.
  int new_var(Aval aval);
  const Aval& aval_of(const Atom& a) const {
    return a.is_literal() ? a.literal->aval : avals[size_t(a.var)];
  }
};

// The programs an equation holds in its params (a pjit's, a fusion's, cond's branches, a
// while's cond and body), in param order.
std::vector<std::shared_ptr<const Program>> sub_programs(const Eqn& e);
// Returns `e` with each program it holds replaced by f(program), in sub_programs' order.
using ProgramMap =
    std::function<std::shared_ptr<const Program>(const std::shared_ptr<const Program>&)>;
Eqn with_sub_programs(Eqn e, const ProgramMap& f);
// Calls f on every equation of `p` and, depth first, of its control-flow sub-programs
// (the code that runs where they stand: loop bodies, branches).
void for_each_eqn(const Program& p, const std::function<void(const Program&, const Eqn&)>& f);

// Returns the program in JAX's jaxpr notation, e.g.
// `{ lambda ; a:f32[8]. let b:f32[8] = sin a in (b,) }`.
// `param_printer`, when given, may render a param its own way (returning nullopt to
// fall back), e.g. mesh axis numbers as names.
using ParamPrinter =
    std::function<std::optional<std::string>(std::string_view name, const ParamValue& value)>;
std::string to_string(const Program& p, const ParamPrinter& param_printer = nullptr);
// Returns JAX's name for the n-th variable: a, b, ..., z, ba, bb, ...
std::string var_name(int n);
// Returns a param value as JAX prints it: `(0, 1)`, `float32`, `True`.
std::string param_str(const ParamValue& v);

// Returns equation `e` of `p` as to_string prints it, e.g. `c:f32[8] = sin b`.
std::string eqn_str(const Program& p, size_t e);

// Checks SSA form and types (core/verify.h; a per-device program needs its mesh there).
// Returns a description of the first violation, or nullopt.
std::optional<std::string> verify(const Program& p);

}  // namespace parax::core
