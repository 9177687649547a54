// Compiled::explain and debug::CommLog: the compiler's notes on each collective
// (compiler/explain.h) priced with this machine's bandwidths, measured once per process.
#include "parax/explain.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

#include "compiler/compile.h"
#include "core/source_site.h"
#include "parax/jit.h"
#include "parax/lax.h"
#include "runtime/eager.h"

namespace parax {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// What this machine moves and computes per second, measured on first use: a memory copy
// (what a collective between devices of one process does), a stream through a local
// socket (what one between processes does at best on this host), and a float32 matmul.
struct Rates {
  double copy = 0;
  double socket = 0;
  double flops = 0;
};

double measure_copy() {
  constexpr size_t kBytes = size_t(64) << 20;
  std::vector<char> a(kBytes, 1), b(kBytes, 0);
  double best = 1e9;
  for (int rep = 0; rep < 3; ++rep) {
    const Clock::time_point t0 = Clock::now();
    std::memcpy(b.data(), a.data(), kBytes);
    best = std::min(best, seconds_since(t0));
  }
  return double(kBytes) / best;
}

constexpr size_t kSocketBytes = size_t(32) << 20, kPiece = size_t(1) << 20;

double measure_socket() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) return 0;
  constexpr size_t kBytes = kSocketBytes;
  std::thread writer([fd = fds[0]] {
    std::vector<char> piece(kPiece, 1);
    for (size_t sent = 0; sent < kBytes;) {
      const ssize_t n = ::write(fd, piece.data(), std::min(kPiece, kBytes - sent));
      if (n <= 0) break;
      sent += size_t(n);
    }
  });
  std::vector<char> piece(kPiece);
  const Clock::time_point t0 = Clock::now();
  size_t got = 0;
  while (got < kBytes) {
    const ssize_t n = ::read(fds[1], piece.data(), kPiece);
    if (n <= 0) break;
    got += size_t(n);
  }
  const double t = seconds_since(t0);
  writer.join();
  ::close(fds[0]);
  ::close(fds[1]);
  return got == kBytes ? double(kBytes) / t : 0;
}

double measure_flops() {
  constexpr int64_t n = 768;
  const Array a = lax::broadcast(1.0f, {n, n});
  lax::dot(a, a).block_until_ready();
  double best = 1e9;
  for (int rep = 0; rep < 3; ++rep) {
    const Clock::time_point t0 = Clock::now();
    lax::dot(a, a).block_until_ready();
    best = std::min(best, seconds_since(t0));
  }
  return 2.0 * double(n) * double(n) * double(n) / best;
}

const Rates& rates() {
  static const Rates r = [] {
    Rates m;
    m.copy = measure_copy();
    m.socket = measure_socket();
    m.flops = measure_flops();
    if (m.socket <= 0) m.socket = m.copy;
    return m;
  }();
  return r;
}

std::string bytes_str(double b) {
  char buf[32];
  if (b < 1024) {
    std::snprintf(buf, sizeof buf, "%.0f B", b);
  } else if (b < 1024.0 * 1024) {
    std::snprintf(buf, sizeof buf, "%.2f KiB", b / 1024);
  } else if (b < 1024.0 * 1024 * 1024) {
    std::snprintf(buf, sizeof buf, "%.2f MiB", b / (1024.0 * 1024));
  } else {
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1024.0 * 1024 * 1024));
  }
  return buf;
}

std::string seconds_str(double s) {
  char buf[32];
  if (s < 1e-3) {
    std::snprintf(buf, sizeof buf, "%.1f us", s * 1e6);
  } else if (s < 1) {
    std::snprintf(buf, sizeof buf, "%.2f ms", s * 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f s", s);
  }
  return buf;
}

// A collective's estimated time per call: its bytes within the process at copy speed,
// those from other processes at socket speed, for each of the `sharing` devices that share
// this process's memory and cores (virtual CPU devices run side by side on one host).
double estimate(const CollectiveInfo& c, int64_t sharing) {
  const Rates& r = rates();
  const double local = c.bytes_received - c.bytes_across_processes;
  return double(sharing) * c.runs * (local / r.copy + c.bytes_across_processes / r.socket);
}

// `site`: the user's line to name; `sharing`: the devices of this process in the mesh (0:
// no estimate).
CollectiveInfo info_of(const compiler::CollectiveNote& n, const std::source_location& site,
                       int64_t sharing) {
  CollectiveInfo c;
  c.primitive = n.primitive;
  if (!core::empty_site(site)) {
    const std::string s = core::site_str(site);
    c.file = s.substr(0, s.rfind(':'));
    c.line = int(site.line());
  }
  c.why = n.why;
  c.reason = n.reason;
  c.is_explicit = n.is_explicit;
  c.before = n.before;
  c.after = n.after;
  c.mesh_axes = n.mesh_axes;
  c.operand = n.local.short_str();
  // The collectives parax emits are symmetric (rings, pairwise exchanges): each device
  // sends what it receives.
  c.bytes_sent = n.bytes;
  c.bytes_received = n.bytes;
  c.bytes_across_processes = n.bytes_across_processes;
  c.runs = n.runs;
  c.where = n.where;
  if (sharing > 0) c.est_seconds = estimate(c, sharing);
  return c;
}

std::string site_label(const CollectiveInfo& c) {
  return c.file.empty() ? std::string("(no user line)") : c.file + ":" + std::to_string(c.line);
}

}  // namespace

std::string CollectiveInfo::str() const {
  std::string text = site_label(*this) + ": " + primitive;
  if (!mesh_axes.empty()) {
    text += " over (";
    for (size_t i = 0; i < mesh_axes.size(); ++i) text += (i ? ", '" : "'") + mesh_axes[i] + "'";
    text += mesh_axes.size() == 1 ? ",)" : ")";
  }
  text += " of " + operand;
  if (!before.empty()) text += ", " + before + " -> " + after;
  if (!where.empty()) text += " (in the " + where + ")";
  return text + ": " + reason;
}

Explanation::Explanation(std::string name, std::string mesh,
                         std::vector<CollectiveInfo> collectives, double bytes, double flops,
                         int64_t sharing)
    : name_(std::move(name)),
      mesh_(std::move(mesh)),
      collectives_(std::move(collectives)),
      bytes_(bytes),
      flops_(flops) {
  for (const CollectiveInfo& c : collectives_) est_seconds_ += c.est_seconds;
  const double compute = double(sharing) * flops_ / rates().flops;
  est_share_ = est_seconds_ + compute > 0 ? est_seconds_ / (est_seconds_ + compute) : 0;
}

std::string Explanation::to_string(const ExplainOptions& options) const {
  std::string text = name_ + " on " + mesh_ + ": " + std::to_string(collectives_.size()) +
                     (collectives_.size() == 1 ? " collective, " : " collectives, ") +
                     bytes_str(bytes_) + " received per device per call";
  if (options.estimates) {
    char share[32];
    std::snprintf(share, sizeof share, "%.1f %%", 100 * est_share_);
    text += ", est. " + seconds_str(est_seconds_) + " (" + share + " of the call)";
  }
  text += "\n";
  for (const CollectiveInfo& c : collectives_) {
    text += "  " + c.str() + "\n";
    text += "      per device: sends " + bytes_str(c.bytes_sent) + ", receives " +
            bytes_str(c.bytes_received) + " (" + bytes_str(c.bytes_across_processes) +
            " across processes)";
    if (c.runs != 1) text += ", " + std::to_string(int64_t(c.runs)) + " runs per call";
    if (options.estimates) text += "; est. " + seconds_str(c.est_seconds);
    text += c.is_explicit ? "; explicit\n" : "\n";
  }
  return text;
}

std::ostream& operator<<(std::ostream& os, const Explanation& e) { return os << e.to_string(); }

Explanation Compiled::explain() const {
  const int64_t sharing = std::max<int64_t>(1, int64_t(plan_->mesh.mesh.local_devices().size()));
  std::vector<CollectiveInfo> rows;
  for (const compiler::CollectiveNote& n : plan_->collectives) {
    rows.push_back(info_of(n, n.site, sharing));
  }
  return Explanation(plan_->name, plan_->mesh.mesh.to_string(), std::move(rows),
                     plan_->cost.collective_bytes, plan_->cost.flops, sharing);
}

namespace debug {

struct CommLog::Impl final : runtime::PlanObserver {
  mutable std::mutex mu;
  std::vector<CollectiveInfo> rows;
  std::shared_ptr<void> registration;

  void ran(const compiler::Plan& plan, const std::source_location& site, bool eager) override {
    std::lock_guard<std::mutex> lock(mu);
    for (const compiler::CollectiveNote& n : plan.collectives) {
      // A cached eager operation's plan holds the line that first compiled it; this run's
      // caller is the one to name. A jitted program's collectives keep their own lines.
      const bool ours = eager ? core::empty_site(site) : !core::empty_site(n.site);
      rows.push_back(info_of(n, ours ? n.site : site, 0));
    }
  }
};

CommLog::CommLog() : impl_(std::make_shared<Impl>()) {
  impl_->registration = runtime::observe_plans(impl_.get());
}

CommLog::~CommLog() { impl_->registration.reset(); }

std::vector<CollectiveInfo> CommLog::collectives() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->rows;
}

std::map<std::string, int64_t> CommLog::counts() const {
  std::map<std::string, int64_t> out;
  for (const CollectiveInfo& c : collectives()) out[c.primitive] += int64_t(c.runs);
  return out;
}

int64_t CommLog::total_count() const {
  int64_t n = 0;
  for (const auto& [kind, runs] : counts()) n += runs;
  return n;
}

double CommLog::total_bytes() const {
  double b = 0;
  for (const CollectiveInfo& c : collectives()) b += c.runs * c.bytes_received;
  return b;
}

std::string CommLog::table() const {
  struct Row {
    int64_t runs = 0;
    double bytes = 0;
  };
  std::vector<std::pair<std::string, std::string>> order;  // first-seen order
  std::map<std::pair<std::string, std::string>, Row> rows;
  for (const CollectiveInfo& c : collectives()) {
    const auto key = std::make_pair(site_label(c), c.primitive);
    if (!rows.count(key)) order.push_back(key);
    rows[key].runs += int64_t(c.runs);
    rows[key].bytes += c.runs * c.bytes_received;
  }
  size_t width = 11;
  for (const auto& k : order) width = std::max(width, k.first.size());
  auto pad = [](std::string s, size_t w, bool right) {
    if (s.size() >= w) return s;
    return right ? std::string(w - s.size(), ' ') + s : s + std::string(w - s.size(), ' ');
  };
  std::string text = pad("source line", width, false) + "  " + pad("collective", 18, false) +
                     pad("runs", 6, true) + "  " + pad("received/device", 16, true) + "\n";
  for (const auto& k : order) {
    const Row& r = rows[k];
    text += pad(k.first, width, false) + "  " + pad(k.second, 18, false) +
            pad(std::to_string(r.runs), 6, true) + "  " + pad(bytes_str(r.bytes), 16, true) + "\n";
  }
  text += pad("total", width, false) + "  " + pad("", 18, false) +
          pad(std::to_string(total_count()), 6, true) + "  " +
          pad(bytes_str(total_bytes()), 16, true) + "\n";
  return text;
}

}  // namespace debug
}  // namespace parax
