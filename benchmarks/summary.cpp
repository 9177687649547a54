// The summary after all benchmarks ran: the limits measured in this run, each workload as
// time and as a ratio to its limit, sharded/single ratios, and the seed workloads' targets.
// Ratios use each measurement's best iteration: noise on a shared machine only ever slows a
// run down, and the limits are taken the same way.
#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "bench.h"
#include "prims/kernels/gemm.h"

namespace parax_bench {
namespace kernels = parax::prims::kernels;
namespace {

std::string fmt(const char* format, ...) {
  char buf[256];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return buf;
}

// The best rate under `key` (work per second), or nullopt if it did not run or failed.
std::optional<double> rate(const std::string& key) {
  const Measurement* m = find_measurement(key);
  if (m == nullptr || !m->ok() || m->work <= 0) return std::nullopt;
  return m->best_rate();
}

const Measurement* ok_measurement(const std::string& key) {
  const Measurement* m = find_measurement(key);
  return m != nullptr && m->ok() ? m : nullptr;
}

std::string rate_text(std::optional<double> r, double scale, const char* unit) {
  return r ? fmt("%.1f %s", *r * scale, unit) : "n/a";
}

// Elements per second one core computes, from the in-cache block minus the 8x8 call: what
// remains after the fixed cost of a call.
std::optional<double> in_cache_rate_per_core(const std::string& op) {
  const Measurement* big = ok_measurement(cache_key(op, kCacheBlock));
  const Measurement* tiny = ok_measurement(cache_key(op, kTinyBlock));
  if (big == nullptr || tiny == nullptr || big->best() <= tiny->best()) return std::nullopt;
  return double(kCacheBlock - kTinyBlock) / (big->best() - tiny->best());
}

struct Limits {
  int cores = 1;
  std::optional<double> bandwidth;      // STREAM copy with NT stores, all cores, bytes/s
  std::optional<double> sin_compute;    // parax sin in cache, elements/s on all cores
  std::optional<double> chain_compute;  // the 10-op chain in cache, elements/s on all cores
  std::optional<double> fma_peak;       // the widest ISA's, all cores, flop/s
  // sgemm limits, flop/s on all cores: the best library at each size, and the best of both
  // sizes.
  std::optional<double> sgemm_4096, sgemm_8192, sgemm_best;
};

// The best sgemm rate at size n over the candidate libraries measured in this run.
std::optional<double> best_sgemm(int64_t n, int cores) {
  std::optional<double> best;
  for (const std::string& library : sgemm_libraries()) {
    if (auto r = rate(sgemm_key(library, n, cores)); r && (!best || *r > *best)) best = r;
  }
  return best;
}

Limits gather_limits() {
  Limits l;
  l.cores = num_cores();
  l.bandwidth = rate(stream_key("copy_nt", l.cores));
  if (auto r = in_cache_rate_per_core("sin")) l.sin_compute = *r * l.cores;
  if (auto r = in_cache_rate_per_core("chain10")) l.chain_compute = *r * l.cores;
  l.fma_peak = rate(fma_key(l.cores));
  l.sgemm_4096 = best_sgemm(4096, l.cores);
  l.sgemm_8192 = best_sgemm(kBig, l.cores);
  if (l.sgemm_4096 || l.sgemm_8192) {
    l.sgemm_best = std::max(l.sgemm_4096.value_or(0), l.sgemm_8192.value_or(0));
  }
  return l;
}

std::string limits_table(const Limits& l) {
  std::ostringstream os;
  const int n = l.cores;
  os << "| limit | 1 core | " << n << " cores |\n|---|---|---|\n";
  auto row = [&](const std::string& name, std::optional<double> one, std::optional<double> all,
                 double scale, const char* unit, const std::string& note = "") {
    os << "| " << name << " | " << (one ? rate_text(one, scale, unit) : "—") << " | "
       << rate_text(all, scale, unit) << note << " |\n";
  };
  const kernels::CpuVectorWidth cpu = kernels::cpu_vector_width();
  row(fmt("float32 FMA peak, widest ISA: %s (register loop, 12 accumulators)",
          cpu.bits == 512   ? "AVX-512"
          : cpu.bits == 256 ? "AVX2"
                            : "baseline"),
      rate(fma_key(1)), rate(fma_key(n)), 1e-9, "GFLOP/s");
  if (find_measurement(fma_avx2_key(n)) != nullptr) {
    row("float32 FMA peak, AVX2 (same loop)", rate(fma_avx2_key(1)), rate(fma_avx2_key(n)), 1e-9,
        "GFLOP/s");
  }
  row("STREAM copy, NT stores, 256 MiB float32", rate(stream_key("copy_nt", 1)),
      rate(stream_key("copy_nt", n)), 1e-9, "GB/s");
  row("STREAM triad, NT stores, 256 MiB float32", rate(stream_key("triad_nt", 1)),
      rate(stream_key("triad_nt", n)), 1e-9, "GB/s");
  auto of_peak = [&](std::optional<double> r) {
    auto peak = rate(fma_key(n));
    return r && peak ? fmt(" (%.0f %% of FMA peak)", 100 * *r / *peak) : std::string();
  };
  const std::string core = kernels::openblas_core_name();
  const std::string used = kernels::gemm_library_name(kernels::gemm_library());
  for (const std::string& library : sgemm_libraries()) {
    const std::string name = library == kOneDnn     ? "oneDNN dnnl_sgemm"
                             : library == kOpenBlas ? "OpenBLAS sgemm (" + core + ")"
                                                    : "OpenBLAS sgemm (Haswell, AVX2)";
    const bool parax_uses = library == used;
    for (int64_t size : {int64_t(4096), kBig}) {
      const std::optional<double> r = rate(sgemm_key(library, size, n));
      row(fmt("%s %lld² (library threads = cores)%s", name.c_str(), (long long)size,
              parax_uses ? ", parax's GEMM" : ""),
          std::nullopt, r, 1e-9, "GFLOP/s", of_peak(r));
    }
  }
  auto per_core = [&](std::optional<double> all) {
    return all ? std::optional<double>(*all / n) : std::nullopt;
  };
  row("parax `sin` in cache (16 Ki block, 1 core, minus call cost; × cores)",
      per_core(l.sin_compute), l.sin_compute, 1e-9, "Gelem/s");
  row("parax 10-op chain in cache (same method)", per_core(l.chain_compute), l.chain_compute, 1e-9,
      "Gelem/s");
  return os.str();
}

// One workload row of the table.
struct Row {
  Row(std::string w, std::string l) : workload(std::move(w)), layout(std::move(l)) {}
  std::string workload, layout, time, achieved, limit, of_limit, target, sharded, sharded_target;
};

std::string time_text(const Measurement* m, double scale, const char* unit) {
  if (m == nullptr) return "n/a";
  return fmt("%.1f (%.1f) %s", m->best() * scale, m->median() * scale, unit);
}

std::string error_text(const std::string& key) {
  const Measurement* m = find_measurement(key);
  if (m == nullptr) return "not run";
  if (!m->error.empty()) return "error: " + m->error.substr(0, 80);
  return "n/a";
}

std::string verdict(bool met) { return met ? " ✓" : " ✗"; }

// Sharded/single time ratio against its target, 1.05.
void fill_sharded(Row& row, const std::string& single_key, const std::string& sharded_key) {
  const Measurement* single = ok_measurement(single_key);
  const Measurement* sharded = ok_measurement(sharded_key);
  if (single == nullptr || sharded == nullptr) return;
  const double r = sharded->best() / single->best();
  row.sharded = fmt("%.2f", r);
  row.sharded_target = "≤ 1.05" + verdict(r <= 1.05);
}

// sin and the chain: bytes of one read and one write pass; the floor is the slower of the
// memory and the compute bound, so the ratio is the better of the two ratios.
Row elementwise_row(const std::string& name, const std::string& key, bool sharded,
                    std::optional<double> bandwidth, std::optional<double> compute) {
  Row row{name, sharded ? "8 devices, P('a','b')" : "1 device"};
  const Measurement* m = ok_measurement(key);
  if (m == nullptr) {
    row.time = error_text(key);
    return row;
  }
  const double elements = double(kBig) * double(kBig);
  const double bytes = 2 * 4 * elements;
  const double t = m->best();
  row.time = time_text(m, 1e3, "ms");
  row.achieved = fmt("%.1f GB/s, %.2f Gelem/s", bytes / t * 1e-9, elements / t * 1e-9);
  const double t_mem = bandwidth ? bytes / *bandwidth : 0;
  const double t_compute = compute ? elements / *compute : 0;
  const double floor = std::max(t_mem, t_compute);
  if (floor > 0) {
    row.limit =
        fmt("%.1f ms (memory %.1f, compute %.1f)", floor * 1e3, t_mem * 1e3, t_compute * 1e3);
    row.of_limit = fmt("%.0f %%", 100 * floor / t);
    row.target = "≥ 90 %" + verdict(floor / t >= 0.9);
  }
  return row;
}

Row dot_row(int64_t n, bool sharded, std::optional<double> sgemm, std::optional<double> peak) {
  const std::string key =
      workload_key("dot_" + std::to_string(n), sharded ? "devices:8" : "devices:1");
  Row row{fmt("`dot` %lld² f32", (long long)n),
          sharded ? "8 devices, P('a',None)·P(None,'b')" : "1 device"};
  const Measurement* m = ok_measurement(key);
  if (m == nullptr) {
    row.time = error_text(key);
    return row;
  }
  const double flops = 2.0 * double(n) * double(n) * double(n);
  row.time = time_text(m, 1e3, "ms");
  row.achieved = fmt("%.1f GFLOP/s", flops / m->best() * 1e-9);
  if (sgemm) {
    const double r = flops / m->best() / *sgemm;
    row.limit = fmt("best sgemm %.1f GFLOP/s", *sgemm * 1e-9);
    row.of_limit = fmt("%.0f %%", 100 * r);
    row.target = n == kBig ? "≥ 90 %" + verdict(r >= 0.9) : "—";
  }
  if (peak) {
    // The target: the FMA peak of the CPU's widest ISA, not the library's.
    const double r = flops / m->best() / *peak;
    row.limit += fmt("%sFMA peak %.1f GFLOP/s", row.limit.empty() ? "" : "; ", *peak * 1e-9);
    row.of_limit += fmt("%s%.0f %% of peak", row.of_limit.empty() ? "" : "; ", 100 * r);
    if (n == kBig) row.target += fmt("; ≥ 90 %% of peak%s", verdict(r >= 0.9).c_str());
  }
  return row;
}

Row mlp_row(const std::string& layout, const Limits& l, bool grad) {
  static const char* kNames[] = {"1 device", "8 devices, P('batch'), params P()",
                                 "4×2, P('batch',None), W2 P(None,'model'), W3 P('model',None)"};
  const int i = layout == kMlpSingle ? 0 : layout == kMlpDataParallel ? 1 : 2;
  const std::string name = grad ? "mlp_grad_step" : "mlp_forward_loss";
  const std::string key = workload_key(name, layout);
  Row row{grad ? "MLP gradient step jit(grad(loss)), [784,1024,1024,1024,10] × 8192"
               : "MLP forward+loss, [784,1024,1024,1024,10] × 8192 (jit)",
          kNames[i]};
  const Measurement* m = ok_measurement(key);
  if (m == nullptr) {
    row.time = error_text(key);
    return row;
  }
  const double flops = grad ? mlp_grad_flops() : mlp_forward_flops();
  row.time = time_text(m, 1e3, "ms");
  row.achieved = fmt("%.1f GFLOP/s", flops / m->best() * 1e-9);
  if (l.sgemm_best) {
    const double t_gemm = flops / *l.sgemm_best;
    row.limit = fmt("GEMMs %.1f ms at %.1f GFLOP/s", t_gemm * 1e3, *l.sgemm_best * 1e-9);
    if (m->executed_flops > 1.02 * flops) {
      row.limit += fmt("; the layout runs %.2f× the flops", m->executed_flops / flops);
    }
    row.of_limit = fmt("%.0f %%", 100 * t_gemm / m->best());
    // The target is set for the gradient step; the forward step is held to the same.
    row.target =
        std::string(grad ? "≥ 90 %" : "≥ 90 % (as grad step)") + verdict(t_gemm / m->best() >= 0.9);
  }
  if (i > 0) fill_sharded(row, workload_key(name, kMlpSingle), key);
  return row;
}

// Eager grad(jit(loss)) against jit(grad(loss)), timed side by side: target 1.05.
Row grad_of_jit_row(const std::string& layout) {
  static const char* kNames[] = {"1 device", "8 devices, P('batch'), params P()",
                                 "4×2, P('batch',None), W2 P(None,'model'), W3 P('model',None)"};
  const int i = layout == kMlpSingle ? 0 : layout == kMlpDataParallel ? 1 : 2;
  const std::string key = workload_key("mlp_grad_of_jit", layout);
  Row row{"MLP gradient step, eager grad(jit(loss)), same sizes", kNames[i]};
  const Measurement* m = ok_measurement(key);
  const Measurement* ref = ok_measurement(workload_key("mlp_jit_of_grad", layout));
  if (m == nullptr || ref == nullptr) {
    row.time = error_text(key);
    return row;
  }
  row.time = time_text(m, 1e3, "ms");
  row.achieved = fmt("%.1f GFLOP/s", mlp_grad_flops() / m->best() * 1e-9);
  row.limit =
      fmt("jit(grad(loss)) beside it: %.1f (%.1f) ms", ref->best() * 1e3, ref->median() * 1e3);
  const double r = m->best() / ref->best();
  row.of_limit = fmt("%.2f× its time", r);
  row.target = "≤ 1.05×" + verdict(r <= 1.05);
  return row;
}

// The 4x2 gradient step with a trace recording, against the same step untraced beside it.
Row traced_row() {
  const std::string key = workload_key("mlp_grad_traced", kMlpDataTensorParallel);
  Row row{"MLP gradient step with profiler::start_trace recording, same sizes",
          "4×2, P('batch',None), W2 P(None,'model'), W3 P('model',None)"};
  const Measurement* m = ok_measurement(key);
  const Measurement* ref =
      ok_measurement(workload_key("mlp_grad_untraced", kMlpDataTensorParallel));
  if (m == nullptr || ref == nullptr) {
    row.time = error_text(key);
    return row;
  }
  row.time = time_text(m, 1e3, "ms");
  row.limit = fmt("untraced beside it: %.1f (%.1f) ms", ref->best() * 1e3, ref->median() * 1e3);
  const double r = m->best() / ref->best();
  row.of_limit = fmt("%.2f× its time", r);
  row.target = "≤ 1.10×" + verdict(r <= 1.10);
  return row;
}

std::string workloads_table(const Limits& l) {
  std::vector<Row> rows;
  for (bool sharded : {false, true}) {
    const std::string layout = sharded ? "devices:8" : "devices:1";
    Row r = elementwise_row("`numpy::sin` 8192² f32 (eager)", workload_key("sin_8192", layout),
                            sharded, l.bandwidth, l.sin_compute);
    if (sharded) {
      fill_sharded(r, workload_key("sin_8192", "devices:1"), workload_key("sin_8192", layout));
    }
    rows.push_back(r);
  }
  for (bool sharded : {false, true}) {
    const std::string layout = sharded ? "devices:8" : "devices:1";
    Row r = elementwise_row("10-op elementwise chain 8192² f32 (jit)",
                            workload_key("chain10_8192", layout), sharded, l.bandwidth,
                            l.chain_compute);
    if (sharded) {
      fill_sharded(r, workload_key("chain10_8192", "devices:1"),
                   workload_key("chain10_8192", layout));
    }
    rows.push_back(r);
  }
  for (auto [n, sgemm] : {std::pair{int64_t(4096), l.sgemm_4096}, std::pair{kBig, l.sgemm_8192}}) {
    rows.push_back(dot_row(n, false, sgemm, l.fma_peak));
    Row r = dot_row(n, true, sgemm, l.fma_peak);
    fill_sharded(r, workload_key("dot_" + std::to_string(n), "devices:1"),
                 workload_key("dot_" + std::to_string(n), "devices:8"));
    rows.push_back(r);
  }
  for (const char* layout : {kMlpSingle, kMlpDataParallel, kMlpDataTensorParallel}) {
    rows.push_back(mlp_row(layout, l, false));
  }
  if (kHasGrad) {
    for (const char* layout : {kMlpSingle, kMlpDataParallel, kMlpDataTensorParallel}) {
      rows.push_back(mlp_row(layout, l, true));
    }
    for (const char* layout : {kMlpSingle, kMlpDataParallel, kMlpDataTensorParallel}) {
      rows.push_back(grad_of_jit_row(layout));
    }
    rows.push_back(traced_row());
  }
  if (!kHasGrad) {
    Row r("MLP gradient step (jit(grad(loss)))", "1 device, 8-way, 4×2");
    r.time = "skipped: needs grad (PARAX_HAS_GRAD)";
    rows.push_back(r);
  }
  {
    const std::string key = workload_key("eager_dispatch_sin_8x8", "devices:8");
    Row r{"eager dispatch: cached `numpy::sin` on 8×8", "8 devices, P('a','b')"};
    const Measurement* m = ok_measurement(key);
    const Measurement* single = ok_measurement(cache_key("sin", kTinyBlock));
    if (m != nullptr) {
      r.time = fmt("%.1f (%.1f) µs", m->best() * 1e6, m->median() * 1e6);
      if (single != nullptr) r.limit = fmt("1 device: %.1f µs", single->median() * 1e6);
      r.target = "≤ 20 µs" + verdict(m->median() * 1e6 <= 20);
    } else {
      r.time = error_text(key);
    }
    rows.push_back(r);
  }
  std::ostringstream os;
  os << "| workload | layout | time: best (median) | achieved | limit | of limit | target | "
        "sharded / single | target |\n|---|---|---|---|---|---|---|---|---|\n";
  for (const Row& r : rows) {
    os << "| " << r.workload << " | " << r.layout << " | " << r.time << " | " << r.achieved << " | "
       << r.limit << " | " << r.of_limit << " | " << r.target << " | " << r.sharded << " | "
       << r.sharded_target << " |\n";
  }
  return os.str();
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown CPU";
}

}  // namespace

std::string summary_markdown() {
  const Limits l = gather_limits();
  std::ostringstream os;
  os << "Machine: " << cpu_model() << ", " << l.cores << " cores; parax on 8 virtual CPU "
     << "devices sharing them; parax's float32 GEMMs on "
     << kernels::gemm_library_name(kernels::gemm_library()) << " (OpenBLAS core "
     << kernels::openblas_core_name() << "). Limits and workloads come from the same run of "
     << "`scripts/bench`.\n\n";
  os << "**Limits of this machine**\n\n" << limits_table(l) << "\n";
  os << "**Workloads** (time over the best iteration; limits: sgemm at the same size for "
        "`dot` (the best library's) and the widest ISA's FMA peak, the best sgemm for the MLP, and "
        "for elementwise work the slower of streaming "
        "one read and one write at the STREAM copy rate and computing at the in-cache rate)\n\n"
     << workloads_table(l);
  return os.str();
}

}  // namespace parax_bench
