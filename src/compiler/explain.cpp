#include "compiler/explain.h"

#include <algorithm>
#include <iostream>

#include "base/config_internal.h"
#include "compiler/cost.h"
#include "core/rules.h"
#include "core/source_site.h"
#include "parax/errors.h"

namespace parax::compiler {
namespace {

template <class T>
const T* param(const core::Eqn& e, std::string_view name) {
  return e.params.has(name) ? &e.params.get<T>(name) : nullptr;
}

// The mesh axes a collective runs over; a collective-permute names its device pairs instead.
AxisList axes_of(const core::Eqn& e) {
  const auto* axes = param<std::vector<int64_t>>(e, "mesh_axes");
  return axes ? *axes : AxisList{};
}

// The share of a device's received bytes that come from devices of other processes, the
// most over devices: of its group's other members (over `axes`), those elsewhere; of a
// permute's sources, whether any is elsewhere.
double across_processes(const core::Eqn& e, const MeshInfo& mesh) {
  const std::vector<Device>& devices = mesh.mesh.devices();
  auto process = [&](int64_t position) { return devices[size_t(position)].process_index(); };
  const int64_t n = mesh.num_devices();
  if (std::all_of(devices.begin(), devices.end(),
                  [&](const Device& d) { return d.process_index() == process(0); })) {
    return 0.0;
  }
  if (const auto* pairs = param<std::vector<int64_t>>(e, "source_target_pairs")) {
    for (size_t k = 0; k + 1 < pairs->size(); k += 2) {
      if (process((*pairs)[k]) != process((*pairs)[k + 1])) return 1.0;
    }
    return 0.0;
  }
  const AxisList axes = axes_of(e);
  const int64_t group = mesh.size_of(axes);
  if (group <= 1) return 0.0;
  double most = 0;
  for (int64_t p = 0; p < n; ++p) {
    const std::vector<int64_t> mine = mesh.coords(p);
    int64_t others = 0;
    for (int64_t q = 0; q < n; ++q) {
      const std::vector<int64_t> theirs = mesh.coords(q);
      bool same_group = true;
      for (size_t a = 0; a < mine.size(); ++a) {
        const bool grouped = std::find(axes.begin(), axes.end(), int64_t(a)) != axes.end();
        same_group = same_group && (grouped || mine[a] == theirs[a]);
      }
      if (same_group && process(q) != process(p)) ++others;
    }
    most = std::max(most, double(others) / double(group - 1));
  }
  return most;
}

void walk(const core::Program& p, const MeshInfo& mesh, std::span<const CollectiveNote> notes,
          double runs, const std::string& where, std::vector<CollectiveNote>& out) {
  for (const core::Eqn& e : p.eqns) {
    if (core::has_trait(e.prim, core::kControlFlow)) {
      const core::ProgramRoles roles = core::program_roles(e);
      const double times = runs * double(roles.trip_count.value_or(1));
      int branch = 0;
      for (const core::SubProgram& sub : roles.programs) {
        const std::string name(core::prim_name(e.prim));
        switch (sub.role) {
          case core::ProgramRole::branch:
            walk(*sub.program, mesh, notes, runs, name + " branch " + std::to_string(branch++),
                 out);
            break;
          case core::ProgramRole::body:
          case core::ProgramRole::predicate:
            walk(*sub.program, mesh, notes, times,
                 name + (sub.role == core::ProgramRole::body ? " body" : " predicate"), out);
            break;
          default:
            walk(*sub.program, mesh, notes, times, where, out);
        }
      }
      continue;
    }
    if (!core::has_trait(e.prim, core::kCollective)) continue;
    const auto* index = param<int64_t>(e, "_note");
    CollectiveNote n = index ? notes[size_t(*index)] : CollectiveNote{};
    if (!index) {  // not made by partition-spmd (a test's hand-written program)
      n.primitive = std::string(core::prim_name(e.prim));
      for (int64_t a : axes_of(e)) n.mesh_axes.push_back(mesh.names[size_t(a)]);
      n.local = p.aval_of(e.inputs[0]);
    }
    n.bytes = eqn_cost(p, e, mesh).collective_bytes;
    n.bytes_across_processes = n.bytes * across_processes(e, mesh);
    n.runs = runs;
    n.where = where;
    out.push_back(std::move(n));
  }
}

}  // namespace

std::string CollectiveNote::line(const MeshInfo& mesh) const {
  std::string text = core::empty_site(site) ? std::string("(no user line)") : core::site_str(site);
  text += ": " + primitive;
  if (!mesh_axes.empty()) {
    text += " over (";
    for (size_t i = 0; i < mesh_axes.size(); ++i) {
      text += (i ? ", '" : "'") + mesh_axes[i] + "'";
    }
    text += mesh_axes.size() == 1 ? ",)" : ")";
  }
  text += " of " + local.short_str();
  if (!before.empty()) text += ", " + before + " -> " + after;
  if (!where.empty()) text += " (in the " + where + ")";
  return text + ": " + reason;
}

std::vector<CollectiveNote> collectives_of(const core::Program& local, const MeshInfo& mesh,
                                           std::span<const CollectiveNote> notes) {
  std::vector<CollectiveNote> out;
  walk(local, mesh, notes, 1.0, "", out);
  return out;
}

void apply_reshard_policy(const std::vector<CollectiveNote>& notes, const MeshInfo& mesh,
                          const std::string& name) {
  const detail::ReshardPolicy policy = detail::implicit_reshard_policy();
  if (policy == detail::ReshardPolicy::kAllow) return;
  for (const CollectiveNote& n : notes) {
    if (n.is_explicit) continue;
    const std::string line = n.line(mesh);
    if (policy == detail::ReshardPolicy::kError) {
      throw ShardingError("parax_implicit_reshard='error': compiling " + name +
                          " needs an implicit collective:\n  " + line +
                          "\nSay it with parax::reshard, or set parax_implicit_reshard to "
                          "'warn' or 'allow'.");
    }
    std::cerr << "parax: implicit collective in " << name << ": " << line << "\n";
  }
}

}  // namespace parax::compiler
