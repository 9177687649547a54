// Collectives among the devices of a mesh. Within a process they are plain memory
// operations over the devices' buffers (every virtual device shares its address space);
// a group that spans processes combines within each process first and crosses processes
// through the engine (engine.h) once per group. A device group is the set of devices that
// differ only in the given mesh axes, ordered by their linear index over those axes (major
// to minor), as the partitioner assumes.
//
// Reductions combine a group's members in one fixed order, a balanced binary tree over the
// ranks, so a result is bit-for-bit the same however the devices are spread over processes.
#pragma once

#include <vector>

#include "core/program.h"
#include "runtime/buffer.h"

namespace parax::runtime {

// The devices a per-device program runs on: position p is the p-th device of the mesh.
// Only this process's positions hold buffers.
struct MeshLayout {
  Shape axis_sizes;
  std::vector<Device> devices;
  std::vector<std::vector<int64_t>> coords;  // per position, per axis
  std::vector<int> process_of;               // per position
  std::vector<bool> local;                   // per position: on this process
  std::vector<int> processes;                // ascending: the processes of the devices

  MeshLayout(Shape axis_sizes, std::vector<Device> devices);
  int64_t size() const { return int64_t(devices.size()); }
  bool spans_processes() const { return processes.size() > 1; }
};

// Runs the collective equation `eqn` (all-gather, all-reduce, reduce-scatter, all-to-all,
// collective-permute) for this process's positions: in[p] is device p's operand (null on
// other processes' positions); returns out[p] likewise. Identical results of a group share
// one buffer (they are immutable).
std::vector<BufferRef> run_collective(const core::Eqn& eqn, const core::Aval& in_aval,
                                      const core::Aval& out_aval, const MeshLayout& mesh,
                                      const std::vector<BufferRef>& in);

}  // namespace parax::runtime
