#include "base/nested_format.h"

#include <string_view>
#include <vector>

namespace parax::detail {
namespace {

std::string rstrip(const std::string& s) {
  size_t end = s.find_last_not_of(' ');
  return end == std::string::npos ? std::string() : s.substr(0, end + 1);
}

struct Formatter {
  const Shape& shape;
  const ElementText& element;
  const NestedFormat& fmt;
  std::vector<int64_t> strides;

  // Appends `word` to `line`, first moving to a new line if it would pass `width`
  // (numpy's _extendLine; a line holding only the indent is never wrapped).
  void extend(std::string& s, std::string& line, std::string_view word, int64_t width,
              const std::string& indent) const {
    bool wrap = int64_t(line.size() + word.size()) > width && line.size() > indent.size();
    if (wrap) {
      s += rstrip(line) + "\n";
      line = indent;
    }
    line += word;
  }

  std::string recurse(size_t axis, int64_t offset, const std::string& indent, int64_t width) const {
    if (axis == shape.size()) {
      std::string word;
      element(offset, word);
      return word;
    }
    const std::string next_indent = indent + " ";
    const int64_t next_width = width - 1;  // room for the closing ']'
    const int64_t len = shape[axis];
    const bool summary = fmt.summarize && 2 * fmt.edge_items < len;
    const int64_t lead = summary ? fmt.edge_items : 0;
    const int64_t trail = summary ? fmt.edge_items : len;
    auto child = [&](int64_t i) {
      return recurse(axis + 1, offset + i * strides[axis], next_indent, next_width);
    };
    std::string s;
    if (axis + 1 == shape.size()) {
      // Elements flow along lines; one reused buffer holds each element's text.
      std::string word;
      auto item = [&](int64_t i) -> std::string_view {
        word.clear();
        element(offset + i * strides[axis], word);
        return word;
      };
      const std::string sep_stripped = rstrip(fmt.separator);
      const int64_t elem_width = width - int64_t(std::max<size_t>(sep_stripped.size(), 1));
      std::string line = indent;
      for (int64_t i = 0; i < lead; ++i) {
        extend(s, line, item(i), elem_width, indent);
        line += fmt.separator;
      }
      if (summary) {
        extend(s, line, "...", elem_width, indent);
        line += fmt.separator;
      }
      for (int64_t i = trail; i > 1; --i) {
        extend(s, line, item(len - i), elem_width, indent);
        line += fmt.separator;
      }
      extend(s, line, item(len - 1), elem_width, indent);
      s += line;
    } else {
      const std::string line_sep =
          rstrip(fmt.separator) + std::string(shape.size() - axis - 1, '\n');
      for (int64_t i = 0; i < lead; ++i) s += indent + child(i) + line_sep;
      if (summary) s += indent + "..." + line_sep;
      for (int64_t i = trail; i > 1; --i) s += indent + child(len - i) + line_sep;
      s += indent + child(len - 1);
    }
    return "[" + s.substr(indent.size()) + "]";
  }
};

}  // namespace

std::string format_nested(const Shape& shape, const ElementText& element, const NestedFormat& fmt) {
  Formatter f{shape, element, fmt, std::vector<int64_t>(shape.size(), 1)};
  for (size_t d = shape.size(); d-- > 1;) f.strides[d - 1] = f.strides[d] * shape[d];
  const std::string indent(size_t(fmt.prefix_width) + 1, ' ');
  return f.recurse(0, 0, indent, fmt.line_width);
}

}  // namespace parax::detail
