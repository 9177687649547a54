// Checks array printing against goldens produced by JAX 0.4.35 / numpy 1.26
// (tools/make_print_goldens.py) and against the examples of jax-arrays.md section 3.3.
#include "api/format.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace parax::detail {
namespace {

struct GoldenCase {
  std::string name;
  DType dtype = DType::float32;
  Shape shape;
  bool weak = false;
  std::vector<unsigned char> bytes;  // row-major elements in host byte order
  std::string repr;
  std::string str;
};

// Reads the golden file's simple line format (see tools/make_print_goldens.py).
class GoldenReader {
 public:
  explicit GoldenReader(std::string text) : text_(std::move(text)) {}

  bool next(GoldenCase& c) {
    while (pos_ < text_.size() && text_[pos_] == '#') line();
    if (pos_ >= text_.size()) return false;
    c = GoldenCase{};
    c.name = field("case");
    c.dtype = dtype_from_name(field("dtype"));
    std::istringstream shape(field("shape"));
    for (int64_t d; shape >> d;) c.shape.push_back(d);
    c.weak = field("weak") == "1";
    parse_data(field("data"), dtype_itemsize(c.dtype), c.bytes);
    c.repr = payload("repr");
    c.str = payload("str");
    if (line() != "end") throw std::runtime_error("missing 'end' in case " + c.name);
    return true;
  }

 private:
  std::string line() {
    size_t end = text_.find('\n', pos_);
    if (end == std::string::npos) end = text_.size();
    std::string l = text_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return l;
  }

  // Returns the rest of a line "<key> <rest>" (empty rest allowed).
  std::string field(const std::string& key) {
    std::string l = line();
    if (l.compare(0, key.size(), key) != 0) {
      throw std::runtime_error("expected '" + key + "', got '" + l + "'");
    }
    return l.size() > key.size() ? l.substr(key.size() + 1) : "";
  }

  std::string payload(const std::string& key) {
    size_t n = std::stoul(field(key));
    std::string s = text_.substr(pos_, n);
    pos_ += n;
    if (text_[pos_] != '\n') throw std::runtime_error("bad payload length for " + key);
    ++pos_;
    return s;
  }

  static void parse_data(const std::string& data, int itemsize, std::vector<unsigned char>& out) {
    std::istringstream tokens(data);
    for (std::string tok; tokens >> tok;) {
      size_t star = tok.find('*');
      uint64_t bits = std::stoull(tok.substr(0, star), nullptr, 16);
      long count = star == std::string::npos ? 1 : std::stol(tok.substr(star + 1));
      // The low `itemsize` bytes of a little-endian uint64 are the element's bits.
      static_assert(std::endian::native == std::endian::little);
      unsigned char elem[8];
      std::memcpy(elem, &bits, 8);
      for (long i = 0; i < count; ++i) out.insert(out.end(), elem, elem + itemsize);
    }
  }

  std::string text_;
  size_t pos_ = 0;
};

std::vector<GoldenCase> load_goldens() {
  std::ifstream in(PARAX_GOLDEN_DIR "/print_cases.txt", std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << PARAX_GOLDEN_DIR "/print_cases.txt";
  std::stringstream ss;
  ss << in.rdbuf();
  GoldenReader reader(ss.str());
  std::vector<GoldenCase> cases;
  for (GoldenCase c; reader.next(c);) cases.push_back(std::move(c));
  return cases;
}

TEST(FormatGolden, MatchesJax) {
  std::vector<GoldenCase> cases = load_goldens();
  EXPECT_GT(cases.size(), 1000u);
  int failures = 0;
  for (const GoldenCase& c : cases) {
    ASSERT_EQ(int64_t(c.bytes.size()), shape_size(c.shape) * dtype_itemsize(c.dtype)) << c.name;
    HostArrayView v{c.dtype, c.shape, c.bytes.data()};
    std::string repr = array_repr(v, c.weak);
    std::string str = array_str(v);
    EXPECT_EQ(repr, c.repr) << "repr of case " << c.name;
    EXPECT_EQ(str, c.str) << "str of case " << c.name;
    failures += (repr != c.repr) + (str != c.str);
    if (failures > 20) FAIL() << "too many mismatches; stopping";
  }
}

// ---- Hand-written examples of jax-arrays.md section 3.3. ----

template <class T>
HostArrayView view(const std::vector<T>& values, Shape shape) {
  return HostArrayView{dtype_of<T>(), std::move(shape), values.data()};
}

// std::vector<bool> has no data(); bools are stored as bytes.
HostArrayView bool_view(const std::vector<unsigned char>& values, Shape shape) {
  return HostArrayView{DType::bool_, std::move(shape), values.data()};
}

TEST(FormatExamples, Vectors) {
  std::vector<float> a{11, 20, 29};
  EXPECT_EQ(array_repr(view(a, {3}), false), "Array([11., 20., 29.], dtype=float32)");
  EXPECT_EQ(array_str(view(a, {3})), "[11. 20. 29.]");

  std::vector<int32_t> r10;
  for (int i = 0; i < 10; ++i) r10.push_back(i);
  EXPECT_EQ(array_repr(view(r10, {10}), false),
            "Array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9], dtype=int32)");
  EXPECT_EQ(array_str(view(r10, {10})), "[0 1 2 3 4 5 6 7 8 9]");

  std::vector<int32_t> r2000;
  for (int i = 0; i < 2000; ++i) r2000.push_back(i);
  EXPECT_EQ(array_repr(view(r2000, {2000}), false),
            "Array([   0,    1,    2, ..., 1997, 1998, 1999], dtype=int32)");
  EXPECT_EQ(array_str(view(r2000, {2000})), "[   0    1    2 ... 1997 1998 1999]");

  std::vector<unsigned char> b{1, 0};
  EXPECT_EQ(array_repr(bool_view(b, {2}), false), "Array([ True, False], dtype=bool)");
  EXPECT_EQ(array_str(bool_view(b, {2})), "[ True False]");

  std::vector<float> e{1e-5f, 1.0f};
  EXPECT_EQ(array_repr(view(e, {2}), false), "Array([1.e-05, 1.e+00], dtype=float32)");

  float inf = std::numeric_limits<float>::infinity();
  std::vector<float> n{std::nanf(""), 1.5f, -inf};
  EXPECT_EQ(array_repr(view(n, {3}), false), "Array([ nan,  1.5, -inf], dtype=float32)");

  std::vector<float> empty;
  EXPECT_EQ(array_repr(view(empty, {0, 3}), false), "Array([], shape=(0, 3), dtype=float32)");
  EXPECT_EQ(array_str(view(empty, {0, 3})), "[]");
  std::vector<int32_t> empty_i;
  EXPECT_EQ(array_repr(view(empty_i, {0}), false), "Array([], shape=(0,), dtype=int32)");

  std::vector<float> q{-4.f, -2.1f, -2.7f, -1.9f, -1.3f, -3.5f, -0.5f, -0.1f, 0.3f, 1.5f};
  EXPECT_EQ(array_repr(view(q, {10}), false),
            "Array([-4. , -2.1, -2.7, -1.9, -1.3, -3.5, -0.5, -0.1,  0.3,  1.5],      "
            "dtype=float32)");
}

TEST(FormatExamples, Scalars) {
  std::vector<float> x{1.0034581f};
  EXPECT_EQ(array_repr(view(x, {}), false), "Array(1.0034581, dtype=float32)");
  EXPECT_EQ(array_str(view(x, {})), "1.0034581");
  std::vector<float> one{1.0f};
  EXPECT_EQ(array_repr(view(one, {}), false), "Array(1., dtype=float32)");
  EXPECT_EQ(array_str(view(one, {})), "1.0");
  std::vector<int32_t> five{5};
  EXPECT_EQ(array_repr(view(five, {}), false), "Array(5, dtype=int32)");
  EXPECT_EQ(array_str(view(five, {})), "5");
  std::vector<float> two{2.0f};
  EXPECT_EQ(array_repr(view(two, {}), true), "Array(2., dtype=float32, weak_type=True)");
  std::vector<int32_t> ten{10};
  EXPECT_EQ(array_repr(view(ten, {}), true), "Array(10, dtype=int32, weak_type=True)");
  std::vector<float> small{1e-5f}, big{1e20f};
  EXPECT_EQ(array_str(view(small, {})), "1e-05");
  EXPECT_EQ(array_str(view(big, {})), "1e+20");
  std::vector<unsigned char> t{1};
  EXPECT_EQ(array_repr(bool_view(t, {}), false), "Array(True, dtype=bool)");
  EXPECT_EQ(array_str(bool_view(t, {})), "True");
}

TEST(FormatExamples, Matrices) {
  std::vector<int32_t> m(16);
  for (int i = 0; i < 16; ++i) m[i] = i;
  EXPECT_EQ(array_repr(view(m, {8, 2}), false),
            "Array([[ 0,  1],\n"
            "       [ 2,  3],\n"
            "       [ 4,  5],\n"
            "       [ 6,  7],\n"
            "       [ 8,  9],\n"
            "       [10, 11],\n"
            "       [12, 13],\n"
            "       [14, 15]], dtype=int32)");

  std::vector<float> c(24);
  for (int i = 0; i < 24; ++i) c[i] = float(i);
  EXPECT_EQ(array_repr(view(c, {2, 3, 4}), false),
            "Array([[[ 0.,  1.,  2.,  3.],\n"
            "        [ 4.,  5.,  6.,  7.],\n"
            "        [ 8.,  9., 10., 11.]],\n"
            "\n"
            "       [[12., 13., 14., 15.],\n"
            "        [16., 17., 18., 19.],\n"
            "        [20., 21., 22., 23.]]], dtype=float32)");

  std::vector<float> ones(100 * 100, 1.0f);
  EXPECT_EQ(array_repr(view(ones, {100, 100}), false),
            "Array([[1., 1., 1., ..., 1., 1., 1.],\n"
            "       [1., 1., 1., ..., 1., 1., 1.],\n"
            "       [1., 1., 1., ..., 1., 1., 1.],\n"
            "       ...,\n"
            "       [1., 1., 1., ..., 1., 1., 1.],\n"
            "       [1., 1., 1., ..., 1., 1., 1.],\n"
            "       [1., 1., 1., ..., 1., 1., 1.]], dtype=float32)");

  std::vector<float> sevenths(1001);
  for (int i = 0; i < 1001; ++i) sevenths[i] = float(i) / 7.0f;
  EXPECT_EQ(array_repr(view(sevenths, {1001}), false),
            "Array([  0.        ,   0.14285715,   0.2857143 , ..., 142.57143   ,\n"
            "       142.71428   , 142.85715   ], dtype=float32)");
  EXPECT_EQ(array_str(view(sevenths, {1001})),
            "[  0.           0.14285715   0.2857143  ... 142.57143    142.71428\n"
            " 142.85715   ]");
}

}  // namespace
}  // namespace parax::detail
