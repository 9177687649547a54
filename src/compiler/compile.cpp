#include "compiler/compile.h"

#include <algorithm>
#include <sstream>

#include "api/array_impl.h"
#include "base/check.h"
#include "compiler/passes.h"
#include "runtime/client.h"
#include "runtime/executor.h"
#include "runtime/transfer.h"
#include "sharding/sharding_impl.h"

namespace parax::compiler {
namespace {

using core::Atom;
using core::Prim;
using core::Program;

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
    if (e.prim == Prim::pjit) {
      const auto& body = *e.params.get<std::shared_ptr<const Program>>("jaxpr");
      std::vector<Atom> res = inline_into(out, body, in);
      for (size_t r = 0; r < e.outputs.size(); ++r) map[size_t(e.outputs[r])] = res[r];
      continue;
    }
    if (e.prim == Prim::shard_map) {
      // The region's per-device code sits between manual-enter and manual-exit equations,
      // which relabel each value's layout between its global and per-device views.
      const auto& body = *e.params.get<std::shared_ptr<const Program>>("jaxpr");
      const auto& in_specs = e.params.get<std::vector<PartitionSpec>>("in_specs");
      const auto& out_specs = e.params.get<std::vector<PartitionSpec>>("out_specs");
      auto boundary = [&](Prim p, const Atom& a, const core::Aval& aval, const PartitionSpec& spec) {
        int v = out.new_var(aval);
        core::Params params{{"axes", e.params.get<std::vector<std::string>>("axis_names")},
                            {"axis_sizes", e.params.get<std::vector<int64_t>>("axis_sizes")},
                            {"spec", std::vector<PartitionSpec>{spec}},
                            {"mesh", e.params.get<std::shared_ptr<const Sharding>>("mesh")}};
        out.eqns.push_back(core::Eqn{p, {a}, {v}, std::move(params)});
        return Atom::of(v);
      };
      std::vector<Atom> local;
      for (size_t i = 0; i < in.size(); ++i) {
        local.push_back(boundary(Prim::manual_enter, in[i],
                                 body.avals[size_t(body.invars[i])], in_specs[i]));
      }
      std::vector<Atom> res = inline_into(out, body, local);
      for (size_t r = 0; r < e.outputs.size(); ++r) {
        map[size_t(e.outputs[r])] = boundary(Prim::manual_exit, res[r],
                                             callee.avals[size_t(e.outputs[r])], out_specs[r]);
      }
      continue;
    }
    core::Eqn copy{e.prim, std::move(in), {}, e.params};
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

// Raises JAX's error when committed arguments (or explicit shardings) disagree on the
// devices, or their order, of the computation.
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
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string name =
        i < opts.arg_names.size() ? opts.arg_names[i] : "args[" + std::to_string(i) + "]";
    if (args[i].committed && args[i].sharding) {
      consider(args[i].sharding->device_assignment(),
               "argument " + name + " of " + opts.name + " with shape " + args[i].aval.str());
    }
  }
  for (const core::Eqn& e : p.eqns) {
    // A region's boundaries carry its mesh (a region without array arguments has only exits).
    if (e.prim == Prim::manual_enter || e.prim == Prim::manual_exit) {
      const auto& mesh = e.params.get<std::shared_ptr<const Sharding>>("mesh");
      if (mesh) {
        consider(mesh->device_assignment(),
                 "shard_map mesh " + mesh->as_named()->mesh().to_string());
      }
    }
    if (!core::has_trait(e.prim, core::kLayout)) continue;
    const auto& s = *e.params.get<std::shared_ptr<const Sharding>>("sharding");
    consider(s.device_assignment(), "sharding constraint " + s.to_string());
  }
  if (!chosen) return {runtime::Client::get().default_device()};
  return *chosen;
}

// The mesh of the computation: the mesh of the first named sharding among the explicit
// ones, else one that expresses the first sharding, else a one-device mesh.
Mesh choose_mesh(const std::vector<Device>& devices, std::span<const ArgInfo> args,
                 const CompileOptions& opts, const Program& p) {
  std::vector<std::pair<Sharding, size_t>> explicit_shardings;
  // A shard_map's mesh first: its per-device code names that mesh's axes.
  for (const core::Eqn& e : p.eqns) {
    if (e.prim != Prim::manual_enter && e.prim != Prim::manual_exit) continue;
    if (const auto& mesh = e.params.get<std::shared_ptr<const Sharding>>("mesh")) {
      explicit_shardings.push_back({*mesh, 0});
    }
  }
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].committed && args[i].sharding) {
      explicit_shardings.push_back({*args[i].sharding, args[i].aval.shape.size()});
    }
  }
  for (const core::Eqn& e : p.eqns) {
    if (!core::has_trait(e.prim, core::kLayout)) continue;
    const auto& s = *e.params.get<std::shared_ptr<const Sharding>>("sharding");
    explicit_shardings.push_back({s, p.aval_of(e.inputs[0]).shape.size()});
  }
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

CostAnalysis analyze(const Program& local, const MeshInfo& mesh) {
  CostAnalysis c;
  for (const core::Eqn& e : local.eqns) {
    const core::Aval& out = local.avals[size_t(e.outputs[0])];
    const core::Aval& in = e.inputs.empty() ? out : local.aval_of(e.inputs[0]);
    if (core::has_trait(e.prim, core::kCollective)) {
      c.collectives[std::string(core::prim_name(e.prim))]++;
      double bytes = double(out.nbytes());
      if (e.prim == Prim::all_gather) bytes = double(out.nbytes() - in.nbytes());
      if (e.prim == Prim::reduce_scatter) bytes = double(in.nbytes() - out.nbytes());
      if (e.prim == Prim::all_reduce || e.prim == Prim::all_to_all) {
        const double n = double(mesh.size_of(e.params.get<std::vector<int64_t>>("mesh_axes")));
        bytes = double(in.nbytes()) * (n - 1) / n * (e.prim == Prim::all_reduce ? 2 : 1);
      }
      c.collective_bytes += bytes;
    } else if (e.prim == Prim::dot_general) {
      int64_t k = 1;
      for (int64_t d : e.params.get<std::vector<int64_t>>("lhs_contracting_dimensions")) {
        k *= in.shape[size_t(d)];
      }
      c.flops += 2.0 * double(out.size()) * double(k);
    } else if (core::has_trait(e.prim, core::kElementwise)) {
      c.flops += double(out.size());
    } else if (e.prim == Prim::fusion) {
      const auto& body = *e.params.get<std::shared_ptr<const Program>>("jaxpr");
      c.flops += double(out.size()) * double(body.eqns.size());
    } else if (core::has_trait(e.prim, core::kReduction) || e.prim == Prim::cumsum) {
      c.flops += double(in.size());
    }
  }
  return c;
}

}  // namespace

Program inline_calls(const Program& p) {
  const bool has_calls = std::any_of(p.eqns.begin(), p.eqns.end(), [](const core::Eqn& e) {
    return e.prim == Prim::pjit || e.prim == Prim::shard_map;
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

Executable::~Executable() = default;

std::shared_ptr<const Executable> compile(std::shared_ptr<const Program> program,
                                          std::span<const ArgInfo> args,
                                          const CompileOptions& opts) {
  PassState state{.global = *program, .args = args, .choose_mesh = [&](const Program& flat) {
                    return MeshInfo(choose_mesh(check_devices(args, opts, flat), args, opts, flat));
                  }};
  run_passes(state, pass_list(), opts.name);
  const Program& flat = state.global;
  const MeshInfo& mesh = *state.mesh;
  Partitioned& part = *state.partitioned;
  std::shared_ptr<Executable> exe(new Executable(mesh));

  const bool single = mesh.num_devices() == 1;
  auto sharding_of = [&](const DimShard& s) -> Sharding {
    if (single) return SingleDeviceSharding(mesh.mesh.devices()[0]);
    return NamedSharding(mesh.mesh, mesh.spec(s));
  };
  auto position_of = [&](const Device& d) {
    const auto& all = mesh.mesh.devices();
    return size_t(std::find(all.begin(), all.end(), d) - all.begin());
  };
  for (size_t i = 0; i < args.size(); ++i) {
    Sharding target = sharding_of(part.inputs[i]);
    const bool direct =
        args[i].sharding && same_placement(*args[i].sharding, target, args[i].aval.shape);
    exe->in_layouts_.push_back(part.inputs[i]);
    exe->in_direct_.push_back(direct);
    std::vector<size_t> order(size_t(mesh.num_devices()));
    if (direct) {
      const auto& assignment = args[i].sharding->device_assignment();
      for (size_t b = 0; b < assignment.size(); ++b) order[position_of(assignment[b])] = b;
    }
    exe->in_order_.push_back(std::move(order));
    exe->in_shardings_.push_back(std::move(target));
  }
  for (size_t o = 0; o < flat.outvars.size(); ++o) {
    const core::Aval& aval = flat.aval_of(flat.outvars[o]);
    Sharding s = sharding_of(part.outputs[o]);
    // JAX keeps the sharding object of a constraint (or out_shardings) that made the
    // output, or of an input laid out the same way.
    std::vector<Sharding> candidates;
    const Atom& out = flat.outvars[o];
    for (const core::Eqn& e : flat.eqns) {
      if (core::has_trait(e.prim, core::kLayout) && !out.is_literal() &&
          e.outputs[0] == out.var) {
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
    std::vector<size_t> order;
    for (const Device& d : s.device_assignment()) order.push_back(position_of(d));
    exe->out_order_.push_back(std::move(order));
    exe->out_shardings_.push_back(std::move(s));
    exe->out_layouts_.push_back(part.outputs[o]);
    exe->out_avals_.push_back(aval);
  }
  // Outputs are committed when an input was or when the program states a layout.
  exe->committed_ =
      std::any_of(args.begin(), args.end(), [](const ArgInfo& a) { return a.committed; }) ||
      std::any_of(flat.eqns.begin(), flat.eqns.end(), [](const core::Eqn& e) {
        return core::has_trait(e.prim, core::kLayout) || e.prim == Prim::manual_exit;
      });
  exe->cost_ = analyze(part.local, mesh);
  exe->local_ = std::make_shared<const Program>(std::move(part.local));
  exe->executor_ = std::make_shared<const runtime::Executor>(
      exe->local_, runtime::MeshLayout(mesh.axis_sizes, mesh.mesh.devices()));
  return exe;
}

std::vector<Array> Executable::run(std::span<const Array> args) const {
  std::vector<std::vector<runtime::BufferRef>> inputs;
  for (size_t i = 0; i < args.size(); ++i) {
    const detail::ArrayImpl& x = detail::concrete_of(args[i], "jit");
    if (in_direct_[i]) {
      std::vector<runtime::BufferRef> bufs;
      for (size_t b : in_order_[i]) bufs.push_back(x.buffers[b]);
      inputs.push_back(std::move(bufs));
    } else {
      inputs.push_back(runtime::relayout(x.aval, *x.sharding, x.buffers, in_shardings_[i]));
    }
  }
  auto outs = executor_->run(std::move(inputs));
  std::vector<Array> result;
  for (size_t o = 0; o < outs.size(); ++o) {
    std::vector<runtime::BufferRef> bufs;
    for (size_t p : out_order_[o]) bufs.push_back(outs[o][p]);
    result.push_back(
        detail::make_array(out_avals_[o], out_shardings_[o], committed_, std::move(bufs)));
  }
  return result;
}

std::string Executable::as_text() const {
  std::string text = "# mesh " + mesh_.mesh.to_string() + ", devices " +
                     ids_str(mesh_.mesh.devices()) + "\n# in_layouts (";
  for (size_t i = 0; i < in_layouts_.size(); ++i)
    text += (i ? ", " : "") + mesh_.spec_str(in_layouts_[i]);
  text += ")\n# out_layouts (";
  for (size_t i = 0; i < out_layouts_.size(); ++i)
    text += (i ? ", " : "") + mesh_.spec_str(out_layouts_[i]);
  text += ")\n";
  return text + program_text(*local_, mesh_) + "\n";
}

}  // namespace parax::compiler
