// Array printing, following numpy 1.26's arrayprint.py (as JAX 0.4.35 uses it) and the
// Dragon4 digit generator numpy prints floats with. The parts, bottom up:
//
//   BigUint, dragon4()               exact decimal digits of a float (numpy's dragon4.c)
//   format_positional/_scientific    numpy's FormatPositional / FormatScientific
//   FloatFormat, IntFormat, ...      numpy's FloatingFormat (fillFormat, __call__), ...
//   Selection                        numpy's _leading_trailing (columns size from shown items)
//   format_nested (base/)            numpy's _formatArray and _extendLine, shared
//   scalar_str                       numpy's scalar str (for 0-d arrays)
//   array_repr / array_str           JAX's Array.__repr__ / __str__
#include "api/format.h"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>
#include <vector>

#include "base/check.h"
#include "base/dtype_dispatch.h"
#include "base/nested_format.h"

namespace parax::detail {
namespace {

// numpy's print options, which JAX leaves at their defaults.
constexpr int kPrecision = 8;
constexpr int64_t kThreshold = 1000;
constexpr int64_t kEdgeItems = 3;
constexpr int kLineWidth = 75;
constexpr std::string_view kReprPrefix = "Array(";

// ---------------------------------------------------------------------------------------
// Exact arithmetic for Dragon4.

// An unsigned integer big enough for a float64 scaled by powers of two and ten during
// digit generation (under 1200 bits). Fixed capacity keeps formatting allocation-free.
class BigUint {
 public:
  BigUint() = default;
  explicit BigUint(uint64_t v) {
    blocks_[0] = uint32_t(v);
    blocks_[1] = uint32_t(v >> 32);
    size_ = 2;
    trim();
  }

  static BigUint pow2(int e) {
    BigUint r(1);
    r.shift_left(e);
    return r;
  }

  void shift_left(int bits) {
    if (size_ == 0 || bits == 0) return;
    int block_shift = bits / 32, bit_shift = bits % 32;
    PARAX_CHECK(size_ + block_shift + 1 <= kMaxBlocks, "BigUint overflow");
    blocks_[size_ + block_shift] = 0;
    for (int i = size_ - 1; i >= 0; --i) {
      uint64_t wide = uint64_t(blocks_[i]) << bit_shift;
      blocks_[i + block_shift + 1] |= uint32_t(wide >> 32);
      blocks_[i + block_shift] = uint32_t(wide);
    }
    std::fill_n(blocks_.begin(), block_shift, 0u);
    size_ += block_shift + 1;
    trim();
  }

  void multiply(uint32_t m) {
    uint64_t carry = 0;
    for (int i = 0; i < size_; ++i) {
      uint64_t p = uint64_t(blocks_[i]) * m + carry;
      blocks_[i] = uint32_t(p);
      carry = p >> 32;
    }
    if (carry != 0) {
      PARAX_CHECK(size_ < kMaxBlocks, "BigUint overflow");
      blocks_[size_++] = uint32_t(carry);
    }
  }

  void multiply_pow10(int e) {
    static constexpr uint32_t kPow10[] = {1,      10,      100,      1000,      10000,
                                          100000, 1000000, 10000000, 100000000, 1000000000};
    for (; e >= 9; e -= 9) multiply(kPow10[9]);
    multiply(kPow10[e]);
  }

  BigUint& operator+=(const BigUint& b) {
    int n = std::max(size_, b.size_);
    uint64_t carry = 0;
    for (int i = 0; i < n; ++i) {
      uint64_t s = carry + (i < size_ ? blocks_[i] : 0) + (i < b.size_ ? b.blocks_[i] : 0);
      blocks_[i] = uint32_t(s);
      carry = s >> 32;
    }
    size_ = n;
    if (carry != 0) {
      PARAX_CHECK(size_ < kMaxBlocks, "BigUint overflow");
      blocks_[size_++] = uint32_t(carry);
    }
    return *this;
  }

  // Requires *this >= b.
  void subtract(const BigUint& b) {
    int64_t borrow = 0;
    for (int i = 0; i < size_; ++i) {
      int64_t d = int64_t(blocks_[i]) - (i < b.size_ ? b.blocks_[i] : 0) - borrow;
      borrow = d < 0;
      blocks_[i] = uint32_t(d + (borrow << 32));
    }
    trim();
  }

  friend int compare(const BigUint& a, const BigUint& b) {
    if (a.size_ != b.size_) return a.size_ < b.size_ ? -1 : 1;
    for (int i = a.size_ - 1; i >= 0; --i) {
      if (a.blocks_[i] != b.blocks_[i]) return a.blocks_[i] < b.blocks_[i] ? -1 : 1;
    }
    return 0;
  }

  // Divides by `d` when the quotient is a single decimal digit; keeps the remainder.
  int divide_digit(const BigUint& d) {
    int q = 0;
    while (compare(*this, d) >= 0) {
      subtract(d);
      ++q;
    }
    PARAX_CHECK(q < 10, "Dragon4 digit out of range");
    return q;
  }

 private:
  static constexpr int kMaxBlocks = 40;

  void trim() {
    while (size_ > 0 && blocks_[size_ - 1] == 0) --size_;
  }

  std::array<uint32_t, kMaxBlocks> blocks_{};
  int size_ = 0;
};

// ---------------------------------------------------------------------------------------
// Dragon4: the decimal digits of a binary float.

// A finite or non-finite float as mantissa * 2^exponent, plus what Dragon4 needs to know
// about the distance to its neighbours.
struct FloatParts {
  uint64_t mantissa = 0;
  int exponent = 0;
  int mantissa_bit = 0;          // index of the highest set bit of `mantissa`
  bool unequal_margins = false;  // the next lower float is half as far as the next higher
  bool negative = false;
  bool is_nan = false;
  bool is_inf = false;
};

template <int kMantBits, int kExpBits>
FloatParts decompose_ieee(uint64_t bits) {
  constexpr int kBias = (1 << (kExpBits - 1)) - 1;
  constexpr uint64_t kExpMask = (uint64_t(1) << kExpBits) - 1;
  FloatParts p;
  uint64_t frac = bits & ((uint64_t(1) << kMantBits) - 1);
  uint64_t biased = (bits >> kMantBits) & kExpMask;
  p.negative = (bits >> (kMantBits + kExpBits)) & 1;
  if (biased == kExpMask) {
    p.is_nan = frac != 0;
    p.is_inf = frac == 0;
  } else if (biased != 0) {
    p.mantissa = (uint64_t(1) << kMantBits) | frac;
    p.exponent = int(biased) - kBias - kMantBits;
    p.mantissa_bit = kMantBits;
    p.unequal_margins = biased != 1 && frac == 0;
  } else {
    p.mantissa = frac;
    p.exponent = 1 - kBias - kMantBits;
    p.mantissa_bit = frac == 0 ? 0 : std::bit_width(frac) - 1;
  }
  return p;
}

FloatParts float_parts(float16_t x) { return decompose_ieee<10, 5>(x.bits); }
FloatParts float_parts(float x) { return decompose_ieee<23, 8>(std::bit_cast<uint32_t>(x)); }
FloatParts float_parts(double x) { return decompose_ieee<52, 11>(std::bit_cast<uint64_t>(x)); }

// Where Dragon4's cutoff counts digits from: the first digit, or the decimal point.
enum class Cutoff { kTotalLength, kFractionLength };

// Decimal digits d1 d2 ... dn meaning d1.d2...dn * 10^exponent.
struct DigitString {
  static constexpr int kCapacity = 64;
  std::array<char, kCapacity> digits{};
  int count = 0;
  int exponent = 0;
};

// numpy's Dragon4 in its "unique" mode: the shortest digits that identify `f` among
// floats of its type (a decimal exactly halfway to a neighbour identifies the float with
// the even mantissa, as round-half-even parsing would), but never more than
// `cutoff_max` digits and never fewer than `cutoff_min` (-1: no limit), counted as
// `mode` says. Once past the shortest length the digits are exact and the last one is
// rounded half-to-even, so a cutoff gives correctly rounded output.
DigitString dragon4(const FloatParts& f, Cutoff mode, int cutoff_max, int cutoff_min) {
  DigitString out;
  if (f.mantissa == 0) {
    out.digits[0] = '0';
    out.count = 1;
    return out;
  }
  // value / scale is the float; margin_low / scale and margin_high / scale are half the
  // gaps to its neighbours. Everything is doubled once more when the margins differ.
  int extra = f.unequal_margins ? 2 : 1;
  BigUint value(f.mantissa), scale, margin_low;
  if (f.exponent > 0) {
    value.shift_left(f.exponent + extra);
    scale = BigUint(uint64_t(1) << extra);
    margin_low = BigUint::pow2(f.exponent);
  } else {
    value.shift_left(extra);
    scale = BigUint::pow2(-f.exponent + extra);
    margin_low = BigUint(1);
  }
  auto margin_high = [&] {
    BigUint m = margin_low;
    if (f.unequal_margins) m.shift_left(1);
    return m;
  };

  // Estimate of floor(log10(value)) + 1, exact or one too low (as numpy computes it).
  constexpr double kLog10Of2 = 0.30102999566398119521373889472449;
  int digit_exponent = int(std::ceil(double(f.mantissa_bit + f.exponent) * kLog10Of2 - 0.69));
  // Values below the fractional cutoff start at the cutoff and round from there.
  if (cutoff_max >= 0 && mode == Cutoff::kFractionLength && digit_exponent <= -cutoff_max) {
    digit_exponent = -cutoff_max + 1;
  }
  if (digit_exponent > 0) {
    scale.multiply_pow10(digit_exponent);
  } else if (digit_exponent < 0) {
    value.multiply_pow10(-digit_exponent);
    margin_low.multiply_pow10(-digit_exponent);
  }
  if (compare(value, scale) >= 0) {
    ++digit_exponent;
  } else {
    value.multiply(10);
    margin_low.multiply(10);
  }

  int cutoff_max_exponent = digit_exponent - DigitString::kCapacity;
  int cutoff_min_exponent = digit_exponent;
  if (cutoff_max >= 0) {
    int desired = mode == Cutoff::kTotalLength ? digit_exponent - cutoff_max : -cutoff_max;
    cutoff_max_exponent = std::max(cutoff_max_exponent, desired);
  }
  if (cutoff_min >= 0) {
    int desired = mode == Cutoff::kTotalLength ? digit_exponent - cutoff_min : -cutoff_min;
    cutoff_min_exponent = std::min(cutoff_min_exponent, desired);
  }
  out.exponent = digit_exponent - 1;

  // Emit digits until the rest is inside the margins (the digits so far identify the
  // float) and the minimum is reached, or until the maximum is reached.
  bool even = f.mantissa % 2 == 0;
  bool low = false, high = false;
  int digit = 0;
  for (;;) {
    --digit_exponent;
    digit = value.divide_digit(scale);
    BigUint value_high = value;
    value_high += margin_high();
    int cmp_low = compare(value, margin_low);
    int cmp_high = compare(value_high, scale);
    low = even ? cmp_low <= 0 : cmp_low < 0;
    high = even ? cmp_high >= 0 : cmp_high > 0;
    if (((low || high) && digit_exponent <= cutoff_min_exponent) ||
        digit_exponent == cutoff_max_exponent) {
      break;
    }
    out.digits[out.count++] = char('0' + digit);
    value.multiply(10);
    margin_low.multiply(10);
  }

  // Round the last digit: towards whichever neighbour is still distinguishable, or to
  // nearest (ties to an even digit) when both or neither are.
  bool round_down = low;
  if (low == high) {
    value.shift_left(1);
    int cmp = compare(value, scale);
    round_down = cmp < 0 || (cmp == 0 && digit % 2 == 0);
  }
  if (round_down || digit < 9) {
    out.digits[out.count++] = char('0' + digit + (round_down ? 0 : 1));
    return out;
  }
  // Rounding up a 9 carries into the earlier digits; trailing 9s drop off.
  while (out.count > 0 && out.digits[out.count - 1] == '9') --out.count;
  if (out.count == 0) {
    out.digits[out.count++] = '1';
    ++out.exponent;
  } else {
    ++out.digits[out.count - 1];
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// One formatted element: never more than a few dozen characters, so a fixed buffer keeps
// the per-element path free of allocations.
class Word {
 public:
  void push(char c) {
    PARAX_CHECK(size_ < kCapacity, "formatted element too long");
    chars_[size_++] = c;
  }
  void append(std::string_view s) {
    for (char c : s) push(c);
  }
  void append(int n, char c) {
    for (int i = 0; i < n; ++i) push(c);
  }
  // Inserts `n` copies of `c` at the front.
  void prepend(int n, char c) {
    if (n <= 0) return;
    PARAX_CHECK(size_ + n <= kCapacity, "formatted element too long");
    std::memmove(chars_.data() + n, chars_.data(), size_);
    std::fill_n(chars_.begin(), n, c);
    size_ += n;
  }
  void pop() { --size_; }
  char back() const { return chars_[size_ - 1]; }
  int size() const { return size_; }
  void clear() { size_ = 0; }
  std::string_view view() const { return {chars_.data(), size_t(size_)}; }

 private:
  static constexpr int kCapacity = 128;
  std::array<char, kCapacity> chars_{};
  int size_ = 0;
};

// numpy's trim modes: what to do with trailing zeros and the decimal point.
enum class Trim {
  kKeep,          // 'k': keep zeros up to min_digits and the point       "1.500", "1."
  kZeros,         // '.': drop trailing zeros, keep the point             "1.5",   "1."
  kLeaveOneZero,  // '0': drop trailing zeros but keep one after point    "1.5",   "1.0"
  kDotAndZeros,   // '-': drop trailing zeros and a bare point            "1.5",   "1"
};

// Options of numpy's dragon4_positional / dragon4_scientific (unique mode, sign '-').
struct FloatStyle {
  int precision = -1;   // at most this many digits after the point; -1: no limit
  int min_digits = -1;  // at least this many digits after the point, exact; -1: none
  Trim trim = Trim::kKeep;
  int pad_left = -1;    // pad with spaces to this many characters before the point
  int pad_right = -1;   // positional: pad with spaces to this many after the point
  int exp_digits = -1;  // scientific: pad the exponent with zeros to this many digits
};

// Drops the trailing zeros of a printed fraction as `trim` asks (rounding can leave
// some); returns the new fraction length. Only positional output drops a bare point.
int trim_fraction(Word& w, Trim trim, int num_frac, bool may_drop_point) {
  if (trim == Trim::kKeep || num_frac == 0) return num_frac;
  while (w.back() == '0') {
    w.pop();
    --num_frac;
  }
  if (w.back() == '.') {
    if (trim == Trim::kLeaveOneZero) {
      w.push('0');
      ++num_frac;
    } else if (trim == Trim::kDotAndZeros && may_drop_point) {
      w.pop();
    }
  }
  return num_frac;
}

// After the digits: the decimal point unless trimmed away, then numpy's trim modes'
// zeros ('0' keeps one, 'k' pads to min_digits). Returns the fraction's new length.
int complete_fraction(Word& w, const FloatStyle& st, int num_frac) {
  if (st.trim != Trim::kDotAndZeros && num_frac == 0) w.push('.');
  if (st.trim == Trim::kLeaveOneZero && num_frac == 0) {
    w.push('0');
    return 1;
  }
  if (st.trim == Trim::kKeep && st.min_digits > num_frac) {
    w.append(st.min_digits - num_frac, '0');
    return st.min_digits;
  }
  return num_frac;
}

// numpy's FormatPositional: "ddd.ddd" with padding.
void format_positional(const FloatParts& f, const FloatStyle& st, Word& w) {
  int sign_chars = f.negative ? 1 : 0;
  if (f.negative) w.push('-');
  DigitString d = dragon4(f, Cutoff::kFractionLength, st.precision, st.min_digits);
  std::string_view digits(d.digits.data(), size_t(d.count));
  int num_whole = 1, num_frac = 0;
  if (d.exponent >= 0) {
    num_whole = d.exponent + 1;
    if (d.count <= num_whole) {
      w.append(digits);
      w.append(num_whole - d.count, '0');
    } else {
      w.append(digits.substr(0, size_t(num_whole)));
      w.push('.');
      w.append(digits.substr(size_t(num_whole)));
      num_frac = d.count - num_whole;
    }
  } else {
    int leading_zeros = -(d.exponent + 1);
    w.append("0.");
    w.append(leading_zeros, '0');
    w.append(digits);
    num_frac = leading_zeros + d.count;
  }
  num_frac = complete_fraction(w, st, num_frac);
  num_frac = trim_fraction(w, st.trim, num_frac, /*may_drop_point=*/true);

  if (st.pad_right >= num_frac) {
    // A trimmed point still takes its column.
    if (st.trim == Trim::kDotAndZeros && num_frac == 0) w.push(' ');
    w.append(st.pad_right - num_frac, ' ');
  }
  w.prepend(st.pad_left - (num_whole + sign_chars), ' ');
}

// numpy's FormatScientific: "d.ddde+XX" with padding.
void format_scientific(const FloatParts& f, const FloatStyle& st, Word& w) {
  w.append(st.pad_left - (f.negative ? 2 : 1), ' ');
  if (f.negative) w.push('-');
  DigitString d = dragon4(f, Cutoff::kTotalLength, st.precision < 0 ? -1 : st.precision + 1,
                          st.min_digits < 0 ? -1 : st.min_digits + 1);
  w.push(d.digits[0]);
  int num_frac = d.count - 1;
  if (num_frac > 0) {
    w.push('.');
    w.append(std::string_view(d.digits.data() + 1, size_t(num_frac)));
  }
  num_frac = complete_fraction(w, st, num_frac);
  trim_fraction(w, st.trim, num_frac, /*may_drop_point=*/false);

  int exponent = d.exponent;
  w.push('e');
  w.push(exponent < 0 ? '-' : '+');
  char buf[8];
  auto res = std::to_chars(buf, buf + sizeof(buf), std::abs(exponent));
  int len = int(res.ptr - buf);
  w.append(std::clamp(st.exp_digits < 0 ? 2 : st.exp_digits, 0, 5) - len, '0');
  w.append(std::string_view(buf, size_t(len)));
}

// "nan", "inf" or "-inf" (numpy never prints a nan's sign).
void append_non_finite(const FloatParts& f, Word& w) {
  if (f.is_nan) {
    w.append("nan");
  } else {
    w.append(f.negative ? "-inf" : "inf");
  }
}

// ---------------------------------------------------------------------------------------
// Element formatters: each is built from the elements that will be shown (so widths are
// common to them) and then formats one element at a time.

// A float's value as double, exactly.
template <class T>
double to_double(T x) {
  if constexpr (std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>) {
    return double(static_cast<float>(x));
  } else {
    return double(x);
  }
}

// max / min as numpy evaluates it, on scalars of the array's dtype: the quotient is
// rounded to that dtype before the comparison with 1000. (float32 has enough bits that
// dividing float16s in it and rounding once more still gives the exact float16 result.)
template <class T>
double quotient_in_dtype(double a, double b) {
  if constexpr (std::is_same_v<T, float16_t>) {
    return double(static_cast<float>(float16_t(float(a) / float(b))));
  } else if constexpr (std::is_same_v<T, float>) {
    return double(float(a) / float(b));
  } else {
    return a / b;
  }
}

// numpy's FloatingFormat with floatmode 'maxprec', precision 8, sign '-'.
template <class T>
class FloatFormat {
 public:
  explicit FloatFormat(const std::vector<T>& shown) {
    std::vector<FloatParts> finite;
    bool any_non_finite = false, any_neg_inf = false;
    double max_abs = 0, min_abs = INFINITY;
    for (T x : shown) {
      FloatParts p = float_parts(x);
      if (p.is_nan || p.is_inf) {
        any_non_finite = true;
        any_neg_inf |= p.is_inf && p.negative;
        continue;
      }
      finite.push_back(p);
      double a = std::fabs(to_double(x));
      if (a != 0) {
        max_abs = std::max(max_abs, a);
        min_abs = std::min(min_abs, a);
      }
    }
    if (max_abs != 0) {
      exp_format_ =
          max_abs >= 1e8 || min_abs < 1e-4 || quotient_in_dtype<T>(max_abs, min_abs) > 1000.;
    }
    if (!finite.empty()) {
      if (exp_format_) {
        fill_scientific(finite);
      } else {
        fill_positional(finite);
      }
    }
    if (any_non_finite) {
      // nan and inf are right-aligned into the same width as the numbers.
      int offset = pad_right_ + 1;
      pad_left_ = std::max({pad_left_, 3 - offset, 3 + int(any_neg_inf) - offset});
    }
    style_.pad_left = pad_left_;
  }

  void operator()(T x, Word& w) const {
    FloatParts p = float_parts(x);
    if (p.is_nan || p.is_inf) {
      int len = p.is_inf && p.negative ? 4 : 3;
      w.append(pad_left_ + pad_right_ + 1 - len, ' ');
      append_non_finite(p, w);
    } else if (exp_format_) {
      format_scientific(p, style_, w);
    } else {
      format_positional(p, style_, w);
    }
  }

 private:
  // Widths of "int.frac" parts of the shortest positional forms.
  void fill_positional(const std::vector<FloatParts>& finite) {
    FloatStyle probe{.precision = kPrecision, .trim = Trim::kZeros};
    for (const FloatParts& p : finite) {
      Word w;
      format_positional(p, probe, w);
      std::string_view s = w.view();
      size_t dot = s.find('.');
      pad_left_ = std::max(pad_left_, int(dot));
      pad_right_ = std::max(pad_right_, int(s.size() - dot - 1));
    }
    style_ = FloatStyle{
        .precision = kPrecision, .min_digits = 0, .trim = Trim::kZeros, .pad_right = pad_right_};
  }

  // All mantissas get as many digits as the longest needs; exponents a common width.
  void fill_scientific(const std::vector<FloatParts>& finite) {
    FloatStyle probe{.precision = kPrecision, .trim = Trim::kZeros};
    int frac_digits = 0, exp_size = 0;
    for (const FloatParts& p : finite) {
      Word w;
      format_scientific(p, probe, w);
      std::string_view s = w.view();
      size_t dot = s.find('.'), e = s.find('e');
      pad_left_ = std::max(pad_left_, int(dot));
      frac_digits = std::max(frac_digits, int(e - dot - 1));
      exp_size = std::max(exp_size, int(s.size() - e - 2));
    }
    pad_right_ = exp_size + 2 + frac_digits;
    style_ = FloatStyle{.precision = frac_digits,
                        .min_digits = frac_digits,
                        .trim = Trim::kKeep,
                        .exp_digits = exp_size};
  }

  bool exp_format_ = false;
  int pad_left_ = 0;
  int pad_right_ = 0;
  FloatStyle style_;
};

// Appends the decimal form of an integer.
template <class T>
void append_int(T x, Word& w) {
  char buf[24];
  auto res = std::to_chars(buf, buf + sizeof(buf), x);
  w.append(std::string_view(buf, size_t(res.ptr - buf)));
}

template <class T>
int decimal_length(T x) {
  Word w;
  append_int(x, w);
  return w.size();
}

// numpy's IntegerFormat: right-aligned to the longer of max and min.
template <class T>
class IntFormat {
 public:
  explicit IntFormat(const std::vector<T>& shown) {
    auto [lo, hi] = std::minmax_element(shown.begin(), shown.end());
    width_ = std::max(decimal_length(*lo), decimal_length(*hi));
  }
  void operator()(T x, Word& w) const {
    w.append(width_ - decimal_length(x), ' ');
    append_int(x, w);
  }

 private:
  int width_ = 0;
};

// numpy's BoolFormat: ` True` lines up with `False`, except in a 0-d array.
class BoolFormat {
 public:
  explicit BoolFormat(bool zero_d) : true_str_(zero_d ? "True" : " True") {}
  void operator()(bool x, Word& w) const { w.append(x ? true_str_ : "False"); }

 private:
  std::string_view true_str_;
};

// bfloat16 is not a numpy floating type, so numpy prints each element with its repr, and
// ml_dtypes' repr streams the value as float: printf's "%g" (6 significant digits), with
// no padding and no sign on nan. to_chars is that format without the locale.
void append_bfloat16(bfloat16_t x, Word& w) {
  float f = static_cast<float>(x);
  char buf[32];
  auto res = std::to_chars(buf, buf + sizeof(buf), double(std::isnan(f) ? std::fabs(f) : f),
                           std::chars_format::general, 6);
  w.append(std::string_view(buf, size_t(res.ptr - buf)));
}

class BFloat16Format {
 public:
  void operator()(bfloat16_t x, Word& w) const { append_bfloat16(x, w); }
};

// ---------------------------------------------------------------------------------------
// Layout: numpy's _leading_trailing and _formatArray.

// Marks the "..." position in a summarized axis.
constexpr int64_t kSummaryMark = -1;

// Which elements a print shows: along each axis every index or, when summarizing, the
// first and last kEdgeItems with kSummaryMark between them.
class Selection {
 public:
  Selection(const Shape& shape, bool summarize) : strides_(shape.size(), 1) {
    for (int i = int(shape.size()) - 2; i >= 0; --i) strides_[i] = strides_[i + 1] * shape[i + 1];
    for (int64_t dim : shape) {
      std::vector<int64_t>& idx = indices_.emplace_back();
      bool elide = summarize && dim > 2 * kEdgeItems;
      for (int64_t i = 0; i < dim; ++i) {
        if (!elide || i < kEdgeItems || i >= dim - kEdgeItems) idx.push_back(i);
        if (elide && i == kEdgeItems) idx.push_back(kSummaryMark);
      }
    }
  }

  size_t rank() const { return strides_.size(); }
  const std::vector<int64_t>& indices(size_t axis) const { return indices_[axis]; }
  int64_t stride(size_t axis) const { return strides_[axis]; }

  // The shown elements, which alone size the formatters' columns.
  template <class T>
  std::vector<T> gather(const T* data) const {
    std::vector<T> out;
    gather_from(data, 0, 0, out);
    return out;
  }

 private:
  template <class T>
  void gather_from(const T* data, size_t axis, int64_t offset, std::vector<T>& out) const {
    if (axis == rank()) {
      out.push_back(data[offset]);
      return;
    }
    for (int64_t i : indices_[axis]) {
      if (i != kSummaryMark) gather_from(data, axis + 1, offset + i * strides_[axis], out);
    }
  }

  std::vector<int64_t> strides_;
  std::vector<std::vector<int64_t>> indices_;
};

// numpy's array2string for a non-empty array.
std::string array2string(const HostArrayView& v, std::string_view separator, int prefix_len,
                         int line_width) {
  PARAX_CHECK(shape_size(v.shape) > 0);
  Selection selection(v.shape, shape_size(v.shape) > kThreshold);
  return dispatch_dtype(v.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* data = static_cast<const T*>(v.data);
    auto layout = [&](const auto& element_format) {
      Word w;
      auto element = [&](int64_t i, std::string& out) {
        w.clear();
        element_format(data[i], w);
        out += w.view();
      };
      if (v.shape.empty()) {
        std::string out;
        element(0, out);
        return out;
      }
      NestedFormat fmt;
      fmt.separator = std::string(separator);
      fmt.prefix_width = prefix_len;
      fmt.line_width = line_width;
      fmt.summarize = shape_size(v.shape) > kThreshold;
      fmt.edge_items = int(kEdgeItems);
      return format_nested(v.shape, element, fmt);
    };
    if constexpr (std::is_same_v<T, bool>) {
      return layout(BoolFormat(v.shape.empty()));
    } else if constexpr (std::is_integral_v<T>) {
      return layout(IntFormat<T>(selection.gather(data)));
    } else if constexpr (std::is_same_v<T, bfloat16_t>) {
      return layout(BFloat16Format());
    } else {
      return layout(FloatFormat<T>(selection.gather(data)));
    }
  });
}

// numpy's str of a scalar: floats print their shortest digits, positionally for
// 1e-4 <= |x| < 1e16 ("1.0", "0.0001") and in Python's scientific style otherwise
// ("1e-05", "1.5e+16").
template <class T>
std::string scalar_str(T x) {
  Word w;
  if constexpr (std::is_same_v<T, bool>) {
    w.append(x ? "True" : "False");
  } else if constexpr (std::is_integral_v<T>) {
    append_int(x, w);
  } else if constexpr (std::is_same_v<T, bfloat16_t>) {
    append_bfloat16(x, w);
  } else {
    FloatParts p = float_parts(x);
    double a = std::fabs(to_double(x));
    if (p.is_nan || p.is_inf) {
      append_non_finite(p, w);
    } else if (a == 0 || (a >= 1e-4 && a < 1e16)) {
      format_positional(p, FloatStyle{.trim = Trim::kLeaveOneZero}, w);
    } else {
      format_scientific(p, FloatStyle{.trim = Trim::kDotAndZeros}, w);
    }
  }
  return std::string(w.view());
}

}  // namespace

std::string array_shape_repr(const Shape& shape, DType dtype, bool weak_type) {
  std::string weak = weak_type ? ", weak_type=True" : "";
  return std::string(kReprPrefix) + "shape=" + shape_str(shape) +
         ", dtype=" + std::string(dtype_name(dtype)) + weak + ")";
}

std::string array_repr(const HostArrayView& v, bool weak_type) {
  std::string dtype_str = "dtype=" + std::string(dtype_name(v.dtype));
  if (weak_type) dtype_str += ", weak_type=True";
  dtype_str += ')';
  std::string body;
  if (shape_size(v.shape) == 0) {
    body = "[], shape=" + shape_str(v.shape);
  } else {
    // numpy narrows the line by the suffix "," JAX appends.
    body = array2string(v, ", ", int(kReprPrefix.size()), kLineWidth - 1);
  }
  // JAX's own measure of the last line (2 more than its length), and its quirk: when
  // the dtype does not fit, it is separated by spaces rather than put on a new line.
  size_t newline = body.rfind('\n');
  size_t last_line_len = newline == std::string::npos ? body.size() + 2 : body.size() - newline + 1;
  bool too_long = last_line_len + dtype_str.size() + 1 > size_t(kLineWidth);
  std::string sep = too_long ? std::string(kReprPrefix.size(), ' ') : " ";
  return std::string(kReprPrefix) + body + "," + sep + dtype_str;
}

std::string array_str(const HostArrayView& v) {
  if (v.shape.empty()) {
    return dispatch_dtype(v.dtype, [&](auto tag) {
      using T = decltype(tag);
      return scalar_str(*static_cast<const T*>(v.data));
    });
  }
  if (shape_size(v.shape) == 0) return "[]";
  return array2string(v, " ", 0, kLineWidth);
}

}  // namespace parax::detail
