// conv_general_dilated's float32 kernel on oneDNN. The equation's params alone say which
// oneDNN primitive computes it:
//  - no lhs dilation, a window smaller than the output: a forward convolution;
//  - lhs dilation (JAX's input gradient of a strided convolution: the cotangent dilated by
//    the strides, the kernel reversed): backward_data of the forward convolution whose
//    weights are the operand reversed again, strides = the lhs dilation;
//  - a window larger than the output, or batch groups (JAX's weight gradient: batch and
//    feature swapped, the window the activations' size): backward_weights, the batch
//    being the operands' feature dimension, strides = the rhs dilation.
// oneDNN's fast kernels want blocked layouts (nChw16c, OIhw16i16o); each operand is
// reordered from parax's dense buffer (any dimension order, as strides) only when the
// primitive chose another layout. Threads: oneDNN is built on OpenMP here, whose teams
// would fight parax's oneTBB pool, so every primitive is made and run single-threaded
// (OpenMP's per-thread limit set to 1) and the work is split into pieces run as pool tasks,
// each reordering its own slice: the batch, two pieces per thread of the device's share
// of the pool (weight gradients of the pieces summed), or, for a batch smaller than that
// share, the output channels. Primitives are cached by shape and params.
#include "prims/kernels/conv_dnnl.h"

#if PARAX_HAVE_DNNL
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/lru_cache.h"
#include "base/thread_pool.h"
#include "prims/prim_util.h"
#endif

namespace parax::prims::kernels {
namespace {

std::atomic<int64_t> g_forward{0}, g_backward_data{0}, g_backward_weights{0}, g_im2col{0};

}  // namespace

ConvPathCounts conv_path_counts() {
  return {g_forward.load(), g_backward_data.load(), g_backward_weights.load(), g_im2col.load()};
}

void count_im2col_conv() { g_im2col.fetch_add(1, std::memory_order_relaxed); }

#if !PARAX_HAVE_DNNL

bool conv_onednn(const core::KernelCall&, const ConvParams&, bool) { return false; }

#else

namespace {

using Ints = std::vector<int64_t>;
using dnnl::memory;
using Dims = memory::dims;

enum class Form { forward, backward_data, backward_weights };

// A tensor in oneDNN's roles, over one of parax's buffers (0 lhs, 1 rhs, 2 result): its
// dims in oneDNN's order ((N, C, spatial) or weights' ([G,] O, I, spatial)) and the
// element strides of those dims in the buffer.
struct Tensor {
  Dims dims, strides;
  int buffer = 0;      // 3: the reversed weights conv_onednn copies
  int64_t offset = 0;  // of a piece's slice, in elements
};

// What to ask of oneDNN: the form, its geometry, and its three tensors in oneDNN's roles
// (src or diff_src, weights or diff_weights, dst or diff_dst).
struct Plan {
  Form form = Form::forward;
  Dims stride, dilate, pad_l, pad_r;
  Tensor src, wei, dst;
  bool flip = false;  // the weights are the rhs reversed in space (backward_data)
};

// oneDNN's padding_r for a convolution from `src` to `dst` positions: its check is
// (src - range + pl + pr) / stride + 1 == dst with pl >= 0 and pr > -stride. Which pr
// holds does not change the result (each output reads src[o * stride + k * dil - pl]).
std::optional<int64_t> right_pad(int64_t src, int64_t dst, int64_t ker, int64_t dil, int64_t stride,
                                 int64_t pl) {
  if (pl < 0 || src <= 0 || dst <= 0 || ker <= 0) return std::nullopt;
  const int64_t range = 1 + (ker - 1) * dil;
  const int64_t pr = (dst - 1) * stride + range - src - pl;
  const int64_t lowest = 1 - stride;  // pr > -stride
  if (pr + stride - 1 < lowest) return std::nullopt;
  return std::max(pr, lowest);
}

Ints pick(const Shape& shape, const Ints& spec) {
  Ints out;
  for (int64_t d : spec) out.push_back(shape[size_t(d)]);
  return out;
}

// Weights dims with an optional leading group dimension split from the output features.
Tensor weights(int64_t groups, int64_t o, int64_t i, int64_t so, int64_t si, const Ints& sp,
               const Ints& sp_strides, int buffer) {
  Tensor t;
  t.buffer = buffer;
  if (groups > 1) {
    t.dims = {groups, o / groups, i};
    t.strides = {o / groups * so, so, si};
  } else {
    t.dims = {o, i};
    t.strides = {so, si};
  }
  t.dims.insert(t.dims.end(), sp.begin(), sp.end());
  t.strides.insert(t.strides.end(), sp_strides.begin(), sp_strides.end());
  return t;
}

Dims concat(Ints a, const Ints& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::optional<Plan> make_plan(const core::KernelCall& call, const ConvParams& p) {
  const Shape& lshape = call.in_avals[0].shape;
  const Shape& rshape = call.in_avals[1].shape;
  const Shape& oshape = call.out_avals[0].shape;
  const size_t n = p.strides.size();
  if (n < 1 || n > 3) return std::nullopt;
  const Ints l = pick(lshape, p.lhs_spec), r = pick(rshape, p.rhs_spec),
             o = pick(oshape, p.out_spec);
  const Ints ls = pick(strides_of(lshape), p.lhs_spec), rs = pick(strides_of(rshape), p.rhs_spec),
             os = pick(strides_of(oshape), p.out_spec);
  const auto sp = [](const Ints& v) { return Ints(v.begin() + 2, v.end()); };
  const bool lhs_dilated =
      std::any_of(p.lhs_dilation.begin(), p.lhs_dilation.end(), [](int64_t d) { return d > 1; });
  const bool strided =
      std::any_of(p.strides.begin(), p.strides.end(), [](int64_t d) { return d > 1; });
  int64_t window = 1, outputs = 1;
  for (size_t d = 0; d < n; ++d) {
    window *= r[d + 2];
    outputs *= o[d + 2];
  }
  const int64_t fgc = p.feature_group_count, bgc = p.batch_group_count;
  Plan plan;
  plan.stride.resize(n);
  plan.dilate.resize(n);
  plan.pad_l.resize(n);
  plan.pad_r.resize(n);
  if (!lhs_dilated && fgc == 1 && (bgc > 1 || window > outputs)) {
    // out[b, o, x] = sum_f,y lhs[b, f, x * s + y * rd - lo] rhs[o, f, y]: the weight
    // gradient of a convolution from lhs (batch f, channels b) to rhs (batch f, channels o).
    plan.form = Form::backward_weights;
    plan.src = {{l[1], l[0]}, {ls[1], ls[0]}, 0};
    plan.src.dims = concat(plan.src.dims, sp(l));
    plan.src.strides = concat(plan.src.strides, sp(ls));
    plan.dst = {{r[1], r[0]}, {rs[1], rs[0]}, 1};
    plan.dst.dims = concat(plan.dst.dims, sp(r));
    plan.dst.strides = concat(plan.dst.strides, sp(rs));
    plan.wei = weights(bgc, o[1], o[0], os[1], os[0], sp(o), sp(os), 2);
    for (size_t d = 0; d < n; ++d) {
      plan.stride[d] = p.rhs_dilation[d];
      plan.dilate[d] = p.strides[d] - 1;
      plan.pad_l[d] = p.pad_lo[d];
      const auto pr =
          right_pad(l[d + 2], r[d + 2], o[d + 2], p.strides[d], p.rhs_dilation[d], p.pad_lo[d]);
      if (!pr) return std::nullopt;
      plan.pad_r[d] = *pr;
    }
    return plan;
  }
  if (bgc > 1) return std::nullopt;
  if (lhs_dilated) {
    // out[b, o, i] = sum_c,k lhs[b, c, q] rhs[o, c, k] where q * ld = i + k * rd - lo: the
    // input gradient of a convolution from out to lhs with strides ld, padding
    // (K - 1) * rd - lo and the rhs reversed as weights [c, o].
    if (strided) return std::nullopt;
    plan.form = Form::backward_data;
    plan.flip = true;
    plan.src = {o, os, 2};
    plan.dst = {l, ls, 0};
    // The reversed weights are copied dense: [G,] channels of lhs, of out, spatial.
    const int64_t og = r[0] / fgc, cg = r[1];
    Ints dims = fgc > 1 ? Ints{fgc, cg, og} : Ints{cg, og};
    dims = concat(dims, sp(r));
    plan.wei.dims = dims;
    plan.wei.strides = strides_of(Shape(dims.begin(), dims.end()));
    plan.wei.buffer = 3;
    for (size_t d = 0; d < n; ++d) {
      const int64_t k = r[d + 2];
      plan.stride[d] = p.lhs_dilation[d];
      plan.dilate[d] = p.rhs_dilation[d] - 1;
      plan.pad_l[d] = (k - 1) * p.rhs_dilation[d] - p.pad_lo[d];
      const auto pr =
          right_pad(o[d + 2], l[d + 2], k, p.rhs_dilation[d], p.lhs_dilation[d], plan.pad_l[d]);
      if (!pr) return std::nullopt;
      plan.pad_r[d] = *pr;
    }
    return plan;
  }
  plan.form = Form::forward;
  plan.src = {l, ls, 0};
  plan.dst = {o, os, 2};
  plan.wei = weights(fgc, r[0], r[1], rs[0], rs[1], sp(r), sp(rs), 1);
  for (size_t d = 0; d < n; ++d) {
    plan.stride[d] = p.strides[d];
    plan.dilate[d] = p.rhs_dilation[d] - 1;
    plan.pad_l[d] = p.pad_lo[d];
    const auto pr =
        right_pad(l[d + 2], o[d + 2], r[d + 2], p.rhs_dilation[d], p.strides[d], p.pad_lo[d]);
    if (!pr) return std::nullopt;
    plan.pad_r[d] = *pr;
  }
  return plan;
}

dnnl::engine& engine() {
  // Never destroyed: primitives cached in other statics may outlive it otherwise.
  static auto* e = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *e;
}

// oneDNN on OpenMP sizes its work by the calling thread's OpenMP limit; 1 keeps it on
// this (pool) thread, with no OpenMP team. The caller's own limit comes back afterwards
// (a user's OpenMP code on the same thread keeps its threads).
class SingleThreaded {
 public:
  SingleThreaded() : saved_(omp_get_max_threads()) {
    if (saved_ != 1) omp_set_num_threads(1);
  }
  ~SingleThreaded() {
    if (saved_ != 1) omp_set_num_threads(saved_);
  }
  SingleThreaded(const SingleThreaded&) = delete;
  SingleThreaded& operator=(const SingleThreaded&) = delete;

 private:
  int saved_;
};

dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

memory::desc plain(const Tensor& t) {
  return memory::desc(t.dims, memory::data_type::f32, t.strides);
}

memory::desc any(const Tensor& t) {
  return memory::desc(t.dims, memory::data_type::f32, memory::format_tag::any);
}

// A reorder between a plain and a chosen layout, absent when they are the same.
struct Reorder {
  memory::desc from, to;
  std::optional<dnnl::reorder> prim;
  Reorder(const memory::desc& f, const memory::desc& t) : from(f), to(t) {
    if (f != t) prim = dnnl::reorder(dnnl::reorder::primitive_desc(engine(), f, engine(), t));
  }
};

// The primitives for one plan and piece size.
struct Entry {
  dnnl::primitive conv;
  std::string impl;
  size_t scratch_bytes = 0;
  std::optional<Reorder> src, wei, dst;  // plain <-> chosen, in the data's direction
};

std::shared_ptr<Entry> build(const Plan& plan) {
  using namespace dnnl;
  const algorithm alg = algorithm::convolution_direct;
  primitive_attr attr;
  attr.set_scratchpad_mode(scratchpad_mode::user);
  const memory::desc src = any(plan.src), wei = any(plan.wei), dst = any(plan.dst);
  const auto fwd_desc = convolution_forward::desc(prop_kind::forward_training, alg, src, wei, dst,
                                                  plan.stride, plan.dilate, plan.pad_l, plan.pad_r);
  auto entry = std::make_shared<Entry>();
  if (plan.form == Form::forward) {
    convolution_forward::primitive_desc pd(fwd_desc, attr, engine(), true);
    if (!pd) return nullptr;
    entry->conv = convolution_forward(pd);
    entry->impl = pd.impl_info_str();
    entry->scratch_bytes = pd.scratchpad_desc().get_size();
    entry->src.emplace(plain(plan.src), pd.src_desc());
    entry->wei.emplace(plain(plan.wei), pd.weights_desc());
    entry->dst.emplace(pd.dst_desc(), plain(plan.dst));
    return entry;
  }
  convolution_forward::primitive_desc hint(fwd_desc, engine(), true);
  if (!hint) return nullptr;
  if (plan.form == Form::backward_data) {
    const convolution_backward_data::desc d(alg, src, wei, dst, plan.stride, plan.dilate,
                                            plan.pad_l, plan.pad_r);
    convolution_backward_data::primitive_desc pd(d, attr, engine(), hint, true);
    if (!pd) return nullptr;
    entry->conv = convolution_backward_data(pd);
    entry->impl = pd.impl_info_str();
    entry->scratch_bytes = pd.scratchpad_desc().get_size();
    entry->dst.emplace(plain(plan.dst), pd.diff_dst_desc());
    entry->wei.emplace(plain(plan.wei), pd.weights_desc());
    entry->src.emplace(pd.diff_src_desc(), plain(plan.src));
    return entry;
  }
  const convolution_backward_weights::desc d(alg, src, wei, dst, plan.stride, plan.dilate,
                                             plan.pad_l, plan.pad_r);
  convolution_backward_weights::primitive_desc pd(d, attr, engine(), hint, true);
  if (!pd) return nullptr;
  entry->conv = convolution_backward_weights(pd);
  entry->impl = pd.impl_info_str();
  entry->scratch_bytes = pd.scratchpad_desc().get_size();
  entry->src.emplace(plain(plan.src), pd.src_desc());
  entry->dst.emplace(plain(plan.dst), pd.diff_dst_desc());
  entry->wei.emplace(pd.diff_weights_desc(), plain(plan.wei));
  return entry;
}

std::string cache_key(const Plan& plan) {
  std::string key;
  const auto add = [&](const Ints& v) {
    for (int64_t x : v) key += std::to_string(x) + ",";
    key += ";";
  };
  key += std::to_string(int(plan.form)) + ":";
  for (const Ints* v :
       {&plan.stride, &plan.dilate, &plan.pad_l, &plan.pad_r, &plan.src.dims, &plan.src.strides,
        &plan.wei.dims, &plan.wei.strides, &plan.dst.dims, &plan.dst.strides}) {
    add(*v);
  }
  return key;
}

// Creating a primitive costs far more than running a small one (oneDNN generates code).
constexpr int64_t kCacheEntries = 256;

std::shared_ptr<Entry> lookup(const Plan& plan) {
  static std::mutex mu;
  static auto* cache = new detail::LruCache<std::string, std::shared_ptr<Entry> >(kCacheEntries);
  const std::string key = cache_key(plan);
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto* hit = cache->find(key)) return *hit;
  }
  std::shared_ptr<Entry> entry;
  try {
    entry = build(plan);
  } catch (const dnnl::error&) {
    entry = nullptr;  // a shape oneDNN rejects: the caller falls back
  }
  std::lock_guard<std::mutex> lock(mu);
  cache->put(key, entry);
  return entry;
}

bool fast_impl(const std::string& impl) {
  return impl.rfind("jit", 0) == 0 || impl.rfind("brg", 0) == 0;
}

// A 64-byte aligned float buffer.
struct Buffer {
  std::unique_ptr<float, decltype(&std::free)> data{nullptr, &std::free};
  size_t bytes = 0;
  float* get(size_t want) {
    if (want > bytes) {
      const size_t size = (want + 63) / 64 * 64;
      data.reset(static_cast<float*>(std::aligned_alloc(64, size)));
      if (!data) throw std::bad_alloc();
      bytes = size;
    }
    return data.get();
  }
};

// A pool thread's scratch for one piece at a time (a piece never waits on the pool, so no
// other piece runs on the thread meanwhile). Kept between calls unless large.
struct Scratch {
  Buffer src, dst, wei, pad;
  void trim() {
    constexpr size_t kKeep = size_t(16) << 20;
    for (Buffer* b : {&src, &dst, &wei, &pad}) {
      if (b->bytes > kKeep) *b = Buffer();
    }
  }
};

// Runs a reorder of `r` from the memory at `from` to the one at `to`.
void reorder(const Reorder& r, void* from, void* to) {
  memory a(r.from, engine(), from), b(r.to, engine(), to);
  r.prim->execute(stream(), a, b);
}

// The memory for `t` in the chosen layout: the plain buffer itself when it is the chosen
// layout, else `buf` (filled from the plain buffer first when `is_input`).
memory stage(const Reorder& r, bool is_input, float* plain_ptr, Buffer& buf) {
  if (!r.prim) return memory(is_input ? r.from : r.to, engine(), plain_ptr);
  const memory::desc& chosen = is_input ? r.to : r.from;
  memory m(chosen, engine(), buf.get(chosen.get_size()));
  if (is_input) reorder(r, plain_ptr, m.get_data_handle());
  return m;
}

void finish(const Reorder& r, const memory& m, float* plain_ptr) {
  if (r.prim) reorder(r, m.get_data_handle(), plain_ptr);
}

// The rhs reversed in space as [G,] c, o, spatial (dense), the weights of `plan`
// (backward_data): rhs [G * o, c, spatial] read backwards.
std::vector<float> reversed_weights(const core::KernelCall& call, const ConvParams& p,
                                    const Plan& plan) {
  const Shape& rshape = call.in_avals[1].shape;
  const Ints rs = strides_of(rshape);
  const size_t n = plan.stride.size();
  const bool grouped = plan.wei.dims.size() == n + 3;
  const int64_t groups = grouped ? plan.wei.dims[0] : 1;
  const int64_t cg = plan.wei.dims[grouped ? 1 : 0], og = plan.wei.dims[grouped ? 2 : 1];
  Ints k(n), ks(n);
  int64_t window = 1;
  for (size_t d = 0; d < n; ++d) {
    k[d] = rshape[size_t(p.rhs_spec[d + 2])];
    ks[d] = rs[size_t(p.rhs_spec[d + 2])];
    window *= k[d];
  }
  const int64_t so = rs[size_t(p.rhs_spec[0])], si = rs[size_t(p.rhs_spec[1])];
  std::vector<float> out(size_t(groups * cg * og * window));
  float* dst = out.data();
  const float* rhs = static_cast<const float*>(call.inputs[1]);
  Ints idx(n);
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t c = 0; c < cg; ++c) {
      for (int64_t oo = 0; oo < og; ++oo) {
        std::fill(idx.begin(), idx.end(), 0);
        for (int64_t w = 0; w < window; ++w) {
          int64_t off = (g * og + oo) * so + c * si;
          for (size_t d = 0; d < n; ++d) off += (k[d] - 1 - idx[d]) * ks[d];
          *dst++ = rhs[off];
          for (size_t d = n; d-- > 0;) {
            if (++idx[d] < k[d]) break;
            idx[d] = 0;
          }
        }
      }
    }
  }
  return out;
}

// Narrows dimension `dim` of `t` to [start, start + size).
void narrow(Tensor& t, size_t dim, int64_t start, int64_t size) {
  t.offset += start * t.strides[dim];
  t.dims[dim] = size;
}

// The pieces of `plan` that threads run apart: slices of the batch (a weight gradient's
// pieces then sum), or, for a batch smaller than the threads, of the output channels (of
// the input's for backward_data), multiples of 16 so blocked layouts split evenly.
std::vector<Plan> split(const Plan& plan, int64_t threads, bool* by_batch) {
  const int64_t batch = plan.src.dims[0];
  const bool grouped = plan.wei.dims.size() == plan.stride.size() + 3;
  const bool data = plan.form == Form::backward_data;
  const int64_t channels = data ? plan.src.dims[1] : plan.dst.dims[1];
  std::vector<Plan> out;
  if (batch < threads && !grouped && channels >= 32) {
    const int64_t chunk = (channels / threads + 15) / 16 * 16;
    for (int64_t c0 = 0; c0 < channels; c0 += chunk) {
      Plan piece = plan;
      const int64_t size = std::min(chunk, channels - c0);
      if (data) {
        narrow(piece.src, 1, c0, size);
        narrow(piece.wei, 1, c0, size);
      } else {
        narrow(piece.dst, 1, c0, size);
        narrow(piece.wei, 0, c0, size);
      }
      out.push_back(std::move(piece));
    }
    *by_batch = false;
    return out;
  }
  // Two per thread, so a core slowed by another process hands pieces to the other
  // (oneDNN's cost per image is the same at batch 1 as at 8 for these kernels).
  const int64_t pieces = std::clamp<int64_t>(2 * threads, 1, batch);
  for (int64_t i = 0, b0 = 0; i < pieces; ++i) {
    const int64_t size = batch / pieces + (i < batch % pieces ? 1 : 0);
    Plan piece = plan;
    narrow(piece.src, 0, b0, size);
    narrow(piece.dst, 0, b0, size);
    out.push_back(std::move(piece));
    b0 += size;
  }
  *by_batch = true;
  return out;
}

// Runs the pieces, whose weights are shared (a batch split) or their own slices.
void run(const core::KernelCall& call, const std::vector<Plan>& pieces,
         const std::vector<std::shared_ptr<Entry> >& entries, bool by_batch, float* reversed) {
  float* buffers[4] = {const_cast<float*>(static_cast<const float*>(call.inputs[0])),
                       const_cast<float*>(static_cast<const float*>(call.inputs[1])),
                       static_cast<float*>(call.outputs[0]), reversed};
  const auto at = [&](const Tensor& t) { return buffers[t.buffer] + t.offset; };
  const Form form = pieces[0].form;
  const bool wgrad = form == Form::backward_weights;
  // Weights in the chosen layout, once for all pieces when they share them.
  std::vector<float> shared;
  memory shared_mem;
  if (by_batch && !wgrad) {
    const Reorder& wr = *entries[0]->wei;
    if (wr.prim) {
      shared.resize(wr.to.get_size() / sizeof(float));
      reorder(wr, at(pieces[0].wei), shared.data());
      shared_mem = memory(wr.to, engine(), shared.data());
    } else {
      shared_mem = memory(wr.from, engine(), at(pieces[0].wei));
    }
  }
  std::vector<std::vector<float> > grads(wgrad ? pieces.size() : 0);
  parallel_chunks(int64_t(pieces.size()), 1, [&](int64_t begin, int64_t end) {
    const SingleThreaded one_thread;
    thread_local Scratch scratch;
    for (int64_t i = begin; i < end; ++i) {
      const Plan& piece = pieces[size_t(i)];
      const Entry& e = *entries[size_t(i)];
      std::unordered_map<int, memory> args;
      if (e.scratch_bytes > 0) {
        args[DNNL_ARG_SCRATCHPAD] = memory(
            memory::desc({int64_t(e.scratch_bytes)}, memory::data_type::u8, memory::format_tag::x),
            engine(), scratch.pad.get(e.scratch_bytes));
      }
      std::vector<float> own;  // this piece's weights (a channel split)
      if (!wgrad) {
        if (by_batch) {
          args[DNNL_ARG_WEIGHTS] = shared_mem;
        } else if (e.wei->prim) {
          own.resize(e.wei->to.get_size() / sizeof(float));
          reorder(*e.wei, at(piece.wei), own.data());
          args[DNNL_ARG_WEIGHTS] = memory(e.wei->to, engine(), own.data());
        } else {
          args[DNNL_ARG_WEIGHTS] = memory(e.wei->from, engine(), at(piece.wei));
        }
      }
      if (form == Form::forward) {
        args[DNNL_ARG_SRC] = stage(*e.src, true, at(piece.src), scratch.src);
        args[DNNL_ARG_DST] = stage(*e.dst, false, at(piece.dst), scratch.dst);
        e.conv.execute(stream(), args);
        finish(*e.dst, args[DNNL_ARG_DST], at(piece.dst));
      } else if (form == Form::backward_data) {
        args[DNNL_ARG_DIFF_DST] = stage(*e.dst, true, at(piece.dst), scratch.dst);
        args[DNNL_ARG_DIFF_SRC] = stage(*e.src, false, at(piece.src), scratch.src);
        e.conv.execute(stream(), args);
        finish(*e.src, args[DNNL_ARG_DIFF_SRC], at(piece.src));
      } else {
        args[DNNL_ARG_SRC] = stage(*e.src, true, at(piece.src), scratch.src);
        args[DNNL_ARG_DIFF_DST] = stage(*e.dst, true, at(piece.dst), scratch.dst);
        if (by_batch) {
          std::vector<float>& grad = grads[size_t(i)];
          grad.resize(e.wei->from.get_size() / sizeof(float));
          args[DNNL_ARG_DIFF_WEIGHTS] = memory(e.wei->from, engine(), grad.data());
          e.conv.execute(stream(), args);
        } else {
          // A channel slice of the gradient is final: straight to its place in the result.
          args[DNNL_ARG_DIFF_WEIGHTS] = stage(*e.wei, false, at(piece.wei), scratch.wei);
          e.conv.execute(stream(), args);
          finish(*e.wei, args[DNNL_ARG_DIFF_WEIGHTS], at(piece.wei));
        }
      }
    }
    scratch.trim();
  });
  if (!wgrad || !by_batch) return;
  // The batch pieces' weight gradients share one layout (conv_onednn checks).
  std::vector<float>& total = grads[0];
  for (size_t i = 1; i < grads.size(); ++i) {
    for (size_t j = 0; j < total.size(); ++j) total[j] += grads[i][j];
  }
  const Reorder& out = *entries[0]->wei;
  if (out.prim) {
    reorder(out, total.data(), at(pieces[0].wei));
  } else {
    std::memcpy(at(pieces[0].wei), total.data(), out.to.get_size());
  }
}

}  // namespace

bool conv_onednn(const core::KernelCall& call, const ConvParams& p, bool any_impl) {
  if (call.in_avals[0].dtype != DType::float32 || call.in_avals[1].dtype != DType::float32 ||
      call.out_avals[0].dtype != DType::float32) {
    return false;
  }
  const std::optional<Plan> plan = make_plan(call, p);
  if (!plan) return false;
  const int64_t threads =
      call.device.parallelism > 0 ? call.device.parallelism : int64_t(base::num_threads());
  bool by_batch = true;
  const std::vector<Plan> pieces = split(*plan, threads, &by_batch);
  const SingleThreaded one_thread;  // primitives are made for one thread
  std::vector<std::shared_ptr<Entry> > entries;
  for (const Plan& piece : pieces) {
    std::shared_ptr<Entry> e = lookup(piece);
    if (!e || (!any_impl && !fast_impl(e->impl))) return false;
    // Weight gradients of batch pieces are summed in the primitive's layout, so it must be
    // one layout (it depends on the batch only in principle).
    if (by_batch && plan->form == Form::backward_weights && !entries.empty() &&
        e->wei->from != entries[0]->wei->from) {
      return false;
    }
    entries.push_back(std::move(e));
  }
  std::vector<float> reversed;
  if (plan->flip) reversed = reversed_weights(call, p, *plan);
  try {
    run(call, pieces, entries, by_batch, reversed.data());
  } catch (const dnnl::error& e) {
    // Creation succeeded, so this is the machine (memory), not the shape.
    throw RuntimeError(std::string("[conv_general_dilated] oneDNN's ") + entries[0]->impl +
                       " convolution failed: " + e.what() +
                       "; set parax_conv_implementation to \"im2col\" to avoid oneDNN");
  }
  std::atomic<int64_t>& counter = plan->form == Form::forward         ? g_forward
                                  : plan->form == Form::backward_data ? g_backward_data
                                                                      : g_backward_weights;
  counter.fetch_add(1, std::memory_order_relaxed);
  return true;
}

#endif  // PARAX_HAVE_DNNL

}  // namespace parax::prims::kernels
