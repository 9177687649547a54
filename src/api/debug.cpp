#include "parax/debug.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "sharding/visualize.h"

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

void visualize_sharding(const Shape& shape, const Sharding& sharding,
                        const VisualizeOptions& options, std::ostream& os) {
  if (shape.empty() || shape.size() > 2) {
    throw ValueError("`visualize_sharding` only works for shapes with 1 and 2 dimensions.");
  }
  std::vector<std::pair<int, Index>> indices;
  for (auto& [device, index] : sharding.devices_indices_map(shape)) {
    indices.emplace_back(device.id(), index);
  }
  detail::VisualizeParams params;
  params.scale = options.scale;
  params.min_width = options.min_width;
  params.max_width = options.max_width;
  params.color = options.use_color && terminal_wants_color(os);
  std::string platform(sharding.device_assignment().front().platform());
  os << detail::render_sharding(shape, platform, indices, params) << std::flush;
}

void visualize_array_sharding(const Array& x, const VisualizeOptions& options) {
  visualize_array_sharding(x, std::cout, options);
}

void visualize_array_sharding(const Array& x, std::ostream& os, const VisualizeOptions& options) {
  visualize_sharding(x.shape(), x.sharding(), options, os);
}

}  // namespace parax::debug
