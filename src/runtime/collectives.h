// Collectives among the devices of one process: plain memory operations over the
// devices' buffers (every virtual device shares this address space). A device group is
// the set of devices that differ only in the given mesh axes, ordered by their linear
// index over those axes (major to minor), as the partitioner assumes.
#pragma once

#include <vector>

#include "core/program.h"
#include "runtime/buffer.h"

namespace parax::runtime {

// The devices a per-device program runs on: position p is the p-th device of the mesh.
struct MeshLayout {
  Shape axis_sizes;
  std::vector<Device> devices;
  std::vector<std::vector<int64_t>> coords;  // per position, per axis

  MeshLayout(Shape axis_sizes, std::vector<Device> devices);
  int64_t size() const { return int64_t(devices.size()); }
};

// Runs the collective equation `eqn` (all-gather, all-reduce, reduce-scatter, all-to-all,
// collective-permute) for all positions: in[p] is device p's operand; returns out[p].
// Identical results of a group share one buffer (they are immutable).
std::vector<BufferRef> run_collective(const core::Eqn& eqn, const core::Aval& in_aval,
                                      const core::Aval& out_aval, const MeshLayout& mesh,
                                      const std::vector<BufferRef>& in);

}  // namespace parax::runtime
