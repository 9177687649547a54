// debug::sharding_svg and to_html, drawn by headless Chromium: the screenshot's cells have
// the sizes the shards' shares give (uneven ones too) and the colours the terminal's colour
// mode gives them.
#include <gtest/gtest.h>
#include <png.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>

#include "parax/parax.h"
#include "sharding/visualize.h"

namespace parax {
namespace {

namespace fs = std::filesystem;

struct Rect {
  int x, y, w, h;
  int r, g, b;
};

std::vector<Rect> rects_of(const std::string& svg) {
  std::vector<Rect> out;
  const std::regex re(R"re(<rect x="(\d+)" y="(\d+)" width="(\d+)" height="(\d+)" )re"
                      R"re(fill="#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})"/>)re");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator();
       ++it) {
    const std::smatch& m = *it;
    out.push_back({std::stoi(m[1]), std::stoi(m[2]), std::stoi(m[3]), std::stoi(m[4]),
                   std::stoi(m[5], nullptr, 16), std::stoi(m[6], nullptr, 16),
                   std::stoi(m[7], nullptr, 16)});
  }
  return out;
}

// The background colours of the terminal's colour mode, in cell order (the order each is
// first seen: line by line, a row's cells left to right; every cell has its own colour).
std::vector<std::array<int, 3>> ansi_backgrounds(const std::string& text) {
  std::vector<std::array<int, 3>> out;
  const std::regex re(R"(48;2;(\d+);(\d+);(\d+)m)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator();
       ++it) {
    const std::array<int, 3> c{std::stoi((*it)[1]), std::stoi((*it)[2]), std::stoi((*it)[3])};
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  return out;
}

std::string chromium() {
  if (const char* p = std::getenv("PARAX_CHROMIUM"); p && *p) return p;
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser"}) {
    if (fs::exists(p)) return p;
  }
  return "";
}

struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;
  std::array<int, 3> at(int x, int y) const {
    const size_t i = 3 * (size_t(y) * size_t(width) + size_t(x));
    return {rgb[i], rgb[i + 1], rgb[i + 2]};
  }
};

// Renders `svg` alone on a page of its size and returns the screenshot.
Image screenshot(const std::string& svg, int width, int height) {
  const fs::path dir = fs::temp_directory_path() / ("parax-svg-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path page = dir / "page.html", png = dir / "shot.png";
  std::ofstream(page) << "<!DOCTYPE html><html><body style=\"margin:0;background:#fff\">" << svg
                      << "</body></html>";
  const std::string command = "timeout -k 5 60 " + chromium() +
                              " --headless --no-sandbox --disable-gpu --hide-scrollbars "
                              "--force-device-scale-factor=1 --window-size=" +
                              std::to_string(width) + "," + std::to_string(height) +
                              " --screenshot=" + png.string() + " file://" + page.string() + " > " +
                              (dir / "log").string() + " 2>&1";
  const int status = std::system(command.c_str());
  Image image;
  png_image reader{};
  reader.version = PNG_IMAGE_VERSION;
  if (status == 0 && png_image_begin_read_from_file(&reader, png.c_str())) {
    reader.format = PNG_FORMAT_RGB;
    image.width = int(reader.width);
    image.height = int(reader.height);
    image.rgb.resize(PNG_IMAGE_SIZE(reader));
    if (!png_image_finish_read(&reader, nullptr, image.rgb.data(), 0, nullptr)) image.rgb.clear();
  }
  if (image.rgb.empty()) {
    std::ifstream log(dir / "log");
    ADD_FAILURE() << "chromium did not render (status " << status << "):\n" << log.rdbuf();
  }
  fs::remove_all(dir);
  return image;
}

// Checks every cell's pixels: its colour at the centre and just inside each edge, so the
// drawn sizes are the SVG's.
void expect_drawn(const Image& image, const std::vector<Rect>& rects) {
  auto near = [](std::array<int, 3> got, const Rect& r) {
    return std::abs(got[0] - r.r) <= 2 && std::abs(got[1] - r.g) <= 2 &&
           std::abs(got[2] - r.b) <= 2;
  };
  for (const Rect& r : rects) {
    // Away from the label in the middle: the corners' insides.
    for (auto [x, y] :
         {std::pair{r.x + 1, r.y + 1}, std::pair{r.x + r.w - 2, r.y + 1},
          std::pair{r.x + 1, r.y + r.h - 2}, std::pair{r.x + r.w - 2, r.y + r.h - 2}}) {
      const auto got = image.at(x, y);
      EXPECT_TRUE(near(got, r)) << "pixel (" << x << ", " << y << ") is " << got[0] << "," << got[1]
                                << "," << got[2] << "; want " << r.r << "," << r.g << "," << r.b;
    }
  }
}

TEST(ShardingSvg, ChromiumDrawsCellsToScaleInTheTerminalsColours) {
  if (chromium().empty()) GTEST_SKIP() << "no chromium (scripts/setup installs it)";
  const Mesh mesh = make_mesh({4, 2}, {"x", "y"});
  // Even: a 4 x 2 grid of a 16 x 32 array, as tall as half its width.
  const Array x = device_put(numpy::zeros({16, 32}), NamedSharding(mesh, P("x", "y")));
  const std::string svg = debug::sharding_svg(x);
  const std::vector<Rect> rects = rects_of(svg);
  ASSERT_EQ(rects.size(), 8u) << svg;
  for (size_t i = 0; i < rects.size(); ++i) {
    EXPECT_EQ(rects[i].w, 240) << i;
    EXPECT_EQ(rects[i].h, 60) << i;
    EXPECT_EQ(rects[i].x, 240 * int(i % 2)) << i;
    EXPECT_EQ(rects[i].y, 60 * int(i / 2)) << i;
  }
  EXPECT_NE(svg.find(">CPU 0</text>"), std::string::npos);
  detail::VisualizeParams colour;
  colour.color = true;
  std::vector<std::pair<int, Index>> indices;
  for (auto& [d, index] : x.sharding().devices_indices_map(x.shape()))
    indices.emplace_back(d.id(), index);
  const auto backgrounds =
      ansi_backgrounds(detail::render_array_sharding(x.shape(), "cpu", indices, colour, {}));
  ASSERT_EQ(backgrounds.size(), rects.size());
  for (size_t i = 0; i < rects.size(); ++i) {
    EXPECT_EQ(backgrounds[i], (std::array<int, 3>{rects[i].r, rects[i].g, rects[i].b})) << i;
  }
  expect_drawn(screenshot(svg, 480, 240), rects);

  // Uneven: 10 elements over 4 devices are shards of 3, 3, 3 and 1, drawn 144, 144, 144
  // and 48 pixels wide.
  const std::string uneven =
      debug::sharding_svg(Shape{10}, NamedSharding(make_mesh({4}, {"x"}), P("x")));
  const std::vector<Rect> cells = rects_of(uneven);
  ASSERT_EQ(cells.size(), 4u) << uneven;
  EXPECT_EQ(cells[0].w, 144);
  EXPECT_EQ(cells[1].w, 144);
  EXPECT_EQ(cells[2].w, 144);
  EXPECT_EQ(cells[3].w, 48);
  expect_drawn(screenshot(uneven, 480, 60), cells);

  // Rank 3: a grid per block of the leading dimension, each under its header.
  const Array cube = device_put(numpy::zeros({2, 8, 8}), NamedSharding(mesh, P("y", "x")));
  const std::string blocks = debug::sharding_svg(cube, {.width = 240});
  EXPECT_NE(blocks.find(">[0:1, rows, cols]</text>"), std::string::npos) << blocks;
  EXPECT_NE(blocks.find(">[1:2, rows, cols]</text>"), std::string::npos) << blocks;
  EXPECT_EQ(rects_of(blocks).size(), 8u);
  expect_drawn(screenshot(blocks, 240, 600), rects_of(blocks));
  // A scalar is one cell held by every device.
  const std::string scalar =
      debug::sharding_svg(device_put(numpy::zeros({}), NamedSharding(mesh, P())));
  EXPECT_NE(scalar.find(">CPU 0,1,2,3,4,5,6,7</text>"), std::string::npos) << scalar;

  const std::string html = debug::to_html(x);
  EXPECT_NE(html.find("float32[16,32]"), std::string::npos);
  EXPECT_NE(html.find(x.sharding().to_string()), std::string::npos);
  EXPECT_NE(html.find(svg), std::string::npos);
  EXPECT_THROW(debug::sharding_svg(x, {.width = 2}), ValueError);
}

}  // namespace
}  // namespace parax
