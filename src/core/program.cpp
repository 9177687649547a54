#include "core/program.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "base/check.h"
#include "base/dtype_dispatch.h"
#include "core/rules.h"

#include <cstdlib>
#include <cstring>

namespace parax::core {

Params::Params(std::initializer_list<std::pair<std::string, ParamValue>> items) {
  for (const auto& [name, value] : items) set(name, value);
}

Params& Params::set(std::string name, ParamValue value) {
  auto it = std::lower_bound(items_.begin(), items_.end(), name,
                             [](const auto& item, const std::string& n) { return item.first < n; });
  if (it != items_.end() && it->first == name) {
    it->second = std::move(value);
  } else {
    items_.insert(it, {std::move(name), std::move(value)});
  }
  return *this;
}

bool Params::has(std::string_view name) const {
  return std::any_of(items_.begin(), items_.end(), [&](const auto& i) { return i.first == name; });
}

const ParamValue& Params::find(std::string_view name) const {
  for (const auto& [n, v] : items_) {
    if (n == name) return v;
  }
  PARAX_CHECK(false, "missing param " << std::string(name));
  PARAX_UNREACHABLE();
}

bool Params::operator==(const Params& o) const {
  if (items_.size() != o.items_.size()) return false;
  for (size_t i = 0; i < items_.size(); ++i) {
    const auto& [na, a] = items_[i];
    const auto& [nb, b] = o.items_[i];
    if (na != nb || a.index() != b.index()) return false;
    if (auto* s = std::get_if<std::shared_ptr<const Sharding>>(&a)) {
      const auto& t = std::get<std::shared_ptr<const Sharding>>(b);
      if (!(*s == t || (*s && t && **s == *t))) return false;
    } else if (!(a == b)) {
      return false;
    }
  }
  return true;
}

void write_literal(const Literal& l, void* dst) {
  dispatch_dtype(l.aval.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T v = scalar_cast<T>(l.value);
    std::memcpy(dst, &v, sizeof(T));  // bool is one byte, as buffers store it
  });
}

int Program::new_var(Aval aval) {
  avals.push_back(std::move(aval));
  return int(avals.size()) - 1;
}

std::vector<std::shared_ptr<const Program>> sub_programs(const Eqn& e) {
  std::vector<std::shared_ptr<const Program>> out;
  for (const auto& [name, value] : e.params.items()) {
    if (const auto* p = std::get_if<std::shared_ptr<const Program>>(&value); p && *p) {
      out.push_back(*p);
    } else if (const auto* list = std::get_if<ProgramList>(&value)) {
      out.insert(out.end(), list->begin(), list->end());
    }
  }
  return out;
}

Eqn with_sub_programs(Eqn e, const ProgramMap& f) {
  Params params;
  for (const auto& [name, value] : e.params.items()) {
    if (const auto* p = std::get_if<std::shared_ptr<const Program>>(&value); p && *p) {
      params.set(name, f(*p));
    } else if (const auto* list = std::get_if<ProgramList>(&value)) {
      ProgramList mapped;
      for (const auto& sub : *list) mapped.push_back(f(sub));
      params.set(name, std::move(mapped));
    } else {
      params.set(name, value);
    }
  }
  e.params = std::move(params);
  return e;
}

void for_each_eqn(const Program& p, const std::function<void(const Program&, const Eqn&)>& f) {
  for (const Eqn& e : p.eqns) {
    f(p, e);
    if (!has_trait(e.prim, kControlFlow)) continue;
    for (const auto& sub : sub_programs(e)) for_each_eqn(*sub, f);
  }
}

std::string var_name(int n) {
  // JAX's alphabetic numbering: a leading 'a' would be a zero digit, so 26 is "ba".
  std::string s;
  do {
    s.insert(s.begin(), char('a' + n % 26));
    n /= 26;
  } while (n > 0);
  return s;
}

namespace {

// Python's repr of a float: the shortest digits that round-trip, positional for
// exponents in [-4, 16) (`10.0`, `0.001`), else scientific (`1e-05`, `1e+16`).
std::string float_repr(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
  char buf[40];
  int precision = 1;
  for (; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*e", precision - 1, x);
    if (std::strtod(buf, nullptr) == x) break;
  }
  const int exponent = std::atoi(std::strchr(buf, 'e') + 1);
  if (exponent < -4 || exponent >= 16) {
    // Python writes the mantissa's digits as %g does, and a two-digit exponent at least.
    std::snprintf(buf, sizeof buf, "%.*g", precision, x);
    return buf;
  }
  std::snprintf(buf, sizeof buf, "%.*f", std::max(0, precision - 1 - exponent), x);
  std::string s = buf;
  if (s.find('.') == std::string::npos) s += ".0";
  return s;
}

std::string literal_str(const Literal& l) {
  if (l.aval.dtype == DType::bool_) return l.value != 0 ? "True" : "False";
  if (is_floating(l.aval.dtype)) return float_repr(l.value);
  return std::to_string(int64_t(l.value));
}

}  // namespace

std::string param_str(const ParamValue& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>)
          return x ? "True" : "False";
        else if constexpr (std::is_same_v<T, int64_t>)
          return std::to_string(x);
        else if constexpr (std::is_same_v<T, double>)
          return float_repr(x);
        else if constexpr (std::is_same_v<T, std::string>)
          return x;
        else if constexpr (std::is_same_v<T, DType>)
          return std::string(dtype_name(x));
        else if constexpr (std::is_same_v<T, std::vector<int64_t>>)
          return shape_str(x);
        else if constexpr (std::is_same_v<T, std::shared_ptr<const Sharding>>)
          return x ? x->to_string() : "None";
        else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          std::string out = "(";  // a Python tuple of names: ('i',), ('i', 'j')
          for (size_t i = 0; i < x.size(); ++i) out += (i ? ", '" : "'") + x[i] + "'";
          return out + (x.size() == 1 ? ",)" : ")");
        } else if constexpr (std::is_same_v<T, std::vector<PartitionSpec>>) {
          std::string out = "(";
          for (size_t i = 0; i < x.size(); ++i) out += (i ? ", " : "") + x[i].to_ir_string();
          return out + (x.size() == 1 ? ",)" : ")");
        } else if constexpr (std::is_same_v<T, ProgramList>) {
          std::string out = "(";
          for (size_t i = 0; i < x.size(); ++i) out += (i ? " " : "") + to_string(*x[i]);
          return out + ")";
        } else
          return x ? to_string(*x) : "None";
      },
      v);
}

namespace {

// Prints the variables and equations of one program as JAX prints them: variables named
// in order of definition, an equation result nothing reads as `_`, the programs of
// control flow (cond, while, scan, remat2) named on from their equation's names, as JAX
// numbers them, others (jit's, a shard_map's, a fusion's) from `a`.
class Printer {
 public:
  // `drop_unused`: print results nothing reads as `_`. JAX does so only in the program
  // make_jaxpr traces, not in the sub-programs of its control flow.
  Printer(const Program& p, const ParamPrinter& param_printer, int first = 0,
          bool drop_unused = true)
      : p_(p),
        param_printer_(param_printer),
        number_(p.avals.size(), -1),
        first_(first),
        next_(first) {
    std::vector<bool> used(p.avals.size(), false);
    for (const Eqn& e : p.eqns) {
      for (const Atom& a : e.inputs) mark(used, a);
    }
    for (const Atom& a : p.outvars) mark(used, a);
    dropped_ = std::vector<bool>(p.avals.size(), false);
    if (!drop_unused) return;
    for (const Eqn& e : p.eqns) {
      for (int v : e.outputs) {
        if (v >= 0 && size_t(v) < used.size() && !used[size_t(v)]) dropped_[size_t(v)] = true;
      }
    }
  }

  std::string name(int v) const {
    if (v >= 0 && size_t(v) < dropped_.size() && dropped_[size_t(v)]) return "_";
    return v >= 0 && size_t(v) < number_.size() && number_[size_t(v)] >= 0
               ? var_name(number_[size_t(v)])
               : "?" + std::to_string(v);
  }
  std::string typed(int v) const {
    const bool typed = v >= 0 && size_t(v) < p_.avals.size();  // the verifier prints bad ones
    return name(v) + ":" + (typed ? p_.avals[size_t(v)].short_str() : "?");
  }
  std::string atom(const Atom& a) const {
    return a.is_literal() ? literal_str(*a.literal) : name(a.var);
  }
  Aval aval_of(const Atom& a) const {
    if (a.is_literal()) return a.literal->aval;
    const bool typed = a.var >= 0 && size_t(a.var) < p_.avals.size();  // as typed() does
    return typed ? p_.avals[size_t(a.var)] : Aval{};
  }

  // Returns equation `e` starting at column `column`; defines its results' names first
  // (JAX names an equation's results before its sub-programs' variables).
  std::string eqn(const Eqn& e, size_t column = 4) {
    std::string line;
    for (int v : e.outputs) define(v);
    for (size_t i = 0; i < e.outputs.size(); ++i) line += (i ? " " : "") + typed(e.outputs[i]);
    line += (e.outputs.empty() ? "" : " = ") + std::string(prim_name(e.prim));  // as JAX
    std::string args;
    for (const Atom& a : e.inputs) args += " " + atom(a);
    if (const PrintParamsFn shown = rules(e.prim).print_params) {
      std::vector<Aval> in;
      for (const Atom& a : e.inputs) in.push_back(aval_of(a));
      return line + broken_params(shown(in, e.params), column, line.size() + args.size()) + args;
    }
    if (e.params.items().empty()) return line + args;
    // Other primitives keep their params on one line: most do not yet print them as JAX
    // does (dot_general's four lists for its one tuple), so JAX's line breaks would not
    // make their text JAX's.
    if (has_trait(e.prim, kControlFlow)) {
      return line + broken_params(e.params.items(), column, line.size() + args.size()) + args;
    }
    if (std::optional<ParamItems> items = custom_call_params(e)) {
      return line + broken_params(*items, column, line.size() + args.size()) + args;
    }
    line += "[";
    bool first = true;
    for (size_t i = 0; i < e.params.items().size(); ++i) {
      const auto& [name, value] = e.params.items()[i];
      if (name.starts_with('_')) continue;
      std::optional<std::string> text;
      if (param_printer_) text = param_printer_(name, value);
      std::string rendered = text ? *text : param_str(value);
      // A nested program's lines sit under its equation.
      for (size_t at = rendered.find('\n'); at != std::string::npos;
           at = rendered.find('\n', at + 1)) {
        rendered.insert(at + 1, "      ");
      }
      line += (first ? "" : " ") + name + "=" + rendered;
      first = false;
    }
    return line + "]" + args;
  }

  // Returns the program: on one line when it fits in 80 columns starting at column
  // `start` (equations separated by `; `), else one equation a line, its equations at
  // column `base` + 4 (later lines are not indented here: see sub_program).
  std::string program(size_t base, size_t start) {
    base_ = base;
    for (int v : p_.constvars) define(v);
    for (int v : p_.invars) define(v);
    std::string head = "{ lambda ";
    for (size_t i = 0; i < p_.constvars.size(); ++i)
      head += (i ? " " : "") + typed(p_.constvars[i]);
    head += "; ";
    for (size_t i = 0; i < p_.invars.size(); ++i) head += (i ? " " : "") + typed(p_.invars[i]);
    head += ". let";
    std::vector<std::string> lines;
    for (const Eqn& e : p_.eqns) lines.push_back(eqn(e, base + 4));
    std::string out = "in (";
    for (size_t i = 0; i < p_.outvars.size(); ++i) out += (i ? ", " : "") + atom(p_.outvars[i]);
    out += p_.outvars.size() == 1 ? ",) }" : ") }";
    std::string flat = head;
    for (size_t i = 0; i < lines.size(); ++i) flat += (i ? "; " : " ") + lines[i];
    flat += " " + out;
    if (start + flat.size() <= 80 && flat.find('\n') == std::string::npos) return flat;
    std::string text = head + "\n";
    for (const std::string& l : lines) text += "    " + l + "\n";
    return text + "  " + out;
  }

  // program(), printed twice: the first pass names every variable, so the second can
  // name one a broken program reads before its definition.
  std::string render(size_t base, size_t start) {
    program(base, start);
    next_ = first_;
    return program(base, start);
  }

  // Returns equation `e` as render() prints it.
  std::string eqn_at(size_t e) {
    program(0, 0);
    next_ = first_;
    for (int v : p_.constvars) define(v);
    for (int v : p_.invars) define(v);
    for (size_t i = 0; i < e; ++i) eqn(p_.eqns[i]);
    return eqn(p_.eqns[e]);
  }

  int next() const { return next_; }

 private:
  static void mark(std::vector<bool>& used, const Atom& a) {
    if (!a.is_literal() && a.var >= 0 && size_t(a.var) < used.size()) used[size_t(a.var)] = true;
  }
  void define(int v) {
    if (v < 0 || size_t(v) >= number_.size()) return;
    if (size_t(v) < dropped_.size() && dropped_[size_t(v)]) return;
    if (number_[size_t(v)] >= 0) {
      next_ = std::max(next_, number_[size_t(v)] + 1);  // a second pass names as the first
      return;
    }
    number_[size_t(v)] = next_++;
  }

  // A sub-program of control flow, named on from this printer's names, starting at column
  // `start` on a line indented to `base`.
  std::string sub_program(const Program& sub, size_t base, size_t start) {
    Printer inner(sub, param_printer_, next_, false);
    std::string text = inner.render(base, start);
    next_ = inner.next();
    return indent_lines(text, base - base_);  // this program's lines are relative to base_
  }
  // Shifts every line after the first right by `by` columns.
  static std::string indent_lines(std::string text, size_t by) {
    const std::string pad(by, ' ');
    for (size_t at = text.find('\n'); at != std::string::npos; at = text.find('\n', at + 1)) {
      text.insert(at + 1, pad);
    }
    return text;
  }

  using ParamItems = std::vector<std::pair<std::string, ParamValue>>;

  // JAX's custom_jvp_call and custom_vjp_call (a call holding its rules' programs, params
  // `*_jaxpr_fun` / `*_jaxpr_thunk`, where JAX holds functions) print as their pp rules do:
  // `name` first, the call's program as `call_jaxpr` (named on, as control flow's), the
  // rules by their names (params `jvp`, `fwd`, `bwd`), num_consts only when not 0, and
  // none of parax's own (the `*_error` a rule's bad output left). Other calls: nullopt.
  static std::optional<ParamItems> custom_call_params(const Eqn& e) {
    if (!has_trait(e.prim, kCall)) return std::nullopt;
    auto ends_with = [](const std::string& s, std::string_view end) {
      return s.size() >= end.size() && s.compare(s.size() - end.size(), end.size(), end) == 0;
    };
    const auto& all = e.params.items();
    const bool custom = std::any_of(
        all.begin(), all.end(), [&](const auto& kv) { return ends_with(kv.first, "_jaxpr_fun"); });
    if (!custom) return std::nullopt;
    ParamItems items;
    for (const auto& [name, value] : all) {
      if (name == "name") items.insert(items.begin(), {name, value});
    }
    for (const auto& [name, value] : all) {
      if (name == "name" || ends_with(name, "_fun") || ends_with(name, "_thunk") ||
          ends_with(name, "_error")) {
        continue;
      }
      if (name == "num_consts" && std::get_if<int64_t>(&value) && std::get<int64_t>(value) == 0) {
        continue;
      }
      const std::string shown = name == "jaxpr" ? "call_jaxpr" : name;
      items.push_back({shown, value});
    }
    // Sorted by the names JAX prints (call_jaxpr among them), after `name`.
    const bool named = !items.empty() && items.front().first == "name";
    std::sort(items.begin() + (named ? 1 : 0), items.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    return items;
  }

  // `[p=v ...]` on the equation's line when the whole equation fits in 80 columns, else
  // one param a line under it, as JAX prints every equation (parax: control flow, custom
  // calls and the primitives whose params print as JAX's). `rest` is how many columns the
  // equation takes besides its params.
  std::string broken_params(const ParamItems& params, size_t column, size_t rest) {
    if (params.empty()) return {};
    const int saved = next_;
    for (const bool flat : {true, false}) {
      next_ = saved;
      const size_t param_column = column + 2;
      std::string text = "[";
      bool first = true;
      for (const auto& [name, value] : params) {
        std::string rendered;
        if (const auto* sub = std::get_if<std::shared_ptr<const Program>>(&value)) {
          rendered =
              *sub ? sub_program(**sub, param_column, param_column + name.size() + 1) : "None";
        } else if (const auto* list = std::get_if<ProgramList>(&value)) {
          rendered = "(";
          for (size_t i = 0; i < list->size(); ++i) {
            const std::string one = sub_program(*(*list)[i], param_column + 2, param_column + 2);
            rendered += flat ? (i ? " " : "") + one
                             : "\n" + std::string(param_column + 2 - base_, ' ') + one;
          }
          rendered += flat ? ")" : "\n" + std::string(param_column - base_, ' ') + ")";
        } else {
          std::optional<std::string> custom;
          if (param_printer_) custom = param_printer_(name, value);
          rendered = custom ? *custom : param_str(value);
        }
        if (flat) {
          text += (first ? "" : " ") + name + "=" + rendered;
        } else {
          text += "\n" + std::string(param_column - base_, ' ') + name + "=" + rendered;
        }
        first = false;
      }
      if (flat) {
        text += "]";
        if (text.find('\n') == std::string::npos && column + rest + text.size() <= 80) return text;
        continue;
      }
      return text + "\n" + std::string(column - base_, ' ') + "]";
    }
    return {};
  }

  const Program& p_;
  ParamPrinter param_printer_;
  std::vector<int> number_;
  std::vector<bool> dropped_;
  int first_ = 0;
  int next_ = 0;
  size_t base_ = 0;  // the column program() indents this program's lines from
};

}  // namespace

std::string to_string(const Program& p, const ParamPrinter& param_printer) {
  Printer print(p, param_printer);
  return print.render(0, 0);
}

std::string eqn_str(const Program& p, size_t e) {
  Printer print(p, nullptr);
  return print.eqn_at(e);
}

}  // namespace parax::core
