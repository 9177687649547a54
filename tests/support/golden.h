// Reads the golden files that tools/*.py made with JAX: one `name<TAB>text` record a line,
// text escaped as Python's unicode_escape.
#pragma once

#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <parax/custom_derivatives.h>
#include <parax/errors.h>

namespace parax::testing {

inline std::string unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    char c = s[++i];
    if (c == 'n')
      out += '\n';
    else if (c == 't')
      out += '\t';
    else if (c == 'r')
      out += '\r';
    else if (c == 'x') {
      out += char(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

// Returns the records of tests/golden/<file>, keyed by name.
inline std::map<std::string, std::string> read_golden(const std::string& file) {
  std::ifstream in(std::string(PARAX_GOLDEN_DIR) + "/" + file);
  if (!in) throw std::runtime_error("cannot open golden file " + file);
  std::map<std::string, std::string> records;
  std::string line;
  while (std::getline(in, line)) {
    size_t tab = line.find('\t');
    if (tab == std::string::npos) continue;
    records[line.substr(0, tab)] = unescape(line.substr(tab + 1));
  }
  return records;
}

// Splits a record's fields at `sep` (`dtype|weak|shape|values`, then the values at ','); a
// trailing separator gives a last empty field.
inline std::vector<std::string> split_fields(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(s);
  while (std::getline(in, part, sep)) parts.push_back(part);
  if (!s.empty() && s.back() == sep) parts.push_back("");
  return parts;
}

// An exception as the golden scripts record it: "!", Python's class name, ": ", the message.
inline std::string error_record(const std::exception& e) {
  const char* kind = "Error";
  if (dynamic_cast<const AttributeError*>(&e)) {
    kind = "AttributeError";
  } else if (dynamic_cast<const UnexpectedTracerError*>(&e)) {
    kind = "UnexpectedTracerError";
  } else if (dynamic_cast<const NotImplementedError*>(&e)) {
    kind = "NotImplementedError";
  } else if (dynamic_cast<const IndexError*>(&e)) {
    kind = "IndexError";
  } else if (dynamic_cast<const TypeError*>(&e)) {
    kind = "TypeError";
  } else if (dynamic_cast<const ValueError*>(&e)) {
    kind = "ValueError";
  }
  return std::string("!") + kind + ": " + e.what();
}

// The record of the parax::Error that f raises, or "no error".
template <class F>
std::string error_record_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return error_record(e);
  }
  return "no error";
}

}  // namespace parax::testing
