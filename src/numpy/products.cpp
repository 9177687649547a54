// numpy's products (dot, matmul, einsum, tensordot, kron, ...) over lax's dot_general,
// following jax.numpy: every product is one dot_general plus transposes, squeezes and sums,
// accumulating in the promoted dtype.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "lax/promote.h"
#include "parax/lax.h"
#include "parax/numpy.h"

namespace parax::numpy {
namespace {

using frontend::TypedDType;

// The operands converted to the dtype of their product (JAX passes that dtype to
// dot_general as preferred_element_type; converting first keeps the primitive simple).
struct Product {
  Array a, b;
  TypedDType out;
};

Product promote_product(const Array& a, const Array& b) {
  TypedDType out = base::result_type(frontend::typed(std::vector<Array>{a, b}));
  return {frontend::convert(a, out.dtype), frontend::convert(b, out.dtype), out};
}

Array finish(const Array& result, TypedDType out) {
  return frontend::convert(result, out.dtype, out.weak);
}

// ---- einsum ----------------------------------------------------------------------------

// One operand's labelled dimensions.
struct Term {
  Array x;
  std::string names;
};

std::string strip_spaces(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c != ' ') out += c;
  }
  return out;
}

// Replaces "..." in each input term by fresh labels for the dimensions it stands for,
// right-aligned across operands as numpy broadcasts them.
std::vector<std::string> expand_ellipses(std::vector<std::string> terms, std::string& output,
                                         bool explicit_output, const std::vector<Array>& ops) {
  size_t ellipsis_rank = 0;
  std::vector<size_t> ranks(terms.size(), 0);
  for (size_t i = 0; i < terms.size(); ++i) {
    size_t pos = terms[i].find("...");
    if (pos == std::string::npos) continue;
    const size_t named = terms[i].size() - 3;
    if (int64_t(named) > ops[i].ndim()) {
      throw ValueError("[numpy.einsum] operand " + std::to_string(i) + " has " +
                       std::to_string(ops[i].ndim()) + " dimensions; expected at least " +
                       std::to_string(named) + " for '" + terms[i] + "'");
    }
    ranks[i] = size_t(ops[i].ndim()) - named;
    ellipsis_rank = std::max(ellipsis_rank, ranks[i]);
  }
  // Labels outside the letters cannot collide with the user's.
  std::string fresh;
  for (size_t k = 0; k < ellipsis_rank; ++k) fresh += char(0x80 + k);
  for (size_t i = 0; i < terms.size(); ++i) {
    size_t pos = terms[i].find("...");
    if (pos == std::string::npos) continue;
    terms[i].replace(pos, 3, fresh.substr(ellipsis_rank - ranks[i]));
  }
  size_t out_pos = output.find("...");
  if (out_pos != std::string::npos) {
    output.replace(out_pos, 3, fresh);
  } else if (!explicit_output) {
    output = fresh + output;
  }
  return terms;
}

// Parses `subscripts` into one labelled term per operand and the output labels.
std::vector<Term> parse_einsum(const std::string& subscripts, const std::vector<Array>& ops,
                               std::string& output) {
  std::string spec = strip_spaces(subscripts);
  const size_t arrow = spec.find("->");
  const bool explicit_output = arrow != std::string::npos;
  std::string inputs = explicit_output ? spec.substr(0, arrow) : spec;
  output = explicit_output ? spec.substr(arrow + 2) : "";
  std::vector<std::string> terms;
  size_t begin = 0;
  for (size_t comma; (comma = inputs.find(',', begin)) != std::string::npos; begin = comma + 1) {
    terms.push_back(inputs.substr(begin, comma - begin));
  }
  terms.push_back(inputs.substr(begin));
  if (terms.size() != ops.size()) {
    throw ValueError("[numpy.einsum] '" + subscripts + "' names " + std::to_string(terms.size()) +
                     " operands; expected " + std::to_string(ops.size()));
  }
  if (!explicit_output) {
    // Implicit mode: labels that appear once, in alphabetical order.
    std::map<char, int> counts;
    for (const std::string& t : terms) {
      for (char c : t) {
        if (c != '.') ++counts[c];
      }
    }
    for (auto [c, n] : counts) {
      if (n == 1) output += c;
    }
  }
  terms = expand_ellipses(std::move(terms), output, explicit_output, ops);
  std::map<char, int64_t> sizes;
  std::vector<Term> out;
  for (size_t i = 0; i < terms.size(); ++i) {
    if (int64_t(terms[i].size()) != ops[i].ndim()) {
      throw ValueError("[numpy.einsum] operand " + std::to_string(i) + " has shape " +
                       shape_str(ops[i].shape()) + "; expected rank " +
                       std::to_string(terms[i].size()) + " for '" + terms[i] + "'");
    }
    for (size_t d = 0; d < terms[i].size(); ++d) {
      const char c = terms[i][d];
      const int64_t n = ops[i].shape()[d];
      auto [it, fresh] = sizes.emplace(c, n);
      if (!fresh && it->second != n && it->second != 1 && n != 1) {
        throw ValueError("Size of label '" + std::string(1, c) + "' for operand " +
                         std::to_string(i) + " (" + std::to_string(n) +
                         ") does not match previous terms (" + std::to_string(it->second) + ").");
      }
      if (it->second == 1) it->second = n;
    }
    out.push_back({ops[i], terms[i]});
  }
  for (char c : output) {
    if (!sizes.count(c)) {
      throw ValueError("[numpy.einsum] output label '" + std::string(1, c) +
                       "' does not appear in any input of '" + subscripts + "'");
    }
    if (std::count(output.begin(), output.end(), c) > 1) {
      throw ValueError("[numpy.einsum] output label '" + std::string(1, c) +
                       "' appears more than once in '" + subscripts + "'");
    }
  }
  return out;
}

Array sum_axes(const Array& x, const std::vector<int64_t>& axes) {
  if (axes.empty()) return x;
  return x.dtype() == DType::bool_ ? lax::reduce_or(x, axes) : lax::reduce_sum(x, axes);
}

// Sums away the labels of `t` in `labels`.
void sum_labels(Term& t, const std::string& labels) {
  std::vector<int64_t> axes;
  std::string kept;
  for (size_t d = 0; d < t.names.size(); ++d) {
    if (labels.find(t.names[d]) != std::string::npos) {
      axes.push_back(int64_t(d));
    } else {
      kept += t.names[d];
    }
  }
  t.x = sum_axes(t.x, axes);
  t.names = kept;
}

// A label repeated within one operand takes its diagonal (JAX's sum_repeats): mask off
// the rest, then sum all its copies, or all but the last when `keep` still needs it.
void sum_repeats(Term& t, const std::string& keep) {
  for (size_t i = 0; i < t.names.size(); ++i) {
    const char c = t.names[i];
    std::vector<int64_t> axes;
    for (size_t d = 0; d < t.names.size(); ++d) {
      if (t.names[d] == c) axes.push_back(int64_t(d));
    }
    if (axes.size() < 2) continue;
    Array mask;
    Array first = lax::broadcasted_iota(DType::int32, t.x.shape(), axes[0]);
    for (size_t k = 1; k < axes.size(); ++k) {
      Array eq = lax::eq(first, lax::broadcasted_iota(DType::int32, t.x.shape(), axes[k]));
      mask = k == 1 ? eq : lax::bitwise_and(mask, eq);
    }
    t.x = lax::select(mask, t.x, zeros_like(t.x));
    if (keep.find(c) == std::string::npos) {
      t.x = sum_axes(t.x, axes);
      t.names.erase(std::remove(t.names.begin(), t.names.end(), c), t.names.end());
    } else {
      axes.pop_back();
      t.x = sum_axes(t.x, axes);
      std::string kept;
      for (size_t d = 0; d < t.names.size(); ++d) {
        if (std::find(axes.begin(), axes.end(), int64_t(d)) == axes.end()) kept += t.names[d];
      }
      t.names = kept;
    }
    i = size_t(-1);  // the labels changed: rescan
  }
}

// Squeezes unit dimensions whose label has a larger size in `other` (JAX's
// filter_singleton_dims), so such labels broadcast instead of contracting.
void filter_singleton_dims(Term& t, const Term& other) {
  std::vector<int64_t> squeeze_axes;
  std::string kept;
  for (size_t d = 0; d < t.names.size(); ++d) {
    size_t j = other.names.find(t.names[d]);
    bool keep = t.x.shape()[d] != 1 || j == std::string::npos || other.x.shape()[j] == 1;
    if (keep) {
      kept += t.names[d];
    } else {
      squeeze_axes.push_back(int64_t(d));
    }
  }
  t.x = lax::squeeze(t.x, squeeze_axes);
  t.names = kept;
}

// Labels of `t` that occur once in it, in neither `other` nor `output`.
std::string uniques(const Term& t, const std::string& other, const std::string& output) {
  std::string out;
  for (char c : t.names) {
    if (std::count(t.names.begin(), t.names.end(), c) == 1 && other.find(c) == std::string::npos &&
        output.find(c) == std::string::npos) {
      out += c;
    }
  }
  return out;
}

Array transpose_to(const Array& x, const std::string& names, const std::string& output) {
  std::vector<int64_t> perm;
  for (char c : output) perm.push_back(int64_t(names.find(c)));
  return lax::transpose(x, perm);
}

std::string remove_chars(const std::string& s, const std::string& chars) {
  std::string out;
  for (char c : s) {
    if (chars.find(c) == std::string::npos) out += c;
  }
  return out;
}

// Contracts two terms with one dot_general (JAX's two-operand einsum step).
Array contract(Term lhs, Term rhs, const std::string& output, DType preferred) {
  sum_labels(lhs, uniques(lhs, rhs.names, output));
  sum_labels(rhs, uniques(rhs, lhs.names, output));
  sum_repeats(lhs, output + rhs.names);
  sum_repeats(rhs, output + lhs.names);
  filter_singleton_dims(lhs, rhs);
  filter_singleton_dims(rhs, lhs);
  std::string batch;
  for (char c : output) {
    if (lhs.names.find(c) != std::string::npos && rhs.names.find(c) != std::string::npos) {
      batch += c;
    }
  }
  std::string contracted;
  for (char c : lhs.names) {
    if (rhs.names.find(c) != std::string::npos && output.find(c) == std::string::npos) {
      contracted += c;
    }
  }
  std::sort(contracted.begin(), contracted.end());
  lax::DotDimensionNumbers dims;
  for (char c : contracted) {
    dims.lhs_contracting.push_back(int64_t(lhs.names.find(c)));
    dims.rhs_contracting.push_back(int64_t(rhs.names.find(c)));
  }
  for (char c : batch) {
    dims.lhs_batch.push_back(int64_t(lhs.names.find(c)));
    dims.rhs_batch.push_back(int64_t(rhs.names.find(c)));
  }
  const std::string removed = batch + contracted;
  const std::string lhs_free = remove_chars(lhs.names, removed);
  const std::string rhs_free = remove_chars(rhs.names, removed);
  // Try (rhs, lhs) first: when it already yields the output order no transpose is needed.
  if (batch + rhs_free + lhs_free == output) {
    std::swap(dims.lhs_contracting, dims.rhs_contracting);
    std::swap(dims.lhs_batch, dims.rhs_batch);
    return lax::dot_general(rhs.x, lhs.x, dims, preferred);
  }
  Array out = lax::dot_general(lhs.x, rhs.x, dims, preferred);
  return transpose_to(out, batch + lhs_free + rhs_free, output);
}

}  // namespace

Array dot(const ArrayLike& a_, const ArrayLike& b_) {
  Product p = promote_product(a_.array(), b_.array());
  const int64_t a_ndim = p.a.ndim();
  const int64_t b_ndim = p.b.ndim();
  lax::DotDimensionNumbers dims;
  if (a_ndim != 0 && b_ndim != 0) {
    dims.lhs_contracting = {a_ndim - 1};
    dims.rhs_contracting = {b_ndim == 1 ? 0 : b_ndim - 2};
  }
  return finish(lax::dot_general(p.a, p.b, dims, p.out.dtype), p.out);
}

Array matmul(const ArrayLike& a_, const ArrayLike& b_) {
  const Array* in[2] = {&a_.array(), &b_.array()};
  for (int i = 0; i < 2; ++i) {
    if (in[i]->ndim() < 1) {
      throw ValueError("matmul input operand " + std::to_string(i) +
                       " must have ndim at least 1, but it has ndim " +
                       std::to_string(in[i]->ndim()));
    }
  }
  Product p = promote_product(*in[0], *in[1]);
  const bool a_is_mat = p.a.ndim() > 1;
  const bool b_is_mat = p.b.ndim() > 1;
  // Batch dimensions right-aligned; -1 marks a missing one.
  Shape a_batch = a_is_mat ? Shape(p.a.shape().begin(), p.a.shape().end() - 2) : Shape{};
  Shape b_batch = b_is_mat ? Shape(p.b.shape().begin(), p.b.shape().end() - 2) : Shape{};
  const size_t num_batch = std::max(a_batch.size(), b_batch.size());
  a_batch.insert(a_batch.begin(), num_batch - a_batch.size(), -1);
  b_batch.insert(b_batch.begin(), num_batch - b_batch.size(), -1);
  std::vector<int64_t> a_squeeze, b_squeeze, a_bdims, b_bdims;
  std::vector<int64_t> idx_batch, idx_a_other, idx_b_other;
  for (size_t i = 0; i < num_batch; ++i) {
    const int64_t ba = a_batch[i];
    const int64_t bb = b_batch[i];
    const int64_t n = int64_t(i);
    if (ba == -1) {
      idx_b_other.push_back(n);
    } else if (bb == -1) {
      idx_a_other.push_back(n);
    } else if (ba == 1) {
      idx_b_other.push_back(n);
      a_squeeze.push_back(int64_t(idx_batch.size() + idx_a_other.size() + a_squeeze.size()));
    } else if (bb == 1) {
      idx_a_other.push_back(n);
      b_squeeze.push_back(int64_t(idx_batch.size() + idx_b_other.size() + b_squeeze.size()));
    } else if (ba == bb) {
      a_bdims.push_back(int64_t(idx_batch.size() + idx_a_other.size()));
      b_bdims.push_back(int64_t(idx_batch.size() + idx_b_other.size()));
      idx_batch.push_back(n);
    } else {
      throw ValueError("Incompatible shapes for matmul arguments: " + shape_str(in[0]->shape()) +
                       " and " + shape_str(in[1]->shape()));
    }
  }
  if (a_is_mat) idx_a_other.push_back(int64_t(num_batch));
  if (b_is_mat) idx_b_other.push_back(int64_t(num_batch) + (a_is_mat ? 1 : 0));
  std::vector<int64_t> order = idx_batch;
  order.insert(order.end(), idx_a_other.begin(), idx_a_other.end());
  order.insert(order.end(), idx_b_other.begin(), idx_b_other.end());
  // perm = argsort(order): the result dimension each output position comes from.
  std::vector<int64_t> perm(order.size());
  std::iota(perm.begin(), perm.end(), 0);
  std::stable_sort(perm.begin(), perm.end(),
                   [&](int64_t x, int64_t y) { return order[size_t(x)] < order[size_t(y)]; });
  Array a = lax::squeeze(p.a, a_squeeze);
  Array b = lax::squeeze(p.b, b_squeeze);
  lax::DotDimensionNumbers dims{
      {a.ndim() - 1}, {b.ndim() - 1 - (b_is_mat ? 1 : 0)}, a_bdims, b_bdims};
  Array out = lax::dot_general(a, b, dims, p.out.dtype);
  return finish(lax::transpose(out, perm), p.out);
}

Array vdot(const ArrayLike& a, const ArrayLike& b) { return dot(ravel(a), ravel(b)); }

Array inner(const ArrayLike& a_, const ArrayLike& b_) {
  const Array& a0 = a_.array();
  const Array& b0 = b_.array();
  if (a0.ndim() == 0 || b0.ndim() == 0) return multiply(a0, b0);
  Product p = promote_product(a0, b0);
  lax::DotDimensionNumbers dims{{p.a.ndim() - 1}, {p.b.ndim() - 1}, {}, {}};
  return finish(lax::dot_general(p.a, p.b, dims, p.out.dtype), p.out);
}

Array outer(const ArrayLike& a, const ArrayLike& b) {
  std::vector<Array> ab = frontend::promote_dtypes({a.array(), b.array()});
  Array col = reshape(ab[0], Shape{ab[0].size(), 1});
  Array row = reshape(ab[1], Shape{1, ab[1].size()});
  return multiply(col, row);
}

Array tensordot(const ArrayLike& a, const ArrayLike& b, int64_t axes) {
  const Array& x = a.array();
  const Array& y = b.array();
  if (axes < 0 || axes > std::min(x.ndim(), y.ndim())) {
    throw TypeError("Number of tensordot axes (axes " + std::to_string(axes) +
                    ") exceeds input ranks (" + shape_str(x.shape()) + " and " +
                    shape_str(y.shape()) + ")");
  }
  std::vector<int64_t> ca, cb;
  for (int64_t k = 0; k < axes; ++k) {
    ca.push_back(x.ndim() - axes + k);
    cb.push_back(k);
  }
  return tensordot(x, y, {ca, cb});
}

Array tensordot(const ArrayLike& a, const ArrayLike& b,
                const std::pair<std::vector<int64_t>, std::vector<int64_t>>& axes) {
  std::vector<Array> xy = frontend::promote_dtypes({a.array(), b.array()});
  const Array& x = xy[0];
  const Array& y = xy[1];
  if (axes.first.size() != axes.second.size()) {
    throw TypeError("tensordot requires axes lists to have equal length, got " +
                    std::to_string(axes.first.size()) + " and " +
                    std::to_string(axes.second.size()) + ".");
  }
  std::vector<int64_t> ca, cb;
  for (int64_t d : axes.first) ca.push_back(frontend::canonicalize_axis(d, x.ndim()));
  for (int64_t d : axes.second) cb.push_back(frontend::canonicalize_axis(d, y.ndim()));
  return lax::dot_general(
      x, y, {.lhs_contracting = ca, .rhs_contracting = cb, .lhs_batch = {}, .rhs_batch = {}});
}

Array kron(const ArrayLike& a, const ArrayLike& b) {
  std::vector<Array> xy = frontend::promote_dtypes({a.array(), b.array()});
  Array x = xy[0];
  Array y = xy[1];
  auto lead = [](const Array& z, int64_t k) {
    std::vector<int64_t> dims;
    for (int64_t d = 0; d < k; ++d) dims.push_back(d);
    return k > 0 ? lax::expand_dims(z, dims) : z;
  };
  if (x.ndim() < y.ndim()) x = lead(x, y.ndim() - x.ndim());
  if (y.ndim() < x.ndim()) y = lead(y, x.ndim() - y.ndim());
  std::vector<int64_t> odd, even;
  for (int64_t d = 0; d < x.ndim(); ++d) {
    odd.push_back(2 * d + 1);
    even.push_back(2 * d);
  }
  Shape out_shape;
  for (int64_t d = 0; d < x.ndim(); ++d)
    out_shape.push_back(x.shape()[size_t(d)] * y.shape()[size_t(d)]);
  Array xr = x.ndim() ? lax::expand_dims(x, odd) : x;
  Array yr = y.ndim() ? lax::expand_dims(y, even) : y;
  return reshape(multiply(xr, yr), out_shape);
}

Array einsum(const std::string& subscripts, const ArrayLike& a, const ArrayLike& b) {
  std::string output;
  std::vector<Term> terms = parse_einsum(subscripts, {a.array(), b.array()}, output);
  Product p = promote_product(terms[0].x, terms[1].x);
  terms[0].x = p.a;
  terms[1].x = p.b;
  return finish(contract(terms[0], terms[1], output, p.out.dtype), p.out);
}

Array einsum(const std::string& subscripts, const ArrayLike& a) {
  std::string output;
  std::vector<Term> terms = parse_einsum(subscripts, {a.array()}, output);
  Term t = terms[0];
  TypedDType out = base::result_type(std::vector{frontend::typed(t.x)});
  sum_labels(t, uniques(t, "", output));
  sum_repeats(t, output);
  return finish(transpose_to(t.x, t.names, output), out);
}

}  // namespace parax::numpy
