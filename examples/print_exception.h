// The tutorials' print_exception: the exception's type and message, wrapped as Python's
// textwrap.fill wraps it at 70 columns.
#pragma once

#include <iostream>
#include <sstream>
#include <string>

#include "parax/errors.h"

namespace tutorial {

// Python's textwrap.fill: the words of `text`, greedily packed into lines of `width`.
inline std::string fill(const std::string& text, size_t width = 70) {
  std::istringstream words(text);
  std::string word, line, out;
  while (words >> word) {
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      out += line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  return out + line;
}

inline void print_exception(const parax::ValueError& e) {
  std::cout << fill(std::string("ValueError: ") + e.what()) << "\n";
}

}  // namespace tutorial
