#pragma once

#include <string>

namespace parax::debug {
// Returns `text` with every number that stands alone wrapped in bold cyan, as rich's
// highlighter shows the monochrome layout on a colour terminal.
std::string highlight_numbers(const std::string& text);
}  // namespace parax::debug
