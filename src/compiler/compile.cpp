#include "compiler/compile.h"

#include <algorithm>
#include <iostream>
#include <map>
#include <sstream>

#include "base/check.h"
#include "compiler/cost.h"
#include "compiler/partition.h"
#include "compiler/passes.h"
#include "sharding/sharding_impl.h"
#include "sharding/topology.h"

namespace parax::compiler {
namespace {

using core::Atom;
using core::Prim;
using core::Program;

// JAX's warning when a donated argument matches no output: the caller keeps it.
void warn_unused_donations(std::span<const ArgInfo> args, const std::vector<bool>& used) {
  std::string unused;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].donated || (i < used.size() && used[i])) continue;
    unused += (unused.empty() ? "" : ", ") + args[i].aval.str();
  }
  if (unused.empty()) return;
  std::cerr
      << "parax: UserWarning: Some donated buffers were not usable: " << unused
      << ".\nSee an explanation at https://docs.jax.dev/en/latest/faq.html#buffer-donation.\n";
}

// Appends the equations of `callee` to `out`, with its inputs bound to `args`; returns
// the atoms of its results.
std::vector<Atom> inline_into(Program& out, const Program& callee, const std::vector<Atom>& args) {
  std::vector<Atom> map(callee.avals.size());
  std::vector<int> inputs(callee.constvars);
  inputs.insert(inputs.end(), callee.invars.begin(), callee.invars.end());
  for (size_t i = 0; i < inputs.size(); ++i) map[size_t(inputs[i])] = args[i];
  auto sub = [&](const Atom& a) { return a.is_literal() ? a : map[size_t(a.var)]; };
  for (const core::Eqn& e : callee.eqns) {
    std::vector<Atom> in;
    for (const Atom& a : e.inputs) in.push_back(sub(a));
    if (core::has_trait(e.prim, core::kCall)) {
      const auto body = core::program_of(e, core::ProgramRole::call);
      PARAX_CHECK(body != nullptr, "a call with no call program: " << core::prim_name(e.prim));
      std::vector<Atom> res = inline_into(out, *body, in);
      for (size_t r = 0; r < e.outputs.size(); ++r) map[size_t(e.outputs[r])] = res[r];
      continue;
    }
    if (e.prim == Prim::shard_map) {
      // The region's per-device code sits between manual-enter and manual-exit equations,
      // which relabel each value's layout between its global and per-device views. (The
      // one primitive a pass names: what a region boundary means is the compiler's own
      // contract, read back by propagation and partitioning, as collectives are reshard's.)
      const auto& body = *e.params.get<std::shared_ptr<const Program>>("jaxpr");
      const auto& in_specs = e.params.get<std::vector<PartitionSpec>>("in_specs");
      const auto& out_specs = e.params.get<std::vector<PartitionSpec>>("out_specs");
      auto boundary = [&](Prim p, const Atom& a, const core::Aval& aval,
                          const PartitionSpec& spec) {
        int v = out.new_var(aval);
        core::Params params{{"axes", e.params.get<std::vector<std::string>>("axis_names")},
                            {"axis_sizes", e.params.get<std::vector<int64_t>>("axis_sizes")},
                            {"spec", std::vector<PartitionSpec>{spec}},
                            {"mesh", e.params.get<std::shared_ptr<const Sharding>>("mesh")}};
        out.eqns.push_back(core::Eqn{p, {a}, {v}, std::move(params), e.site});
        return Atom::of(v);
      };
      std::vector<Atom> local;
      for (size_t i = 0; i < in.size(); ++i) {
        local.push_back(
            boundary(Prim::manual_enter, in[i], body.avals[size_t(body.invars[i])], in_specs[i]));
      }
      std::vector<Atom> res = inline_into(out, body, local);
      for (size_t r = 0; r < e.outputs.size(); ++r) {
        map[size_t(e.outputs[r])] =
            boundary(Prim::manual_exit, res[r], callee.avals[size_t(e.outputs[r])], out_specs[r]);
      }
      continue;
    }
    core::Eqn copy{e.prim, std::move(in), {}, e.params, e.site};
    if (core::has_trait(e.prim, core::kControlFlow)) {
      // A loop body or branch is compiled with the program: its calls are inlined too.
      copy = core::with_sub_programs(std::move(copy), [](const std::shared_ptr<const Program>& b) {
        return std::make_shared<const Program>(inline_calls(*b));
      });
    }
    for (int v : e.outputs) {
      int nv = out.new_var(callee.avals[size_t(v)]);
      copy.outputs.push_back(nv);
      map[size_t(v)] = Atom::of(nv);
    }
    out.eqns.push_back(std::move(copy));
  }
  std::vector<Atom> results;
  for (const Atom& a : callee.outvars) results.push_back(sub(a));
  return results;
}

bool is_region_boundary(Prim p) {
  return core::has_trait(p, core::kRegionEnter) || core::has_trait(p, core::kRegionExit);
}

std::string ids_str(const std::vector<Device>& devices) {
  std::string s = "[";
  for (size_t i = 0; i < devices.size(); ++i)
    s += (i ? ", " : "") + std::to_string(devices[i].id());
  return s + "]";
}

std::string platform_of(const std::vector<Device>& devices) {
  std::string p = devices.empty() ? "cpu" : std::string(devices[0].platform());
  std::transform(p.begin(), p.end(), p.begin(), ::toupper);
  return p;
}

// The api that made a layout equation: jit's "in_shardings" or "out_shardings", else "".
std::string layout_api(const core::Eqn& e) {
  return e.params.has("_api") ? e.params.get<std::string>("_api") : std::string();
}

// Raises JAX's error when committed arguments (or explicit shardings) disagree on the
// devices, or their order, of the computation. `p` is the program before its calls are
// inlined, so that a nested jit's own shardings are told from the constraints inside it.
// JAX's order: the arguments, the explicit output shardings, then each program's equations
// before those of its sub-programs.
std::vector<Device> check_devices(std::span<const ArgInfo> args, const CompileOptions& opts,
                                  const Program& p) {
  std::optional<std::vector<Device>> chosen;
  std::string first_desc;
  auto consider = [&](const std::vector<Device>& devices, const std::string& desc) {
    if (!chosen) {
      chosen = devices;
      first_desc = desc;
      return;
    }
    if (*chosen == devices) return;
    // JAX's text: "argument x of add with shape f32[24] and device ids [...]".
    auto with_ids = [](const std::string& d, const std::vector<Device>& ids) {
      const bool has_shape = d.find(" with shape ") != std::string::npos;
      return d + (has_shape ? " and" : " with") + " device ids " + ids_str(ids) + " on platform " +
             platform_of(ids);
    };
    throw ValueError("Received incompatible devices for jitted computation. Got " +
                     with_ids(first_desc, *chosen) + " and " + with_ids(desc, devices));
  };
  auto sharding_of = [](const core::Eqn& e) -> const Sharding& {
    return *e.params.get<std::shared_ptr<const Sharding>>("sharding");
  };
  // An argument counts with its committed sharding, or else with jit's in_sharding for it.
  std::vector<int> inputs(p.constvars);
  inputs.insert(inputs.end(), p.invars.begin(), p.invars.end());
  std::map<int, const Sharding*> in_shardings;
  for (const core::Eqn& e : p.eqns) {
    if (!core::has_trait(e.prim, core::kLayout) || layout_api(e) != "in_shardings") continue;
    if (!e.inputs[0].is_literal()) in_shardings.emplace(e.inputs[0].var, &sharding_of(e));
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string name =
        i < opts.arg_names.size() ? opts.arg_names[i] : "args[" + std::to_string(i) + "]";
    const std::string desc =
        "argument " + name + " of " + opts.name + " with shape " + args[i].aval.str();
    if (args[i].committed && args[i].sharding) {
      consider(args[i].sharding->device_assignment(), desc);
    } else if (auto it = in_shardings.find(inputs[i]); it != in_shardings.end()) {
      consider(it->second->device_assignment(), desc);
    }
  }
  for (const core::Eqn& e : p.eqns) {
    if (core::has_trait(e.prim, core::kLayout) && layout_api(e) == "out_shardings") {
      consider(sharding_of(e).device_assignment(), "explicit output sharding");
    }
  }
  auto visit = [&](auto& self, const Program& q, bool top) -> void {
    for (const core::Eqn& e : q.eqns) {
      // A shard_map holds its mesh, as do a region's boundaries once it is inlined.
      const bool region = is_region_boundary(e.prim);
      if ((region || core::has_trait(e.prim, core::kHasProgram)) && e.params.has("mesh")) {
        if (const auto& mesh = e.params.get<std::shared_ptr<const Sharding>>("mesh")) {
          const std::string what = region ? "shard_map" : std::string(core::prim_name(e.prim));
          consider(mesh->device_assignment(), what + " inside jit");
        }
      }
      if (!core::has_trait(e.prim, core::kLayout)) continue;
      const std::string api = layout_api(e);
      if (top && !api.empty()) continue;  // the arguments' and outputs', above
      // A nested jit's in/out shardings are reported as that call's: JAX's "pjit".
      const std::string what = api.empty() ? std::string(core::prim_name(e.prim)) : "pjit";
      consider(sharding_of(e).device_assignment(), what + " inside jit");
    }
    // The code that runs: control flow's branches and bodies, a call's or a shard_map's
    // program (not a custom derivative's rules).
    for (const core::Eqn& e : q.eqns) {
      for (const core::SubProgram& sub : core::program_roles(e).programs) {
        if (sub.role != core::ProgramRole::rule) self(self, *sub.program, false);
      }
    }
  };
  visit(visit, p, true);
  if (!chosen) return {detail::Topology::get().default_device()};
  return *chosen;
}

// The mesh of the computation: the mesh of the first named sharding among the explicit
// ones, else one that expresses the first sharding, else a one-device mesh.
Mesh choose_mesh(const std::vector<Device>& devices, std::span<const ArgInfo> args,
                 const CompileOptions& opts, const Program& p) {
  std::vector<std::pair<Sharding, size_t>> explicit_shardings;
  // A shard_map's mesh first: its per-device code names that mesh's axes.
  core::for_each_eqn(p, [&](const Program&, const core::Eqn& e) {
    if (!is_region_boundary(e.prim)) return;
    if (const auto& mesh = e.params.get<std::shared_ptr<const Sharding>>("mesh")) {
      explicit_shardings.push_back({*mesh, 0});
    }
  });
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].committed && args[i].sharding) {
      explicit_shardings.push_back({*args[i].sharding, args[i].aval.shape.size()});
    }
  }
  core::for_each_eqn(p, [&](const Program& q, const core::Eqn& e) {
    if (!core::has_trait(e.prim, core::kLayout)) return;
    const auto& s = *e.params.get<std::shared_ptr<const Sharding>>("sharding");
    explicit_shardings.push_back({s, q.aval_of(e.inputs[0]).shape.size()});
  });
  for (const auto& [s, rank] : explicit_shardings) {
    if (auto named = s.as_named(); named && named->mesh().devices() == devices)
      return named->mesh();
  }
  if (devices.size() == 1) return Mesh(devices, "_");
  for (const auto& [s, rank] : explicit_shardings) {
    if (s.device_assignment() == devices) return s.to_named(int64_t(rank)).mesh();
  }
  return Mesh(devices, "_");
}

}  // namespace

Program inline_calls(const Program& p) {
  const bool has_calls = std::any_of(p.eqns.begin(), p.eqns.end(), [](const core::Eqn& e) {
    return core::has_trait(e.prim, core::kHasProgram) ||
           core::has_trait(e.prim, core::kControlFlow);
  });
  if (!has_calls) return p;
  // The caller's inputs keep their numbers; inlined equations get fresh variables.
  Program flat;
  flat.avals = p.avals;
  flat.constvars = p.constvars;
  flat.invars = p.invars;
  std::vector<Atom> args;
  for (int v : p.constvars) args.push_back(Atom::of(v));
  for (int v : p.invars) args.push_back(Atom::of(v));
  flat.outvars = inline_into(flat, p, args);
  return flat;
}

std::shared_ptr<const Plan> compile(std::shared_ptr<const Program> program,
                                    std::span<const ArgInfo> args, const CompileOptions& opts) {
  PassState state{
      .global = *program, .args = args, .choose_mesh = [&](const Program& flat) {
        return MeshInfo(choose_mesh(check_devices(args, opts, *program), args, opts, flat));
      }};
  run_passes(state, pass_list(), opts.name);
  const Program& flat = state.global;
  const MeshInfo& mesh = *state.mesh;
  Partitioned& part = *state.partitioned;
  auto plan = std::make_shared<Plan>(mesh);
  plan->name = opts.name;

  const bool single = mesh.num_devices() == 1;
  auto sharding_of = [&](const DimShard& s) -> Sharding {
    if (single) return SingleDeviceSharding(mesh.mesh.devices()[0]);
    return NamedSharding(mesh.mesh, mesh.spec(s));
  };
  for (size_t i = 0; i < args.size(); ++i) {
    plan->in_layouts.push_back(part.inputs[i]);
    plan->in_avals.push_back(args[i].aval);
    plan->arg_shardings.push_back(args[i].sharding);
    plan->in_shardings.push_back(sharding_of(part.inputs[i]));
  }
  for (size_t o = 0; o < flat.outvars.size(); ++o) {
    const core::Aval& aval = flat.aval_of(flat.outvars[o]);
    Sharding s = sharding_of(part.outputs[o]);
    // JAX keeps the sharding object of a constraint (or out_shardings) that made the
    // output, or of an input laid out the same way.
    std::vector<Sharding> candidates;
    const Atom& out = flat.outvars[o];
    for (const core::Eqn& e : flat.eqns) {
      if (core::has_trait(e.prim, core::kLayout) && !out.is_literal() && e.outputs[0] == out.var) {
        candidates.push_back(*e.params.get<std::shared_ptr<const Sharding>>("sharding"));
      }
    }
    for (const ArgInfo& a : args) {
      if (a.committed && a.sharding && a.aval.shape == aval.shape)
        candidates.push_back(*a.sharding);
    }
    for (const Sharding& c : candidates) {
      if (same_placement(c, s, aval.shape)) {
        s = c;
        break;
      }
    }
    plan->out_shardings.push_back(std::move(s));
    plan->out_layouts.push_back(part.outputs[o]);
    plan->out_avals.push_back(aval);
  }
  // Outputs are committed when an input was or when the program states a layout.
  plan->committed =
      std::any_of(args.begin(), args.end(), [](const ArgInfo& a) { return a.committed; }) || [&] {
        bool stated = false;
        core::for_each_eqn(flat, [&](const Program&, const core::Eqn& e) {
          stated = stated || core::has_trait(e.prim, core::kLayout) ||
                   core::has_trait(e.prim, core::kRegionExit);
        });
        return stated;
      }();
  plan->cost = analyze(part.local, mesh);
  plan->collectives = collectives_of(part.local, mesh, part.notes);
  apply_reshard_policy(plan->collectives, mesh, opts.name);
  plan->local = std::make_shared<const Program>(std::move(part.local));
  plan->buffers = std::make_shared<const BufferPlan>(std::move(*state.buffers));
  warn_unused_donations(args, plan->buffers->donated);
  return plan;
}

std::string Plan::as_text() const {
  std::string text = "# mesh " + mesh.mesh.to_string() + ", devices " +
                     ids_str(mesh.mesh.devices()) + "\n# in_layouts (";
  for (size_t i = 0; i < in_layouts.size(); ++i)
    text += (i ? ", " : "") + mesh.spec_str(in_layouts[i]);
  text += ")\n# out_layouts (";
  for (size_t i = 0; i < out_layouts.size(); ++i)
    text += (i ? ", " : "") + mesh.spec_str(out_layouts[i]);
  text += ")\n" + program_text(*local, mesh) + "\n";
  return buffers ? text + buffers_text(*local, *buffers) : text;
}

namespace {

// A sharding with the devices it assigns, so plans on different devices differ.
std::string sharding_str(const Sharding& s) {
  return s.to_string() + "@" + ids_str(s.device_assignment());
}

std::string aval_str(const core::Aval& a) { return a.short_str() + (a.weak_type ? "w" : ""); }

template <class T, class F>
std::string list_str(const std::vector<T>& items, F str) {
  std::string text;
  for (size_t i = 0; i < items.size(); ++i) text += (i ? ", " : "") + str(items[i]);
  return "(" + text + ")";
}

}  // namespace

std::string Plan::serialize() const {
  auto optional_str = [](const std::optional<Sharding>& s) {
    return s ? sharding_str(*s) : std::string("None");
  };
  return as_text() + "# args " + list_str(arg_shardings, optional_str) + "\n# in_shardings " +
         list_str(in_shardings, sharding_str) + "\n# out_shardings " +
         list_str(out_shardings, sharding_str) + "\n# in_avals " + list_str(in_avals, aval_str) +
         "\n# out_avals " + list_str(out_avals, aval_str) + "\n# committed " +
         (committed ? "true" : "false") + "\n# cost " + cost.str() + "\n";
}

namespace {
uint64_t fnv1a(std::string_view text) {
  uint64_t h = 14695981039346656037ull;  // FNV-1a: simple, and the same on every process
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}
}  // namespace

uint64_t Plan::fingerprint() const { return fnv1a(serialize()); }

uint64_t Plan::spmd_fingerprint() const {
  return fnv1a(as_text() + "# in_shardings " + list_str(in_shardings, sharding_str) +
               "\n# out_shardings " + list_str(out_shardings, sharding_str) + "\n# in_avals " +
               list_str(in_avals, aval_str) + "\n# out_avals " + list_str(out_avals, aval_str));
}

}  // namespace parax::compiler
