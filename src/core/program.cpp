#include "core/program.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "base/check.h"
#include "base/dtype_dispatch.h"

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

// Python's repr of a float: shortest round-trip digits, always with a '.' or exponent.
std::string float_repr(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
  char buf[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, x);
    if (std::strtod(buf, nullptr) == x) break;
  }
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
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
        } else
          return x ? to_string(*x) : "None";
      },
      v);
}

namespace {

// Prints the variables and equations of one program, naming variables in order of
// definition, as JAX prints them.
class Printer {
 public:
  Printer(const Program& p, const ParamPrinter& param_printer)
      : p_(p), param_printer_(param_printer), number_(p.avals.size(), -1) {
    for (int v : p.constvars) define(v);
    for (int v : p.invars) define(v);
    for (const Eqn& e : p.eqns) {
      for (int v : e.outputs) define(v);
    }
  }

  std::string name(int v) const {
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

  std::string eqn(const Eqn& e) const {
    std::string line;
    for (size_t i = 0; i < e.outputs.size(); ++i) line += (i ? " " : "") + typed(e.outputs[i]);
    line += " = " + std::string(prim_name(e.prim));
    if (!e.params.items().empty()) {
      line += "[";
      for (size_t i = 0; i < e.params.items().size(); ++i) {
        const auto& [name, value] = e.params.items()[i];
        std::optional<std::string> text;
        if (param_printer_) text = param_printer_(name, value);
        std::string rendered = text ? *text : param_str(value);
        // A nested program's lines sit under its equation.
        for (size_t at = rendered.find('\n'); at != std::string::npos;
             at = rendered.find('\n', at + 1)) {
          rendered.insert(at + 1, "      ");
        }
        line += (i ? " " : "") + name + "=" + rendered;
      }
      line += "]";
    }
    for (const Atom& a : e.inputs) line += " " + atom(a);
    return line;
  }

 private:
  void define(int v) {
    if (v >= 0 && size_t(v) < number_.size() && number_[size_t(v)] < 0) {
      number_[size_t(v)] = next_++;
    }
  }

  const Program& p_;
  const ParamPrinter& param_printer_;
  std::vector<int> number_;
  int next_ = 0;
};

}  // namespace

std::string to_string(const Program& p, const ParamPrinter& param_printer) {
  const Printer print(p, param_printer);
  std::string head = "{ lambda ";
  for (size_t i = 0; i < p.constvars.size(); ++i)
    head += (i ? " " : "") + print.typed(p.constvars[i]);
  head += "; ";
  for (size_t i = 0; i < p.invars.size(); ++i) head += (i ? " " : "") + print.typed(p.invars[i]);
  head += ". let";
  std::vector<std::string> lines;
  for (const Eqn& e : p.eqns) lines.push_back(print.eqn(e));
  std::string out = "in (";
  for (size_t i = 0; i < p.outvars.size(); ++i) out += (i ? ", " : "") + print.atom(p.outvars[i]);
  out += p.outvars.size() == 1 ? ",) }" : ") }";
  // One line when it fits in 80 columns, as JAX's pretty-printer does; else one
  // equation a line.
  std::string flat = head;
  for (const std::string& l : lines) flat += " " + l;
  flat += " " + out;
  if (flat.size() <= 80 && flat.find('\n') == std::string::npos) return flat;
  std::string text = head + "\n";
  for (const std::string& l : lines) text += "    " + l + "\n";
  return text + "  " + out;
}

std::string eqn_str(const Program& p, size_t e) { return Printer(p, nullptr).eqn(p.eqns[e]); }

}  // namespace parax::core
