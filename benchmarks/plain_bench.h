// What the plain-main benchmarks (parax_cf_bench, parax_gather_bench, parax_conv_bench,
// parax_transformer_bench) share: interleaved best-of-N timing, a markdown table of rows
// with targets and verdicts, their command line, and how they report the JAX:CPU peer they
// run alongside (jax_peer.h).
#pragma once

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "jax_peer.h"

namespace plain_bench {

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Variant {
  std::string name;
  std::function<void()> run;
  // When set, called instead of timing `run`: a time measured elsewhere (a JAX peer's).
  std::function<double()> seconds = {};
};

// A variant timed by `peer` running its workload `workload`.
inline Variant jax_variant(JaxPeer& peer, const std::string& workload) {
  return {"jax_" + workload, {}, [&peer, workload] { return peer.seconds(workload); }};
}

// Times each variant once per repetition, in turn (so a noisy spell of the shared host
// hits them alike); returns each one's best time. Variants other than `only` (when set)
// are skipped and keep a best of 1e300. A pause of `settle_ms` before each variant lets
// the previous one's thread pool (parax's, or a JAX peer's in another process) go idle.
inline std::vector<double> best_interleaved(int reps, const std::vector<Variant>& variants,
                                            const std::string& only = "", int settle_ms = 0) {
  std::vector<double> best(variants.size(), 1e300);
  for (int r = 0; r < reps; ++r) {
    for (size_t v = 0; v < variants.size(); ++v) {
      if (!only.empty() && variants[v].name != only) continue;
      std::this_thread::sleep_for(std::chrono::milliseconds(settle_ms));
      if (variants[v].seconds) {
        best[v] = std::min(best[v], variants[v].seconds());
        continue;
      }
      const auto t0 = std::chrono::steady_clock::now();
      variants[v].run();
      best[v] = std::min(best[v], seconds_since(t0));
    }
  }
  return best;
}

struct Row {
  std::string what;
  std::string value;
  std::string target;
  std::string verdict;
};

inline std::string fixed(double v, int digits) {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(digits);
  os << v;
  return os.str();
}

// Returns "meets" or "MISSES" for `ratio` against `target` (an upper bound when at_most).
inline std::string verdict(double ratio, double target, bool at_most) {
  const bool ok = at_most ? ratio <= target : ratio >= target;
  return ok ? "meets" : "MISSES";
}

// Returns the rows as a markdown section headed `title`, with a closing `note`.
inline std::string table(const std::string& title, const std::vector<Row>& rows,
                         const std::string& note) {
  std::ostringstream md;
  md << "## " << title << "\n\n| measurement | value | target | verdict |\n|---|---|---|---|\n";
  for (const Row& r : rows) {
    md << "| " << r.what << " | " << r.value << " | " << r.target << " | " << r.verdict << " |\n";
  }
  md << "\n" << note << "\n";
  return md.str();
}

// The command line every plain benchmark takes.
struct Options {
  std::string results_md;  // append the table here when set
  int reps = 7;
  std::string only;   // run this variant alone (PARAX_PROFILE=1 then says where its time goes)
  int settle_ms = 0;  // the pause before each timed variant (best_interleaved)
  // The Python that runs the JAX:CPU peer; empty for none.
  std::string jax_python = "python3";
  std::vector<std::string> switches;  // the program's own --NAME switches that were given
};

// Parses --results_md=PATH, --reps=N, --only=VARIANT, --jax_python=PATH and the program's
// own `switches`; returns nullopt after printing the usage line for anything else.
inline std::optional<Options> parse_options(int argc, char** argv, const std::string& program,
                                            int default_reps,
                                            const std::vector<std::string>& switches = {}) {
  Options o;
  o.reps = default_reps;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const std::string value = arg.substr(arg.find('=') + 1);
    if (arg.rfind("--results_md=", 0) == 0) {
      o.results_md = value;
    } else if (arg.rfind("--only=", 0) == 0) {
      o.only = value;
    } else if (arg.rfind("--reps=", 0) == 0) {
      o.reps = std::max(1, std::stoi(value));
    } else if (arg.rfind("--settle_ms=", 0) == 0) {
      o.settle_ms = std::max(0, std::stoi(value));
    } else if (arg.rfind("--jax_python=", 0) == 0) {
      o.jax_python = value;
    } else if (std::find(switches.begin(), switches.end(), arg) != switches.end()) {
      o.switches.push_back(arg);
    } else {
      std::cerr << "usage: " << program
                << " [--results_md=PATH] [--reps=N] [--only=VARIANT] [--jax_python=PATH]"
                << " [--settle_ms=N]";
      for (const std::string& s : switches) std::cerr << " [" << s << "]";
      std::cerr << "\n";
      return std::nullopt;
    }
  }
#ifndef NDEBUG
  std::cerr << "warning: " << program << " was built without NDEBUG; configure with "
            << "-DCMAKE_BUILD_TYPE=Release for meaningful numbers\n";
#endif
  return o;
}

// Prints the table and appends it to o.results_md when set; returns main's exit status.
inline int report(const Options& o, const std::string& md, const std::string& program) {
  std::cout << "\n" << md;
  if (o.results_md.empty()) return 0;
  std::ofstream out(o.results_md, std::ios::app);
  out << "\n" << md;
  if (out) return 0;
  std::cerr << program << ": cannot write " << o.results_md << "\n";
  return 1;
}

// What a table says about its JAX:CPU peer: the version and how it ran, or, when there is
// none, that there is no same-run comparison (never an old time recorded elsewhere).
inline std::string jax_note(const JaxPeer& peer) {
  if (!peer.ready()) return "JAX not importable: no same-run comparison (" + peer.why() + ").";
  return "JAX:CPU: JAX " + peer.info("jax_version") + " (jaxlib " + peer.info("jaxlib_version") +
         "), " + peer.info("devices") + " CPU device, XLA's thread pool on all " +
         peer.info("threads") + " cores, measured in this run, interleaved with parax.";
}

}  // namespace plain_bench
