// Checks render_sharding against text captured from JAX 0.4.35 + rich
// (tools/make_visualize_goldens.py) and against the outputs quoted in jax-arrays.md §2.4.
#include "sharding/visualize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "parax/errors.h"

namespace parax::detail {
namespace {

struct GoldenCase {
  std::string name;
  Shape shape;
  std::string platform;
  VisualizeParams params;
  std::vector<std::pair<int, Index>> devices;
  std::string expected;
};

std::optional<int64_t> parse_bound(const std::string& word) {
  if (word == "-") return std::nullopt;
  return std::stoll(word);
}

// Reads a "keyword value" line and returns the value; fails the test on another keyword.
std::string read_field(std::istream& in, const std::string& keyword) {
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line.rfind(keyword + " ", 0), 0u) << "expected '" << keyword << "': " << line;
  return line.substr(std::min(line.size(), keyword.size() + 1));
}

GoldenCase read_case(std::istream& in, const std::string& name) {
  GoldenCase c;
  c.name = name;
  std::istringstream shape(read_field(in, "shape"));
  for (int64_t d; shape >> d;) c.shape.push_back(d);
  c.platform = read_field(in, "platform");
  std::istringstream params(read_field(in, "params"));
  int color = 0;
  params >> c.params.scale >> c.params.min_width >> c.params.max_width >> color;
  c.params.color = color != 0;
  int count = std::stoi(read_field(in, "devices"));
  for (int i = 0; i < count; ++i) {
    std::string line;
    std::getline(in, line);
    std::istringstream words(line);
    int id;
    words >> id;
    Index index;
    for (std::string start, stop; words >> start >> stop;) {
      index.push_back({parse_bound(start), parse_bound(stop)});
    }
    c.devices.emplace_back(id, index);
  }
  size_t bytes = std::stoul(read_field(in, "expected"));
  c.expected.resize(bytes);
  in.read(c.expected.data(), std::streamsize(bytes));
  std::string end;
  std::getline(in, end);
  EXPECT_EQ(end, "end") << "case: " << name;
  return c;
}

std::vector<GoldenCase> load_cases() {
  std::ifstream in(PARAX_GOLDEN_DIR "/visualize_cases.txt", std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << PARAX_GOLDEN_DIR "/visualize_cases.txt";
  std::vector<GoldenCase> cases;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("case ", 0) == 0) cases.push_back(read_case(in, line.substr(5)));
  }
  return cases;
}

TEST(VisualizeSharding, MatchesJaxGoldens) {
  std::vector<GoldenCase> cases = load_cases();
  EXPECT_GE(cases.size(), 250u);
  int failures = 0;
  for (const GoldenCase& c : cases) {
    std::string got = render_sharding(c.shape, c.platform, c.devices, c.params);
    EXPECT_EQ(got, c.expected) << "case: " << c.name;
    if (got != c.expected) ++failures;
  }
  EXPECT_EQ(failures, 0);
}

// Shards of an 8192x8192 array on make_mesh((4, 2), ('a', 'b')), given by chunk counts
// per dimension and which mesh axis (0 = 'a', 1 = 'b', -1 = none) splits each dimension.
std::vector<std::pair<int, Index>> mesh42_shards(int axis0, int axis1) {
  const int64_t n = 8192;
  auto dim_slice = [&](int axis, int a, int b) -> Slice {
    if (axis < 0) return {};
    int parts = axis == 0 ? 4 : 2;
    int64_t i = axis == 0 ? a : b;
    return {i * (n / parts), (i + 1) * (n / parts)};
  };
  std::vector<std::pair<int, Index>> shards;
  for (int a = 0; a < 4; ++a) {
    for (int b = 0; b < 2; ++b) {
      shards.push_back({a * 2 + b, {dim_slice(axis0, a, b), dim_slice(axis1, a, b)}});
    }
  }
  return shards;
}

std::string render_big(int axis0, int axis1, std::string_view platform = "cpu") {
  return render_sharding({8192, 8192}, platform, mesh42_shards(axis0, axis1), {});
}

TEST(VisualizeSharding, SpecAB) {
  EXPECT_EQ(render_big(0, 1),
            "┌──────────┬──────────┐\n"
            "│  CPU 0   │  CPU 1   │\n"
            "├──────────┼──────────┤\n"
            "│  CPU 2   │  CPU 3   │\n"
            "├──────────┼──────────┤\n"
            "│  CPU 4   │  CPU 5   │\n"
            "├──────────┼──────────┤\n"
            "│  CPU 6   │  CPU 7   │\n"
            "└──────────┴──────────┘\n");
}

TEST(VisualizeSharding, SpecBA) {
  EXPECT_EQ(render_big(1, 0),
            "┌───────┬───────┬───────┬───────┐\n"
            "│       │       │       │       │\n"
            "│ CPU 0 │ CPU 2 │ CPU 4 │ CPU 6 │\n"
            "│       │       │       │       │\n"
            "│       │       │       │       │\n"
            "├───────┼───────┼───────┼───────┤\n"
            "│       │       │       │       │\n"
            "│ CPU 1 │ CPU 3 │ CPU 5 │ CPU 7 │\n"
            "│       │       │       │       │\n"
            "│       │       │       │       │\n"
            "└───────┴───────┴───────┴───────┘\n");
}

TEST(VisualizeSharding, SpecANone) {
  EXPECT_EQ(render_big(0, -1),
            "┌───────────────────────┐\n"
            "│        CPU 0,1        │\n"
            "├───────────────────────┤\n"
            "│        CPU 2,3        │\n"
            "├───────────────────────┤\n"
            "│        CPU 4,5        │\n"
            "├───────────────────────┤\n"
            "│        CPU 6,7        │\n"
            "└───────────────────────┘\n");
}

TEST(VisualizeSharding, SpecNoneB) {
  EXPECT_EQ(render_big(-1, 1),
            "┌───────────┬───────────┐\n"
            "│           │           │\n"
            "│           │           │\n"
            "│           │           │\n"
            "│           │           │\n"
            "│CPU 0,2,4,6│CPU 1,3,5,7│\n"
            "│           │           │\n"
            "│           │           │\n"
            "│           │           │\n"
            "│           │           │\n"
            "└───────────┴───────────┘\n");
}

TEST(VisualizeSharding, SpecNoneA) {
  EXPECT_EQ(render_big(-1, 0),
            "┌───────┬───────┬───────┬───────┐\n"
            "│       │       │       │       │\n"
            "│       │       │       │       │\n"
            "│       │       │       │       │\n"
            "│       │       │       │       │\n"
            "│CPU 0,1│CPU 2,3│CPU 4,5│CPU 6,7│\n"
            "│       │       │       │       │\n"
            "│       │       │       │       │\n"
            "│       │       │       │       │\n"
            "│       │       │       │       │\n"
            "└───────┴───────┴───────┴───────┘\n");
}

// P(('a', 'b'), None) or P(('b', 'a'), None): eight row chunks, given in `order`.
std::string render_rows8(const std::vector<int>& order) {
  std::vector<std::pair<int, Index>> shards;
  for (int i = 0; i < 8; ++i) {
    int64_t chunk = order[i];
    shards.push_back({i, {Slice{chunk * 1024, (chunk + 1) * 1024}, Slice{}}});
  }
  return render_sharding({8192, 8192}, "cpu", shards, {});
}

std::string rows8_text(const std::vector<int>& ids) {
  std::string text = "┌───────────────────────┐\n";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) text += "├───────────────────────┤\n";
    text += "│         CPU " + std::to_string(ids[i]) + "         │\n";
  }
  return text + "└───────────────────────┘\n";
}

TEST(VisualizeSharding, SpecABTogether) {
  EXPECT_EQ(render_rows8({0, 1, 2, 3, 4, 5, 6, 7}), rows8_text({0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(VisualizeSharding, SpecBATogether) {
  // Device 2*a + b holds row chunk 4*b + a.
  EXPECT_EQ(render_rows8({0, 4, 1, 5, 2, 6, 3, 7}), rows8_text({0, 2, 4, 6, 1, 3, 5, 7}));
}

const char* const kWholeArrayFrame =
    "┌───────────────────────┐\n"
    "│                       │\n"
    "│                       │\n"
    "│                       │\n"
    "│                       │\n"
    "│%s│\n"
    "│                       │\n"
    "│                       │\n"
    "│                       │\n"
    "│                       │\n"
    "└───────────────────────┘\n";

std::string whole_array(const std::string& label_line) {
  std::string text = kWholeArrayFrame;
  return text.replace(text.find("%s"), 2, label_line);
}

TEST(VisualizeSharding, Replicated) {
  EXPECT_EQ(render_big(-1, -1), whole_array("  CPU 0,1,2,3,4,5,6,7  "));
}

TEST(VisualizeSharding, SingleDevice) {
  EXPECT_EQ(render_sharding({8192, 8192}, "cpu", {{0, {Slice{}, Slice{}}}}, {}),
            whole_array("         CPU 0         "));
}

TEST(VisualizeSharding, TpuPlatformAndDeviceOrder) {
  // The notebook's TPU mesh lists devices 0,1,2,3,6,7,4,5 row-major.
  std::vector<std::pair<int, Index>> shards = mesh42_shards(0, -1);
  const int tpu_ids[] = {0, 1, 2, 3, 6, 7, 4, 5};
  for (auto& [id, index] : shards) id = tpu_ids[id];
  EXPECT_EQ(render_sharding({8192, 8192}, "tpu", shards, {}),
            "┌───────────────────────┐\n"
            "│        TPU 0,1        │\n"
            "├───────────────────────┤\n"
            "│        TPU 2,3        │\n"
            "├───────────────────────┤\n"
            "│        TPU 6,7        │\n"
            "├───────────────────────┤\n"
            "│        TPU 4,5        │\n"
            "└───────────────────────┘\n");
}

TEST(VisualizeSharding, Overflow10Columns) {
  std::vector<std::pair<int, Index>> shards;
  for (int i = 0; i < 10; ++i) shards.push_back({i, {Slice{i, i + 1}}});
  EXPECT_EQ(render_sharding({10}, "cpu", shards, {}),
            "┌───────┬───────┬───────┬───────┬───────┬───────┬───────┬───────┬───────┬──────┐\n"
            "│ CPU 0 │ CPU 1 │ CPU 2 │ CPU 3 │ CPU 4 │ CPU 5 │ CPU 6 │ CPU 7 │ CPU 8 │ CPU  │\n"
            "│       │       │       │       │       │       │       │       │       │ 9    │\n"
            "└───────┴───────┴───────┴───────┴───────┴───────┴───────┴───────┴───────┴──────┘\n");
}

TEST(VisualizeSharding, Overflow16Columns) {
  std::vector<std::pair<int, Index>> shards;
  for (int i = 0; i < 16; ++i) shards.push_back({i, {Slice{2 * i, 2 * i + 2}}});
  EXPECT_EQ(render_sharding({32}, "cpu", shards, {}),
            "┌────┬────┬────┬────┬────┬────┬────┬────┬────┬────┬────┬────┬────┬────┬───┬────┐\n"
            "│ C… │ C… │ C… │ C… │ C… │ C… │ C… │ C… │ C… │ C… │CPU │CPU │CPU │CPU │C… │CPU │\n"
            "│ 0  │ 1  │ 2  │ 3  │ 4  │ 5  │ 6  │ 7  │ 8  │ 9  │10  │11  │12  │13  │14 │15  │\n"
            "└────┴────┴────┴────┴────┴────┴────┴────┴────┴────┴────┴────┴────┴────┴───┴────┘\n");
}

TEST(VisualizeSharding, ColorModeOneDimension) {
  // jax-arrays.md §2.3: (8,) over 4 devices on a truecolor terminal.
  std::vector<std::pair<int, Index>> shards;
  for (int i = 0; i < 4; ++i) shards.push_back({i, {Slice{2 * i, 2 * i + 2}}});
  VisualizeParams params;
  params.color = true;
  std::string text = render_sharding({8}, "cpu", shards, params);
  const std::string first_cell =
      "\x1b[38;2;255;255;255;48;2;57;59;121m  \x1b[0m"
      "\x1b[38;2;255;255;255;48;2;57;59;121mCPU 0\x1b[0m"
      "\x1b[38;2;255;255;255;48;2;57;59;121m  \x1b[0m";
  EXPECT_EQ(text.substr(0, first_cell.size()), first_cell);
  // Two lines: the labels, then a blank line of every cell (bottom padding 1).
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2);
}

TEST(VisualizeSharding, RejectsScalars) {
  try {
    render_sharding({}, "cpu", {{0, {}}}, {});
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(), "`visualize_sharding` only works for shapes with 1 and 2 dimensions.");
  }
}

TEST(VisualizeSharding, RejectsRank3) {
  try {
    render_sharding({2, 2, 2}, "cpu", {{0, {Slice{}, Slice{}, Slice{}}}}, {});
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(), "`visualize_sharding` only works for shapes with 1 and 2 dimensions.");
  }
}

// Beyond JAX: any rank, chosen dimensions, uneven shards.

std::vector<std::pair<int, Index>> replicated(int devices, size_t rank) {
  std::vector<std::pair<int, Index>> out;
  for (int i = 0; i < devices; ++i) out.emplace_back(i, Index(rank));
  return out;
}

TEST(VisualizeArraySharding, ScalarIsOneCellOfEveryDevice) {
  EXPECT_EQ(render_array_sharding({}, "cpu", replicated(8, 0), {}, {}),
            render_sharding({1}, "cpu", replicated(8, 1), {}));
  EXPECT_EQ(render_array_sharding({}, "cpu", replicated(1, 0), {}, {}),
            "┌───────────────────────┐\n"
            "│         CPU 0         │\n"
            "└───────────────────────┘\n");
}

TEST(VisualizeArraySharding, RanksOneAndTwoAreJaxsUnlessDimsAreGiven) {
  const auto shards = mesh42_shards(0, 1);
  EXPECT_EQ(render_array_sharding({8192, 8192}, "cpu", shards, {}, {}), render_big(0, 1));
  // dims {1, 0}: the transpose, with no header (no other dimension)
  std::vector<std::pair<int, Index>> swapped;
  for (const auto& [id, index] : shards) swapped.emplace_back(id, Index{index[1], index[0]});
  EXPECT_EQ(render_array_sharding({8192, 8192}, "cpu", shards, {}, {1, 0}),
            render_sharding({8192, 8192}, "cpu", swapped, {}));
}

// (4, 8192, 8192) with its first dimension split in two and the others as P('a', 'b') on
// the remaining devices: one grid per half, headed by it.
TEST(VisualizeArraySharding, RankThreeDrawsOneGridPerBlockOfTheLeadingDimension) {
  std::vector<std::pair<int, Index>> shards, first, second;
  for (int half = 0; half < 2; ++half) {
    for (int a = 0; a < 2; ++a) {
      for (int b = 0; b < 2; ++b) {
        const int id = half * 4 + a * 2 + b;
        const Index drawn{Slice{a * 4096, (a + 1) * 4096}, Slice{b * 4096, (b + 1) * 4096}};
        shards.emplace_back(id, Index{Slice{half * 2, half * 2 + 2}, drawn[0], drawn[1]});
        (half == 0 ? first : second).emplace_back(id, drawn);
      }
    }
  }
  const Shape shape{4, 8192, 8192};
  EXPECT_EQ(render_array_sharding(shape, "cpu", shards, {}, {}),
            "[0:2, rows, cols]\n" + render_sharding({8192, 8192}, "cpu", first, {}) +
                "[2:4, rows, cols]\n" + render_sharding({8192, 8192}, "cpu", second, {}));
  // an unsplit leading dimension: one grid, its header says so
  EXPECT_EQ(render_array_sharding({3, 8192, 8192}, "cpu", replicated(2, 3), {}, {}),
            "[:, rows, cols]\n" + render_sharding({8192, 8192}, "cpu", replicated(2, 2), {}));
  // dims {0, -1} draw the first and last dimensions, one grid per block of the middle one
  std::vector<std::pair<int, Index>> outer;
  for (const auto& [id, index] : shards) {
    if (index[1].begin(8192) == 0) outer.emplace_back(id, Index{index[0], index[2]});
  }
  const std::string text = render_array_sharding(shape, "cpu", shards, {}, {0, -1});
  EXPECT_EQ(text.substr(0, text.find('\n') + 1), "[rows, 0:4096, cols]\n");
  EXPECT_NE(text.find(render_sharding({4, 8192}, "cpu", outer, {})), std::string::npos);
  EXPECT_NE(text.find("[rows, 4096:8192, cols]\n"), std::string::npos);
  // one dimension: 1-D grids
  const std::string cols = render_array_sharding(shape, "cpu", shards, {}, {2});
  EXPECT_EQ(cols.substr(0, cols.find('\n') + 1), "[0:2, 0:4096, cols]\n");
  EXPECT_EQ(std::count(cols.begin(), cols.end(), '['), 4);
}

TEST(VisualizeArraySharding, UnevenShardsAreDrawnToScale) {
  // (8, 10) with its columns as 4 + 4 + 2 (a padded sharding's last shard is shorter)
  const std::vector<std::pair<int, Index>> shards = {
      {0, {Slice{}, Slice{0, 4}}}, {1, {Slice{}, Slice{4, 8}}}, {2, {Slice{}, Slice{8, 10}}}};
  VisualizeParams params;
  params.min_width = 1;
  EXPECT_EQ(render_sharding({8, 10}, "cpu", shards, params),
            "┌──────────┬──────────┬─────┐\n"
            "│          │          │     │\n"
            "│          │          │     │\n"
            "│          │          │     │\n"
            "│          │          │     │\n"
            "│  CPU 0   │  CPU 1   │CPU 2│\n"
            "│          │          │     │\n"
            "│          │          │     │\n"
            "│          │          │     │\n"
            "│          │          │     │\n"
            "└──────────┴──────────┴─────┘\n");
}

TEST(VisualizeArraySharding, Errors) {
  const Shape shape{2, 2, 2};
  const auto one = replicated(1, 3);
  auto message = [&](const std::vector<int>& dims) {
    try {
      render_array_sharding(shape, "cpu", one, {}, dims);
    } catch (const ValueError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message({0, 3}),
            "`visualize_sharding`: dims {0, 3} is out of range for shape (2, 2, 2)");
  EXPECT_EQ(message({1, -2}), "`visualize_sharding`: dims {1, -2} names one dimension twice");
  EXPECT_EQ(message({0, 1, 2}),
            "`visualize_sharding`: dims {0, 1, 2} names more than the two dimensions a grid "
            "draws");
  // shards that leave a gap or overlap
  try {
    render_sharding({10}, "cpu", {{0, {Slice{0, 4}}}, {1, {Slice{6, 10}}}}, {});
    FAIL() << "no error for a gap";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "`visualize_sharding` needs shards that tile the array; got "
                 "(slice(6, 10, None),) of a dimension of size 10");
  }
  EXPECT_THROW(render_sharding({10}, "cpu", {{0, {Slice{0, 6}}}, {1, {Slice{0, 4}}}}, {}),
               ValueError);
}

}  // namespace
}  // namespace parax::detail
