#include "parax/debug.h"

#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <cstring>

#include <malloc.h>

#include "api/debug_internal.h"
#include "core/callbacks.h"
#include "core/trace.h"
#include "runtime/buffer.h"
#include "runtime/eager.h"
#include "sharding/visualize.h"
#include "transforms/jit_cache.h"

namespace parax::debug {
namespace {

// Colour only where rich would use it: a terminal on stdout that does not ask for none.
bool terminal_wants_color(const std::ostream& os) {
  if (&os != &std::cout || !isatty(STDOUT_FILENO)) return false;
  if (const char* no_color = std::getenv("NO_COLOR"); no_color && *no_color) return false;
  const char* term = std::getenv("TERM");
  return !(term && (std::strcmp(term, "dumb") == 0 || std::strcmp(term, "unknown") == 0));
}

}  // namespace

std::string highlight_numbers(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    bool word_before =
        i > 0 && (std::isalnum(static_cast<unsigned char>(text[i - 1])) || text[i - 1] == '_');
    if (!std::isdigit(static_cast<unsigned char>(text[i])) || word_before) {
      out += text[i++];
      continue;
    }
    size_t end = i;
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
    out += "\x1b[1;36m" + text.substr(i, end - i) + "\x1b[0m";
    i = end;
  }
  return out;
}

namespace {

// Each device's shard of an array of `shape`: padded ones (a dimension the sharding does
// not divide, as inside jit) as they are, devices holding only padding left out.
std::vector<std::pair<int, Index>> drawn_indices(const Shape& shape, const Sharding& sharding) {
  std::vector<std::pair<int, Index>> indices;
  for (auto& [device, index] : detail::padded_indices_map(sharding, shape)) {
    bool empty = false;
    for (size_t d = 0; d < index.size(); ++d) {
      empty = empty || (!index[d].is_full() && index[d].begin(shape[d]) == index[d].end(shape[d]));
    }
    if (!empty) indices.emplace_back(device.id(), std::move(index));
  }
  return indices;
}

}  // namespace

void visualize_sharding(const Shape& shape, const Sharding& sharding,
                        const VisualizeOptions& options, std::ostream& os) {
  const std::vector<std::pair<int, Index>> indices = drawn_indices(shape, sharding);
  detail::VisualizeParams params;
  params.scale = options.scale;
  params.min_width = options.min_width;
  params.max_width = options.max_width;
  const bool terminal = terminal_wants_color(os);
  params.color = options.use_color && terminal;
  std::string platform(sharding.device_assignment().front().platform());
  std::string text = detail::render_array_sharding(shape, platform, indices, params, options.dims);
  // Without colours, a colour terminal still gets rich's number highlighting.
  os << (terminal && !params.color ? highlight_numbers(text) : text) << std::flush;
}

std::string sharding_svg(const Shape& shape, const Sharding& sharding, const SvgOptions& options) {
  const std::string platform(sharding.device_assignment().front().platform());
  return detail::render_sharding_svg(shape, platform, drawn_indices(shape, sharding),
                                     {.width = options.width}, options.dims);
}

std::string sharding_svg(const Array& x, const SvgOptions& options) {
  if (core::tracer_of(x) != nullptr) {
    throw ValueError(
        "sharding_svg needs a concrete array; inside a transformed function, call it from "
        "inspect_array_sharding's callback with the shape and the sharding given");
  }
  return sharding_svg(x.shape(), x.sharding(), options);
}

std::string to_html(const Array& x, const SvgOptions& options) {
  const std::string svg = sharding_svg(x, options);
  std::string title = std::string(dtype_name(x.dtype())) + "[";  // float32[16,32]
  for (size_t d = 0; d < x.shape().size(); ++d) {
    title += (d ? "," : "") + std::to_string(x.shape()[d]);
  }
  title += "]";
  std::string sharding = x.sharding().to_string();
  const auto escape = detail::xml_escape;
  return "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + escape(title) +
         "</title></head>\n<body style=\"margin: 8px; font-family: sans-serif\">\n<p>" +
         escape(title) + " &mdash; <code>" + escape(sharding) + "</code></p>\n" + svg +
         "</body></html>\n";
}

void visualize_array_sharding(const Array& x, const VisualizeOptions& options) {
  visualize_array_sharding(x, std::cout, options);
}

void visualize_array_sharding(const Array& x, std::ostream& os, const VisualizeOptions& options) {
  const Shape shape = x.shape();
  inspect_array_sharding(
      x, [shape, &os, options](const Sharding& s) { visualize_sharding(shape, s, options, os); });
}

void inspect_array_sharding(const Array& x, std::function<void(const Sharding&)> callback) {
  if (!callback) throw ValueError("inspect_array_sharding: the callback is empty");
  if (core::tracer_of(x) == nullptr) {
    callback(x.sharding());
    return;
  }
  // Nothing reads the result: the compiler calls back, and the equation is gone after.
  (void)core::bind1(core::Prim::inspect_sharding, {x},
                    {{"callback", core::register_sharding_callback(std::move(callback))}});
}

CacheInfo cache_info(std::string_view cache) {
  detail::CacheCounters c;
  if (cache == "eager") {
    c = runtime::eager_cache_counters();
  } else if (cache == "jit_trace") {
    c = detail::jit_trace_counters();
  } else if (cache == "jit_compile") {
    c = runtime::program_cache_counters();
  } else {
    throw ValueError("[cache_info] unknown cache '" + std::string(cache) +
                     "'; expected 'eager', 'jit_trace' or 'jit_compile'");
  }
  return {c.hits, c.misses, c.evictions, c.size, c.capacity};
}

BufferCacheInfo buffer_cache_info() {
  const runtime::BufferCacheStats s = runtime::buffer_cache_stats();
  return {s.cached_bytes, s.cached_blocks, s.capacity_bytes, s.reused, s.mapped, s.released};
}

void clear_caches() {
  runtime::clear_compile_caches();
  runtime::trim_buffer_cache();
  malloc_trim(0);  // the freed executables' heap pages
}

}  // namespace parax::debug
