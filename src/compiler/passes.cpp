#include "compiler/passes.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "base/check.h"
#include "compiler/fuse.h"
#include "compiler/schedule.h"
#include "core/callbacks.h"
#include "core/verify.h"
#include "parax/errors.h"

namespace parax::compiler {
namespace {

void inline_calls_pass(PassState& s) { s.global = inline_calls(s.global); }

void check_devices_pass(PassState& s) {
  PARAX_CHECK(s.global.constvars.size() + s.global.invars.size() == s.args.size(),
              "one ArgInfo per input");
  s.mesh.emplace(s.choose_mesh(s.global));
}

void propagate_sharding_pass(PassState& s) {
  std::vector<std::optional<DimShard>> seeds(s.args.size());
  for (size_t i = 0; i < s.args.size(); ++i) {
    const ArgInfo& a = s.args[i];
    if (!a.committed || !a.sharding) continue;
    seeds[i] = express_on(*s.mesh, *a.sharding, a.aval.shape.size(), a.aval.shape);
  }
  s.propagation = propagate(s.global, *s.mesh, seeds);
}

// Calls each inspect equation's callback with the sharding chosen for its operand, in
// program order, loop bodies and branches included (their own propagations).
void inspect(const core::Program& p, const Propagation& prop, const MeshInfo& mesh) {
  for (size_t e = 0; e < p.eqns.size(); ++e) {
    const core::Eqn& eqn = p.eqns[e];
    if (core::has_trait(eqn.prim, core::kControlFlow)) {
      const auto subs = core::sub_programs(eqn);
      const ControlFlowLayouts& cf = prop.control_flow.at(e);
      for (size_t k = 0; k < subs.size() && k < cf.programs.size(); ++k) {
        inspect(*subs[k], cf.programs[k], mesh);
      }
      continue;
    }
    if (!core::has_trait(eqn.prim, core::kInspect) || eqn.inputs[0].is_literal()) continue;
    DimShard layout = prop.vars[size_t(eqn.inputs[0].var)];
    layout.unreduced.clear();  // partial sums are combined before anything reads them
    layout.op = core::ReduceOp::none;
    const core::ShardingCallback& f = core::sharding_callback(eqn.params.get<int64_t>("callback"));
    f(NamedSharding(mesh.mesh, mesh.spec(layout)));
  }
}

void inspect_shardings_pass(PassState& s) { inspect(s.global, *s.propagation, *s.mesh); }

void partition_spmd_pass(PassState& s) {
  s.partitioned = partition(s.global, *s.mesh, *s.propagation, {});
}

// Applies a per-device pass to a program and, inside out, to its control flow's
// sub-programs (loop bodies and branches are per-device code too).
core::Program deep(const core::Program& p, core::Program (*pass)(const core::Program&)) {
  core::Program out = p;
  for (core::Eqn& e : out.eqns) {
    if (!core::has_trait(e.prim, core::kControlFlow)) continue;
    e = core::with_sub_programs(std::move(e), [&](const std::shared_ptr<const core::Program>& b) {
      return std::make_shared<const core::Program>(deep(*b, pass));
    });
  }
  return pass(out);
}

void fold_scalar_broadcasts_pass(PassState& s) {
  s.partitioned->local = deep(s.partitioned->local, fold_scalar_broadcasts);
}

void dce_pass(PassState& s) {
  s.partitioned->local = deep(s.partitioned->local, eliminate_dead_code);
}

void fuse_elementwise_pass(PassState& s) {
  s.partitioned->local = deep(s.partitioned->local, fuse_elementwise);
}

// Per program input of the per-device program: donated by the caller and taken by an
// output of its type and layout (each output taking one, in order: JAX's rule for aliasing
// an input to an output). Empty when nothing is donated.
std::vector<bool> usable_donations(const PassState& s) {
  if (std::none_of(s.args.begin(), s.args.end(), [](const ArgInfo& a) { return a.donated; })) {
    return {};
  }
  const core::Program& p = s.partitioned->local;
  const std::vector<DimShard>& ins = s.partitioned->inputs;
  const std::vector<DimShard>& outs = s.partitioned->outputs;
  std::vector<int> inputs = p.constvars;
  inputs.insert(inputs.end(), p.invars.begin(), p.invars.end());
  std::vector<bool> donated(inputs.size(), false);
  std::vector<bool> taken(p.outvars.size(), false);
  for (size_t i = 0; i < s.args.size() && i < inputs.size(); ++i) {
    if (!s.args[i].donated) continue;
    const core::Aval& in = p.avals[size_t(inputs[i])];
    for (size_t o = 0; o < p.outvars.size(); ++o) {
      const core::Aval& out = p.aval_of(p.outvars[o]);
      if (taken[o] || o >= outs.size() || out.shape != in.shape || out.dtype != in.dtype ||
          !(outs[o] == ins[i])) {
        continue;
      }
      taken[o] = donated[i] = true;
      break;
    }
  }
  return donated;
}

// Before fusion, whose runs of equations follow the order.
void schedule_memory_pass(PassState& s) {
  schedule_for_memory(s.partitioned->local, usable_donations(s));
}

// Last: it plans the program the executor will run, as it is.
void plan_buffers_pass(PassState& s) {
  s.buffers = plan_buffers(s.partitioned->local, usable_donations(s));
}

constexpr Pass kPasses[] = {
    {"inline-calls", inline_calls_pass},
    {"check-devices", check_devices_pass},
    {"propagate-sharding", propagate_sharding_pass},
    {"inspect-shardings", inspect_shardings_pass},
    {"partition-spmd", partition_spmd_pass},
    {"fold-scalar-broadcasts", fold_scalar_broadcasts_pass},
    {"dce", dce_pass},
    {"schedule-memory", schedule_memory_pass},
    {"fuse-elementwise", fuse_elementwise_pass},
    {"plan-buffers", plan_buffers_pass},
};

// Type-checking after every pass costs about a quarter of the compile time of a
// one-equation program (an eager op's), so release builds check SSA form only unless
// PARAX_VERIFY_IR=1 (the test suite sets it); debug builds check types always.
#ifdef NDEBUG
constexpr bool kVerifyByDefault = false;
#else
constexpr bool kVerifyByDefault = true;
#endif
// -1: not read yet from PARAX_VERIFY_IR.
std::atomic<int> g_verify{-1};

// Returns what is wrong with the program the passes hold, or with its buffer plan once
// there is one (a pass after plan-buffers that changed the program would leave it stale).
// A per-device program is typed on its mesh; weak types are compared where they matter,
// before partitioning (VerifyOptions).
std::optional<std::string> check(const PassState& s) {
  core::VerifyOptions options;
  options.types = verify_after_passes();
  if (s.per_device()) {
    options.mesh_axis_sizes = s.mesh->axis_sizes;
    options.weak_types = false;
  }
  if (auto err = core::verify(s.program(), options)) return "is ill-typed: " + *err;
  if (!s.buffers) return std::nullopt;
  if (auto err = verify_buffers(s.program(), *s.buffers)) {
    return "has an unsound buffer plan: " + *err;
  }
  return std::nullopt;
}

// Writes the program after each pass to PARAX_DUMP_IR's directory, when it names one.
class Dumper {
 public:
  explicit Dumper(std::string_view name) {
    const char* dir = std::getenv("PARAX_DUMP_IR");
    if (dir == nullptr || *dir == '\0') return;
    static std::atomic<int> compilations{0};
    dir_ = dir;
    char number[16];
    std::snprintf(number, sizeof number, "%04d", compilations.fetch_add(1));
    prefix_ = std::string(number) + "." + file_safe(name) + ".";
    std::filesystem::create_directories(dir_);
  }

  void write(const PassState& s, size_t index, std::string_view pass) const {
    if (dir_.empty()) return;
    const std::string number = (index < 10 ? "0" : "") + std::to_string(index);
    const std::filesystem::path path = dir_ / (prefix_ + number + "-" + std::string(pass) + ".txt");
    std::ofstream out(path);
    out << text(s);
    if (!out) throw ValueError("PARAX_DUMP_IR: cannot write " + path.string());
  }

 private:
  // The per-device program with its layouts and mesh axis names (and its buffer plan once
  // planned), as Plan::as_text prints it; the global one as a jaxpr.
  static std::string text(const PassState& s) {
    if (!s.per_device()) return core::to_string(s.global) + "\n";
    const Partitioned& part = *s.partitioned;
    std::string head = "# mesh " + s.mesh->mesh.to_string() + "\n# in_layouts (";
    for (size_t i = 0; i < part.inputs.size(); ++i)
      head += (i ? ", " : "") + s.mesh->spec_str(part.inputs[i]);
    head += ")\n# out_layouts (";
    for (size_t i = 0; i < part.outputs.size(); ++i)
      head += (i ? ", " : "") + s.mesh->spec_str(part.outputs[i]);
    head += ")\n" + program_text(part.local, *s.mesh) + "\n";
    return s.buffers ? head + buffers_text(part.local, *s.buffers) : head;
  }

  static std::string file_safe(std::string_view name) {
    std::string out(name.empty() ? "jit" : name);
    for (char& c : out) {
      const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
      if (!ok) c = '_';
    }
    return out;
  }

  std::filesystem::path dir_;
  std::string prefix_;
};

}  // namespace

std::span<const Pass> pass_list() { return kPasses; }

void run_passes(PassState& state, std::span<const Pass> passes, std::string_view name) {
  const Dumper dump(name);
  dump.write(state, 0, "input");
  for (size_t i = 0; i < passes.size(); ++i) {
    passes[i].run(state);
    dump.write(state, i + 1, passes[i].name);
    if (auto err = check(state)) {
      PARAX_CHECK(false, "the program after " << passes[i].name << " " << *err
                                              << " (PARAX_DUMP_IR=dir writes it out)");
    }
  }
}

bool verify_after_passes() {
  int v = g_verify.load(std::memory_order_relaxed);
  if (v < 0) {
    const char* env = std::getenv("PARAX_VERIFY_IR");
    v = kVerifyByDefault ? 1 : 0;
    if (env != nullptr && *env != '\0') v = std::string_view(env) == "0" ? 0 : 1;
    g_verify.store(v, std::memory_order_relaxed);
  }
  return v == 1;
}

void set_verify_after_passes(bool on) { g_verify.store(on ? 1 : 0, std::memory_order_relaxed); }

}  // namespace parax::compiler
