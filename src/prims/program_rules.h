// What the transformation rules of primitives holding programs share (pjit, cond, while,
// scan): a cache of the programs derived from a held program, and the keys its variants
// go by. Internal to src/prims.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/program.h"
#include "core/program_trace.h"
#include "parax/array.h"

namespace parax::prims {

// The programs derived from a held program, one per variant (which tangents are nonzero,
// which batch dimensions...), traced once and kept while the program lives. So a jit
// object's program gives the same derived program on every call, and runtime/eager.cpp,
// which keeps executables with their program, compiles each once.
template <class V>
class DerivedCache {
 public:
  using ProgramRef = std::shared_ptr<const core::Program>;

  template <class Make>
  std::shared_ptr<const V> get(const ProgramRef& body, const std::string& variant, Make make) {
    return get(std::span<const ProgramRef>(&body, 1), variant, make);
  }

  // The same for a value derived from several programs (cond's branches, a while's cond
  // and body): it lives while they all do.
  template <class Make>
  std::shared_ptr<const V> get(std::span<const ProgramRef> programs, const std::string& variant,
                               Make make) {
    Key key{{}, variant};
    for (const ProgramRef& p : programs) key.first.push_back(p.get());
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (auto hit = find(key, programs)) return hit;
    }
    // Traced unlocked: a program's transform meets the calls nested in it.
    auto made = std::make_shared<const V>(make());
    std::lock_guard<std::mutex> lock(mu_);
    if (auto raced = find(key, programs)) return raced;  // keep the first: its pointer is in use
    sweep();
    entries_[key] = Entry{{programs.begin(), programs.end()}, made};
    return made;
  }

 private:
  using Key = std::pair<std::vector<const core::Program*>, std::string>;
  struct Entry {
    std::vector<std::weak_ptr<const core::Program>> programs;
    std::shared_ptr<const V> value;
  };

  // A dead program's address may be reused by a new one: its entry is then stale.
  std::shared_ptr<const V> find(const Key& key, std::span<const ProgramRef> programs) {
    auto it = entries_.find(key);
    if (it == entries_.end()) return nullptr;
    for (size_t i = 0; i < programs.size(); ++i) {
      if (it->second.programs[i].lock() != programs[i]) return nullptr;
    }
    return it->second.value;
  }

  // Drops what dead programs left behind (on every miss: misses trace, which costs more),
  // so their derived programs, and the executables runtime/eager.cpp keeps with those, go.
  void sweep() {
    std::erase_if(entries_, [](const auto& kv) {
      const auto& programs = kv.second.programs;
      return std::any_of(programs.begin(), programs.end(),
                         [](const auto& p) { return p.expired(); });
    });
  }

  std::mutex mu_;
  std::map<Key, Entry> entries_;
};

// Returns the mask as a string of 0s and 1s, for a cache variant.
std::string mask_key(const std::vector<bool>& mask);

// Collectives in a program name the axes bound around it: a trace is valid where the same
// names are bound (as jit's trace cache keys them).
std::string axes_key();

// Returns the type of a tangent of a value of type `a` (never weak).
core::Aval tangent_aval(core::Aval a);

// Splits the results of a call of a jvp'ed program, which returns its `mask.size()` results
// and then the tangents of those `mask` marks, into (results, tangents); the unmarked
// tangents are symbolic zeros (invalid).
std::pair<std::vector<Array>, std::vector<Array>> split_tangents(std::vector<Array> outs,
                                                                 const std::vector<bool>& mask);

// Returns the mask as an array, for the span<const bool> the core's interpreters take
// (std::vector<bool> has no contiguous storage).
std::unique_ptr<bool[]> bool_array(const std::vector<bool>& v);

// Returns the outputs of `p` (no constvars) applied to `inputs` by binding its
// equations, so it runs eagerly or staged alike.
std::vector<Array> eval_program(const core::Program& p, std::span<const Array> inputs);

// Returns, per output of `p`, whether it depends on an input `marked` (constvars, then
// invars): whether it is linear in them, in a linear program.
std::vector<bool> depends_on(const core::Program& p, const std::vector<bool>& marked);

// Returns `p` with inputs of types `avals` it does not read inserted before invar `at`.
std::shared_ptr<const core::Program> with_unused_invars(const core::Program& p, size_t at,
                                                        std::span<const core::Aval> avals);

// Several traced functions held by one equation (custom_jvp_call's f and its rule) as
// programs over one operand list: `consts` is every program's consts, concatenated in order,
// and each of `programs` takes all of them as leading operands (using its own group), then
// its own arguments.
struct SharedConsts {
  std::vector<Array> consts;
  std::vector<std::shared_ptr<const core::Program>> programs;
};
SharedConsts share_consts(const std::vector<core::ClosedProgram>& traced);

// A custom_jvp rule traced for one pattern of symbolic-zero tangents: `program` takes
// `consts`, the arguments, then the tangents not zero, and returns the results, then the
// tangents of the results not marked in `out_zero`.
struct ZeroPatternRule {
  std::shared_ptr<const core::Program> program;
  std::vector<Array> consts;
  std::vector<bool> out_zero;
};
using ZeroPatternTracer = std::function<ZeroPatternRule(const std::vector<bool>& zero)>;

// custom_jvp's rules with symbolic_zeros, kept while the call's `jvp_jaxpr_fun` program
// lives. JAX traces such a rule when the call is differentiated, for the tangents that are
// zero then; parax's transforms differentiate a program after tracing it, so the rule
// (owning what it refers to) is kept with the program, and traced once per pattern.
class SymbolicZerosRules {
 public:
  using ProgramRef = std::shared_ptr<const core::Program>;
  // Keeps `tracer` for the call whose rule program is `key`.
  static void add(const ProgramRef& key, ZeroPatternTracer tracer);
  // Returns the tracer kept for `key`, or nullptr.
  static std::shared_ptr<const ZeroPatternTracer> find(const ProgramRef& key);
  // Returns the rule of `key` traced for the tangents `zero` marks (traced once).
  static std::shared_ptr<const ZeroPatternRule> trace(const ProgramRef& key,
                                                      const ZeroPatternTracer& tracer,
                                                      const std::vector<bool>& zero);
};

}  // namespace parax::prims
