// JAX's visualize_sharding (jax/_src/debugging.py) draws a grid of cells with the `rich`
// library. Matching its output byte for byte means reproducing rich's layout decisions,
// so the second half of this file is a small port of the parts of rich 13 that run for
// that one table: column measuring and collapsing, word wrapping with an ellipsis,
// Padding/Align, row shaping, box drawing, and the console's final crop. Each function
// names the rich function it mirrors, so a reader can compare them side by side.
#include "sharding/visualize.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "base/sizes.h"
#include "parax/errors.h"

namespace parax::detail {
namespace {

using Int = std::int64_t;

// ---------------------------------------------------------------------------------------
// Python arithmetic that differs from C++'s.

// Python's divmod rounds toward minus infinity; JAX's paddings depend on it.
std::pair<Int, Int> py_divmod(Int a, Int b) {
  Int q = a / b;
  Int r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) {
    --q;
    r += b;
  }
  return {q, r};
}

// Python's round() on a float: halves go to the even neighbour, which is what the
// default floating-point rounding mode does.
Int py_round(double x) { return static_cast<Int>(std::nearbyint(x)); }

// ---------------------------------------------------------------------------------------
// The grid of cells JAX hands to rich.

struct Rgb {
  int r = 0, g = 0, b = 0;
};

// Foreground and background of a cell in colour mode.
struct CellColors {
  Rgb text;
  Rgb background;
};

// Style index of unstyled text (every segment in monochrome mode).
constexpr int kPlain = -1;

// One `Padding(Align(label, "center"), (top, right, bottom, left))` of JAX's table.
struct Cell {
  std::u32string label;
  Int top = 0, right = 0, bottom = 0, left = 0;
  int style = kPlain;  // index into Layout::colors
};

struct Layout {
  Int rows = 0, cols = 0;
  std::vector<Cell> cells;  // row-major
  std::vector<CellColors> colors;

  const Cell& at(Int row, Int col) const { return cells[row * cols + col]; }
};

// What JAX accumulates per chunk key: the devices holding it and its relative size.
struct Chunk {
  std::set<int> device_ids;
  double width_frac = 0;
  std::optional<double> height_frac;  // none for rank 1
};

// Python's slice length as JAX computes it: an open stop means the whole dimension.
Int slice_size(Int dim, const Slice& s) { return s.stop ? *s.stop - s.start.value_or(0) : dim; }

// Which chunk along one dimension each shard covers. Where every shard passes JAX's
// assertion this is its _slice_to_chunk_idx (start / size). Otherwise (an uneven tiling,
// the last shard shorter as a padded sharding leaves it) it is the rank of the shard's
// start among the distinct starts, each chunk drawn as wide as its slice; shards that then
// do not tile the dimension (overlapping or leaving a gap) raise ValueError.
class ChunkAxis {
 public:
  ChunkAxis(Int dim, const std::vector<std::pair<int, Index>>& devices_indices, size_t axis)
      : dim_(dim) {
    // JAX's rule, where its assertion holds (output identical to JAX's whenever it has one)
    even_ = std::all_of(devices_indices.begin(), devices_indices.end(), [&](const auto& di) {
      const Slice& s = di.second[axis];
      const Int size = slice_size(dim, s);
      return s.is_full() || (size > 0 && s.begin(dim) % size == 0 && dim % size == 0);
    });
    if (even_) return;
    std::map<Int, Int> stops;  // start -> stop
    for (const auto& [id, index] : devices_indices) {
      const Slice& s = index[axis];
      auto [it, fresh] = stops.emplace(s.begin(dim), s.end(dim));
      if (!fresh && it->second != s.end(dim)) fail(s);
    }
    Int expect = 0;
    for (const auto& [start, stop] : stops) {
      if (start != expect || stop <= start) fail(Slice{start, stop});
      starts_.push_back(start);
      expect = stop;
    }
    if (expect != dim) fail(Slice{starts_.back(), expect});
  }
  Int index_of(const Slice& s) const {
    if (even_) return s.is_full() ? 0 : s.begin(dim_) / slice_size(dim_, s);
    return Int(std::lower_bound(starts_.begin(), starts_.end(), s.begin(dim_)) - starts_.begin());
  }

 private:
  [[noreturn]] void fail(const Slice& s) const {
    throw ValueError("`visualize_sharding` needs shards that tile the array; got " +
                     index_str({s}) + " of a dimension of size " + std::to_string(dim_));
  }
  Int dim_;
  bool even_ = false;
  std::vector<Int> starts_;  // of the uneven tiling's chunks, ascending
};

using ChunkMap = std::map<std::pair<Int, Int>, Chunk>;

// Groups devices by the (row, column) chunk they hold, as JAX's loop over
// devices_indices_map does (later devices overwrite the sizes of earlier ones).
ChunkMap collect_chunks(const Shape& shape,
                        const std::vector<std::pair<int, Index>>& devices_indices) {
  for (const auto& [id, index] : devices_indices) {
    if (index.size() != shape.size()) {
      throw ValueError("`visualize_sharding`: index " + index_str(index) +
                       " does not match shape " + shape_str(shape));
    }
  }
  std::vector<ChunkAxis> axes;
  for (size_t d = 0; d < shape.size(); ++d) axes.emplace_back(shape[d], devices_indices, d);
  ChunkMap chunks;
  for (const auto& [id, index] : devices_indices) {
    std::pair<Int, Int> key;
    double width_frac;
    std::optional<double> height_frac;
    if (shape.size() == 2) {
      key = {axes[0].index_of(index[0]), axes[1].index_of(index[1])};
      height_frac = double(slice_size(shape[0], index[0])) / double(shape[0]);
      width_frac = double(slice_size(shape[1], index[1])) / double(shape[1]);
    } else {
      key = {0, axes[0].index_of(index[0])};
      width_frac = double(slice_size(shape[0], index[0])) / double(shape[0]);
    }
    Chunk& chunk = chunks[key];
    chunk.width_frac = width_frac;
    chunk.height_frac = height_frac;
    chunk.device_ids.insert(id);
  }
  return chunks;
}

std::u32string make_label(std::string_view platform, const std::set<int>& ids) {
  // Platform names are ASCII, so one byte is one character and one terminal cell.
  std::string label;
  for (char c : platform) label += char(std::toupper(static_cast<unsigned char>(c)));
  label += ' ';
  bool first = true;
  for (int id : ids) {
    if (!first) label += ',';
    label += std::to_string(id);
    first = false;
  }
  return std::u32string(label.begin(), label.end());
}

// matplotlib's "tab20b" colormap, the one JAX uses when matplotlib is installed.
constexpr Rgb kTab20b[20] = {{57, 59, 121},  {82, 84, 163},  {107, 110, 207}, {156, 158, 222},
                             {99, 121, 57},  {140, 162, 82}, {181, 207, 107}, {206, 219, 156},
                             {140, 109, 49}, {189, 158, 57}, {231, 186, 82},  {231, 203, 148},
                             {132, 60, 57},  {173, 73, 74},  {214, 97, 107},  {231, 150, 156},
                             {123, 65, 115}, {165, 81, 148}, {206, 109, 189}, {222, 158, 214}};

// tab20b(v) for v in [0, 1]: matplotlib scales by 20 and truncates, keeping 1.0 in range.
Rgb tab20b(double v) {
  int index = static_cast<int>(v * 20.0);
  return kTab20b[std::min(index, 19)];
}

// JAX's make_color_iter: n evenly spaced colormap positions (numpy.linspace), visited
// with a stride of about n/2 so that neighbouring cells get contrasting colours.
std::vector<CellColors> cell_colors(Int n) {
  std::vector<CellColors> colors;
  double step = n > 1 ? 1.0 / double(n - 1) : 0.0;
  Int idx = 0;
  for (Int i = 0; i < n; ++i) {
    double v = (n > 1 && idx == n - 1) ? 1.0 : double(idx) * step;
    Rgb bg = tab20b(v);
    // JAX's _get_text_color: black text on light backgrounds.
    bool light = bg.r * 0.299 + bg.g * 0.587 + bg.b * 0.114 > 186;
    colors.push_back({light ? Rgb{0, 0, 0} : Rgb{255, 255, 255}, bg});
    idx = (idx + n / 2 + (n % 2 == 0 ? 1 : 0)) % n;
  }
  return colors;
}

// JAX's size and padding arithmetic for one cell.
Cell make_cell(std::u32string label, const Chunk& chunk, Int base_width, Int base_height,
               const VisualizeParams& params) {
  constexpr double kHeightToWidth = 2.5;
  double raw_width = std::trunc(chunk.width_frac * double(base_width) * kHeightToWidth);
  Int height = chunk.height_frac ? Int(*chunk.height_frac * double(base_height)) : 1;
  Int width =
      Int(std::min(std::max(raw_width, double(params.min_width)), double(params.max_width)));
  Cell cell;
  auto [left, left_rem] = py_divmod(width - Int(label.size()) - 2, 2);
  auto [top, top_rem] = py_divmod(height - 2, 2);
  Int grow = params.color ? 1 : 0;  // colour mode has no borders, so it pads more
  cell.left = std::max<Int>(left + grow, 0);
  cell.right = std::max<Int>(left + left_rem + grow, 0);
  cell.top = std::max<Int>(top + grow, 0);
  cell.bottom = std::max<Int>(top + top_rem + grow, 0);
  cell.label = std::move(label);
  return cell;
}

Layout build_layout(const Shape& shape, std::string_view platform,
                    const std::vector<std::pair<int, Index>>& devices_indices,
                    const VisualizeParams& params) {
  if (devices_indices.empty()) throw ValueError("`visualize_sharding`: no devices given");
  for (Int dim : shape) {
    if (dim <= 0) throw ValueError("`visualize_sharding`: division by zero (empty shape)");
  }
  if (!std::isfinite(params.scale)) {
    throw ValueError("`visualize_sharding`: scale must be a finite number; got " +
                     std::to_string(params.scale));
  }
  // The text has about 10 * scale lines of up to max_width cells, held a few times over
  // (4-byte cells) while laid out: refuse what memory cannot hold instead of bad_alloc.
  const double lines = std::abs(10 * params.scale) + 4;
  const double bytes = lines * (double(std::max(params.max_width, 1)) + 8) * 4 * 4;
  if (bytes >= double(base::memory_limit_bytes())) {
    base::throw_out_of_memory("visualize_sharding", bytes >= 0x1p64 ? UINT64_MAX : uint64_t(bytes));
  }
  Int base_height = Int(10 * params.scale);
  double aspect = double(shape.size() == 2 ? shape[1] : 1) / double(shape[0]);
  // Cells are at most max_width wide anyway; the clamp keeps a long thin shape's width
  // (say (1, 2^62)) inside Int.
  Int base_width = Int(std::min(double(base_height) * aspect, 0x1p52));

  ChunkMap chunks = collect_chunks(shape, devices_indices);
  Layout layout;
  for (const auto& [key, chunk] : chunks) {
    layout.rows = std::max(layout.rows, key.first + 1);
    layout.cols = std::max(layout.cols, key.second + 1);
  }
  if (params.color) layout.colors = cell_colors(layout.rows * layout.cols);
  for (Int r = 0; r < layout.rows; ++r) {
    for (Int c = 0; c < layout.cols; ++c) {
      auto it = chunks.find({r, c});
      if (it == chunks.end()) {
        throw ValueError("`visualize_sharding`: no device holds chunk (" + std::to_string(r) +
                         ", " + std::to_string(c) + ")");
      }
      Cell cell = make_cell(make_label(platform, it->second.device_ids), it->second, base_width,
                            base_height, params);
      if (params.color) cell.style = int(layout.cells.size());
      layout.cells.push_back(std::move(cell));
    }
  }
  return layout;
}

// ---------------------------------------------------------------------------------------
// The port of rich. Every character of a label, an ellipsis or a box line takes one
// terminal cell, so a u32string's length is its width in cells.

// rich.segment.Segment: a run of text in one style.
struct Segment {
  std::u32string text;
  int style = kPlain;
};
using Line = std::vector<Segment>;
using Lines = std::vector<Line>;

std::u32string spaces(Int n) { return std::u32string(std::max<Int>(n, 0), U' '); }

Int line_length(const Line& line) {
  Int n = 0;
  for (const Segment& s : line) n += Int(s.text.size());
  return n;
}

// Segment.adjust_line_length: pad a line to `length` with a new segment, or crop it
// inside the segment that reaches `length`.
Line adjust_line_length(const Line& line, Int length, int pad_style, bool pad) {
  Int current = line_length(line);
  if (current < length) {
    Line padded = line;
    if (pad) padded.push_back({spaces(length - current), pad_style});
    return padded;
  }
  if (current == length) return line;
  Line cropped;
  Int used = 0;
  for (const Segment& s : line) {
    if (used + Int(s.text.size()) < length) {
      cropped.push_back(s);
      used += Int(s.text.size());
    } else {
      cropped.push_back({s.text.substr(0, length - used), s.style});
      break;
    }
  }
  return cropped;
}

// A word as rich's regex `\s*\S+\s*` finds it: leading spaces, the word, and trailing
// spaces up to the next word. (Labels contain no whitespace other than ' '.)
struct Word {
  size_t start;     // first character, including leading spaces
  size_t core_end;  // one past the last non-space
  size_t end;       // one past the trailing spaces
};

std::vector<Word> split_words(const std::u32string& text) {
  std::vector<Word> words;
  size_t pos = 0;
  for (;;) {
    size_t core = text.find_first_not_of(U' ', pos);
    if (core == std::u32string::npos) break;
    size_t core_end = std::min(text.find(U' ', core), text.size());
    size_t end = std::min(text.find_first_not_of(U' ', core_end), text.size());
    words.push_back({pos, core_end, end});
    pos = end;
  }
  return words;
}

// rich._wrap.divide_line without folding: offsets at which to break `text` so words fit
// in `width`. A word longer than the width keeps a line of its own (cropped later).
std::vector<size_t> divide_line(const std::u32string& text, Int width) {
  std::vector<size_t> breaks;
  Int offset = 0;  // cells used on the current line
  for (const Word& word : split_words(text)) {
    Int length = Int(word.core_end - word.start);  // trailing spaces may overhang
    Int cells = Int(word.end - word.start);
    if (width - offset >= length) {
      offset += cells;
    } else if (length > width || (offset && word.start)) {
      if (word.start) breaks.push_back(word.start);
      offset = cells;
    }
  }
  return breaks;
}

// Text.truncate with overflow "ellipsis": too long ends in '…', too short may be padded.
void truncate(std::u32string& text, Int width, bool pad) {
  Int length = Int(text.size());
  if (length > width) {
    text = text.substr(0, width - 1) + U'…';
  } else if (pad && length < width) {
    text += spaces(width - length);
  }
}

// Text.wrap with justify "left" and overflow "ellipsis" (the column defaults): every
// returned line is exactly `width` cells.
std::vector<std::u32string> wrap_label(const std::u32string& label, Int width) {
  std::vector<size_t> offsets = divide_line(label, width);
  offsets.insert(offsets.begin(), 0);
  offsets.push_back(label.size());
  std::vector<std::u32string> lines;
  for (size_t i = 0; i + 1 < offsets.size(); ++i) {
    std::u32string line = label.substr(offsets[i], offsets[i + 1] - offsets[i]);
    // Text.rstrip_end: trailing spaces past the width are dropped, not ellipsised.
    Int excess = Int(line.size()) - width;
    if (excess > 0) {
      size_t kept = line.find_last_not_of(U' ') + 1;
      Int trailing = Int(line.size() - kept);
      line.resize(line.size() - std::min(trailing, excess));
    }
    truncate(line, width, /*pad=*/true);
    lines.push_back(std::move(line));
  }
  return lines;
}

// Console.render_lines(Align(label, "center"), width, style): the label is wrapped at
// its own width (never wider than the space) and centred in `width`.
Lines render_align(const Cell& cell, Int width) {
  if (width < 1) return {};  // Console.render draws nothing in no space
  Int text_width = std::min(Int(cell.label.size()), width);
  Int excess = width - text_width;
  Int left = excess / 2;
  Lines lines;
  for (std::u32string& text : wrap_label(cell.label, text_width)) {
    Line line;
    if (left) line.push_back({spaces(left), cell.style});
    line.push_back({std::move(text), cell.style});
    if (excess - left) line.push_back({spaces(excess - left), cell.style});
    lines.push_back(adjust_line_length(line, width, cell.style, true));
  }
  return lines;
}

// Console.render_lines(Padding(...), width) as the table calls it for one cell.
Lines render_cell(const Cell& cell, Int width) {
  if (width < 1) return {};
  Lines inner = render_align(cell, std::max<Int>(width - cell.left - cell.right, 0));
  Line blank = {{spaces(width), cell.style}};
  Lines lines(cell.top, blank);
  for (Line& content : inner) {
    Line line;
    if (cell.left) line.push_back({spaces(cell.left), cell.style});
    line.insert(line.end(), content.begin(), content.end());
    if (cell.right) line.push_back({spaces(cell.right), cell.style});
    lines.push_back(std::move(line));
  }
  lines.insert(lines.end(), cell.bottom, blank);
  for (Line& line : lines) line = adjust_line_length(line, width, kPlain, true);
  return lines;
}

// Measurement.get(Padding(Align(label))).maximum at `max_width`. (The minimum never
// changes the widths rich picks for this table, so it is not tracked.)
Int measure_cell(const Cell& cell, Int max_width) {
  if (max_width < 1) return 0;
  Int extra = cell.left + cell.right;
  if (max_width - extra < 1) return max_width;
  Int label = std::min(Int(cell.label.size()), max_width);
  return std::min(label + extra, max_width);
}

// Table._measure_column, maximum only.
Int measure_column(const Layout& layout, Int col, Int max_width) {
  if (max_width < 1) return 0;
  Int widest = 0;
  for (Int r = 0; r < layout.rows; ++r) {
    widest = std::max(widest, measure_cell(layout.at(r, col), max_width));
  }
  return std::min(widest, max_width);
}

Int sum(const std::vector<Int>& v) { return std::accumulate(v.begin(), v.end(), Int(0)); }

// rich._ratio.ratio_reduce: take `total` away from `values` in proportion to `ratios`,
// at most `maximums[i]` from each.
std::vector<Int> ratio_reduce(Int total, std::vector<Int> ratios, const std::vector<Int>& maximums,
                              const std::vector<Int>& values) {
  for (size_t i = 0; i < ratios.size(); ++i) {
    if (!maximums[i]) ratios[i] = 0;
  }
  Int total_ratio = sum(ratios);
  if (!total_ratio) return values;
  Int remaining = total;
  std::vector<Int> result;
  for (size_t i = 0; i < values.size(); ++i) {
    if (ratios[i] && total_ratio > 0) {
      Int share = py_round(double(ratios[i] * remaining) / double(total_ratio));
      Int taken = std::min(maximums[i], share);
      result.push_back(values[i] - taken);
      remaining -= taken;
      total_ratio -= ratios[i];
    } else {
      result.push_back(values[i]);
    }
  }
  return result;
}

// Table._collapse_widths with every column wrappable: repeatedly shave the widest
// columns down towards the next widest until the total fits.
std::vector<Int> collapse_widths(std::vector<Int> widths, Int max_width) {
  Int total = sum(widths);
  Int excess = total - max_width;
  while (total && excess > 0) {
    Int widest = *std::max_element(widths.begin(), widths.end());
    Int second = 0;
    for (Int w : widths) {
      if (w != widest) second = std::max(second, w);
    }
    Int difference = widest - second;
    if (!difference) break;
    std::vector<Int> ratios;
    for (Int w : widths) ratios.push_back(w == widest ? 1 : 0);
    std::vector<Int> max_reduce(widths.size(), std::min(excess, difference));
    widths = ratio_reduce(excess, ratios, max_reduce, widths);
    total = sum(widths);
    excess = total - max_width;
  }
  return widths;
}

// Table._calculate_column_widths for a table that neither expands nor has fixed or
// minimum widths: natural widths, collapsed when they exceed `max_width`.
std::vector<Int> column_widths(const Layout& layout, Int max_width) {
  std::vector<Int> widths;
  for (Int c = 0; c < layout.cols; ++c) {
    Int w = measure_column(layout, c, max_width);
    widths.push_back(w ? w : 1);
  }
  if (sum(widths) <= max_width) return widths;
  widths = collapse_widths(widths, max_width);
  Int total = sum(widths);
  if (total > max_width) {
    std::vector<Int> ones(widths.size(), 1);
    widths = ratio_reduce(total - max_width, ones, widths, widths);
  }
  // Measuring again at the reduced widths can only shrink a column further.
  for (Int c = 0; c < layout.cols; ++c) widths[c] = measure_column(layout, c, widths[c]);
  return widths;
}

// Table._render for one row: each cell rendered at its column width, shorter cells
// padded at the bottom (vertical "top") to the row's height.
std::vector<Lines> render_row(const Layout& layout, Int row, const std::vector<Int>& widths) {
  std::vector<Lines> cells;
  Int row_height = 0;
  for (Int c = 0; c < layout.cols; ++c) {
    cells.push_back(render_cell(layout.at(row, c), widths[c]));
    row_height = std::max(row_height, Int(cells.back().size()));
  }
  // rich draws at least one line per row, even when every cell rendered empty.
  Int max_height = std::max<Int>(row_height, 1);
  for (Int c = 0; c < layout.cols; ++c) {
    Lines& lines = cells[c];
    for (Line& line : lines) line = adjust_line_length(line, widths[c], kPlain, true);
    lines.resize(max_height, Line{{spaces(widths[c]), kPlain}});
  }
  return cells;
}

// rich.box.SQUARE drawn across `widths`: e.g. left "├", fill "─", cross "┼", right "┤".
Line box_line(const std::vector<Int>& widths, char32_t left, char32_t cross, char32_t right) {
  std::u32string text(1, left);
  for (size_t i = 0; i < widths.size(); ++i) {
    if (i) text += cross;
    text += std::u32string(widths[i], U'─');
  }
  text += right;
  return {{text, kPlain}};
}

// Table._render: the rows, with box-drawing borders and lines between rows unless in
// colour mode (box=None, show_lines=False).
Lines render_table(const Layout& layout, Int console_width, bool boxed) {
  Int extra_width = boxed ? layout.cols + 1 : 0;
  std::vector<Int> widths = column_widths(layout, std::max<Int>(console_width - extra_width, 0));
  Lines out;
  if (boxed) out.push_back(box_line(widths, U'┌', U'┬', U'┐'));
  const Segment vertical{U"│", kPlain};
  for (Int r = 0; r < layout.rows; ++r) {
    std::vector<Lines> cells = render_row(layout, r, widths);
    for (size_t i = 0; i < cells[0].size(); ++i) {
      Line line;
      if (boxed) line.push_back(vertical);
      for (Int c = 0; c < layout.cols; ++c) {
        if (boxed && c) line.push_back(vertical);
        line.insert(line.end(), cells[c][i].begin(), cells[c][i].end());
      }
      if (boxed) line.push_back(vertical);
      out.push_back(std::move(line));
    }
    if (boxed && r + 1 < layout.rows) out.push_back(box_line(widths, U'├', U'┼', U'┤'));
  }
  if (boxed) out.push_back(box_line(widths, U'└', U'┴', U'┘'));
  return out;
}

void append_utf8(std::string& out, const std::u32string& text) {
  for (char32_t c : text) {
    if (c < 0x80) {
      out += char(c);
    } else if (c < 0x800) {
      out += char(0xC0 | (c >> 6));
      out += char(0x80 | (c & 0x3F));
    } else {
      out += char(0xE0 | (c >> 12));
      out += char(0x80 | ((c >> 6) & 0x3F));
      out += char(0x80 | (c & 0x3F));
    }
  }
}

std::string rgb_codes(const Rgb& c) {
  return std::to_string(c.r) + ";" + std::to_string(c.g) + ";" + std::to_string(c.b);
}

// Console._render_buffer on a truecolor terminal: every non-empty styled segment is
// wrapped in its own escape sequence and reset, even next to one of the same style.
void append_segment(std::string& out, const Segment& s, const Layout& layout) {
  if (s.style == kPlain || s.text.empty()) {
    append_utf8(out, s.text);
    return;
  }
  const CellColors& colors = layout.colors[s.style];
  out += "\x1b[38;2;" + rgb_codes(colors.text) + ";48;2;" + rgb_codes(colors.background) + "m";
  append_utf8(out, s.text);
  out += "\x1b[0m";
}

}  // namespace

std::string render_sharding(const Shape& shape, std::string_view platform,
                            const std::vector<std::pair<int, Index>>& devices_indices,
                            const VisualizeParams& params) {
  if (shape.size() < 1 || shape.size() > 2) {
    throw ValueError("`visualize_sharding` only works for shapes with 1 and 2 dimensions.");
  }
  Layout layout = build_layout(shape, platform, devices_indices, params);
  // JAX's console is `max_width` wide; rich renders nothing into a console without room.
  Int console_width = params.max_width;
  if (console_width < 1) return "";
  std::string out;
  for (const Line& line : render_table(layout, console_width, !params.color)) {
    // Console.print crops every line to the console width.
    for (const Segment& s : adjust_line_length(line, console_width, kPlain, false)) {
      append_segment(out, s, layout);
    }
    out += '\n';
  }
  return out;
}

namespace {

// One grid of two (or one) dimensions, as render_array_sharding and render_sharding_svg
// draw them: a block of the other dimensions ("" when there are none) and its shards.
struct Grid {
  std::string header;
  Shape shape;
  std::vector<std::pair<int, Index>> cells;
};

std::vector<Grid> split_grids(const Shape& shape,
                              const std::vector<std::pair<int, Index>>& devices_indices,
                              const std::vector<int>& dims_arg) {
  const int rank = int(shape.size());
  if (rank == 0) {  // one cell, held by every device
    Grid g{"", {1}, {}};
    for (const auto& [id, index] : devices_indices) g.cells.emplace_back(id, Index{Slice{}});
    return {g};
  }
  if (dims_arg.empty() && rank <= 2) return {Grid{"", shape, devices_indices}};
  std::vector<int> dims = dims_arg.empty() ? std::vector<int>{rank - 2, rank - 1} : dims_arg;
  auto dims_str = [&] {
    std::string out;
    for (int d : dims_arg) out += (out.empty() ? "" : ", ") + std::to_string(d);
    return "{" + out + "}";
  };
  if (dims.size() > 2) {
    throw ValueError("`visualize_sharding`: dims " + dims_str() +
                     " names more than the two dimensions a grid draws");
  }
  for (int& d : dims) {
    if (d < -rank || d >= rank) {
      throw ValueError("`visualize_sharding`: dims " + dims_str() + " is out of range for shape " +
                       shape_str(shape));
    }
    if (d < 0) d += rank;
  }
  if (dims.size() == 2 && dims[0] == dims[1]) {
    throw ValueError("`visualize_sharding`: dims " + dims_str() + " names one dimension twice");
  }
  // One grid per block of the other dimensions, in the order of their starts.
  using Block = std::vector<std::pair<Int, Int>>;  // (start, stop) of each other dimension
  std::map<Block, std::vector<std::pair<int, Index>>> blocks;
  for (const auto& [id, index] : devices_indices) {
    if (int(index.size()) != rank) {
      throw ValueError("`visualize_sharding`: index " + index_str(index) +
                       " does not match shape " + shape_str(shape));
    }
    Block block;
    for (int d = 0; d < rank; ++d) {
      if (std::find(dims.begin(), dims.end(), d) == dims.end()) {
        block.emplace_back(index[size_t(d)].begin(shape[size_t(d)]),
                           index[size_t(d)].end(shape[size_t(d)]));
      }
    }
    Index drawn;
    for (int d : dims) drawn.push_back(index[size_t(d)]);
    blocks[block].emplace_back(id, drawn);
  }
  Shape drawn_shape;
  for (int d : dims) drawn_shape.push_back(shape[size_t(d)]);
  const char* names[2] = {dims.size() == 2 ? "rows" : "cols", "cols"};
  std::vector<Grid> grids;
  for (const auto& [block, cells] : blocks) {
    std::string header;
    if (rank > int(dims.size())) {  // which block, and which dimensions are drawn
      size_t other = 0;
      for (int d = 0; d < rank; ++d) {
        header += d == 0 ? "[" : ", ";
        auto drawn = std::find(dims.begin(), dims.end(), d);
        if (drawn != dims.end()) {
          header += names[drawn - dims.begin()];
          continue;
        }
        const auto [start, stop] = block[other++];
        header += start == 0 && stop == shape[size_t(d)]
                      ? std::string(":")
                      : std::to_string(start) + ":" + std::to_string(stop);
      }
      header += "]";
    }
    grids.push_back(Grid{header, drawn_shape, cells});
  }
  return grids;
}

std::string hex(const Rgb& c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", c.r, c.g, c.b);
  return buf;
}

}  // namespace

std::string xml_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string render_array_sharding(const Shape& shape, std::string_view platform,
                                  const std::vector<std::pair<int, Index>>& devices_indices,
                                  const VisualizeParams& params, const std::vector<int>& dims) {
  std::string out;
  for (const Grid& g : split_grids(shape, devices_indices, dims)) {
    if (!g.header.empty()) out += g.header + "\n";
    out += render_sharding(g.shape, platform, g.cells, params);
  }
  return out;
}

std::string render_sharding_svg(const Shape& shape, std::string_view platform,
                                const std::vector<std::pair<int, Index>>& devices_indices,
                                const SvgParams& params, const std::vector<int>& dims) {
  if (params.width < 16 || params.width > 16384) {
    throw ValueError("`sharding_svg`: width must be in [16, 16384] pixels; got " +
                     std::to_string(params.width));
  }
  if (devices_indices.empty()) throw ValueError("`sharding_svg`: no devices given");
  for (Int d : shape) {
    if (d <= 0) throw ValueError("`sharding_svg`: nothing to draw for shape " + shape_str(shape));
  }
  constexpr int kHeader = 24;  // a block's header line
  const int width = params.width;
  std::string body;
  int y = 0;
  for (const Grid& g : split_grids(shape, devices_indices, dims)) {
    const ChunkMap chunks = collect_chunks(g.shape, g.cells);
    Int rows = 0, cols = 0;
    for (const auto& [key, chunk] : chunks) {
      rows = std::max(rows, key.first + 1);
      cols = std::max(cols, key.second + 1);
    }
    // To scale: a column as wide as its share of the columns' dimension, a row as tall as
    // its share of the rows'; the grid as tall as the shape's aspect says (kept within
    // [1/8, 2] of its width so that extreme shapes stay visible).
    const double aspect = g.shape.size() == 2 ? double(g.shape[0]) / double(g.shape[1]) : 0.125;
    const int height = int(std::lround(std::clamp(aspect, 0.125, 2.0) * width));
    std::vector<double> col_frac(size_t(cols), 0), row_frac(size_t(rows), 1.0);
    for (const auto& [key, chunk] : chunks) {
      col_frac[size_t(key.second)] = chunk.width_frac;
      if (chunk.height_frac) row_frac[size_t(key.first)] = *chunk.height_frac;
    }
    auto edges = [](const std::vector<double>& fracs, int total) {
      std::vector<int> e{0};
      double sum = 0;
      for (double f : fracs) {
        sum += f;
        e.push_back(int(std::lround(sum * total)));
      }
      return e;
    };
    const std::vector<int> xs = edges(col_frac, width);
    const std::vector<int> ys = edges(row_frac, height);
    if (!g.header.empty()) {
      body += "  <text x=\"0\" y=\"" + std::to_string(y + 17) +
              "\" font-family=\"monospace\" font-size=\"14\" fill=\"#000000\">" +
              xml_escape(g.header) + "</text>\n";
      y += kHeader;
    }
    const std::vector<CellColors> colors = cell_colors(rows * cols);
    for (Int r = 0; r < rows; ++r) {
      for (Int c = 0; c < cols; ++c) {
        auto it = chunks.find({r, c});
        if (it == chunks.end()) {
          throw ValueError("`sharding_svg`: no device holds chunk (" + std::to_string(r) + ", " +
                           std::to_string(c) + ")");
        }
        const CellColors& color = colors[size_t(r * cols + c)];
        const int x0 = xs[size_t(c)], x1 = xs[size_t(c) + 1];
        const int y0 = y + ys[size_t(r)], y1 = y + ys[size_t(r) + 1];
        const std::u32string label32 = make_label(platform, it->second.device_ids);
        const std::string label(label32.begin(), label32.end());  // ASCII
        const double font = std::max(
            1.0, std::min({16.0, 0.45 * (y1 - y0), 1.6 * (x1 - x0) / double(label.size() + 1)}));
        char font_str[32];
        std::snprintf(font_str, sizeof font_str, "%.1f", font);
        body += "  <rect x=\"" + std::to_string(x0) + "\" y=\"" + std::to_string(y0) +
                "\" width=\"" + std::to_string(x1 - x0) + "\" height=\"" + std::to_string(y1 - y0) +
                "\" fill=\"" + hex(color.background) + "\"/>\n";
        body +=
            "  <text x=\"" + std::to_string(x0 + (x1 - x0) / 2) + "\" y=\"" +
            std::to_string(y0 + (y1 - y0) / 2) +
            "\" text-anchor=\"middle\" dominant-baseline=\"central\" font-family=\"sans-serif\" "
            "font-size=\"" +
            font_str + "\" fill=\"" + hex(color.text) + "\">" + xml_escape(label) + "</text>\n";
      }
    }
    y += height + (g.header.empty() ? 0 : 8);
  }
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(width) +
         "\" height=\"" + std::to_string(y) + "\" viewBox=\"0 0 " + std::to_string(width) + " " +
         std::to_string(y) + "\" shape-rendering=\"crispEdges\">\n" + body + "</svg>\n";
}

}  // namespace parax::detail
