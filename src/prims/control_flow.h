// What cond, while, scan and remat2 share: their params, read by name, and the types of
// their sub-programs. Internal to src/prims.
#pragma once

#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "core/program.h"
#include "core/rules.h"

namespace parax::prims {

using ProgramRef = std::shared_ptr<const core::Program>;

// A sub-program's input types (constvars, then invars) and output types.
std::vector<core::Aval> program_inputs(const core::Program& p);
std::vector<core::Aval> program_outputs(const core::Program& p);

// The parts of a scan's operand list: consts, carry, then xs.
struct ScanShape {
  int64_t num_consts = 0;
  int64_t num_carry = 0;
  int64_t length = 0;
  bool reverse = false;
  int64_t unroll = 1;
  ProgramRef body;

  explicit ScanShape(const core::Params& params);
  size_t num_xs(size_t operands) const { return operands - size_t(num_consts + num_carry); }
};

// The parts of a while's operand list: cond consts, body consts, then the carry.
struct WhileShape {
  int64_t cond_nconsts = 0;
  int64_t body_nconsts = 0;
  ProgramRef cond;
  ProgramRef body;

  explicit WhileShape(const core::Params& params);
};

// Returns `t` with a leading dimension of `n` (a scan's stacked type) or without it.
core::Aval stacked(core::Aval t, int64_t n);
core::Aval unstacked(core::Aval t);

// Batching (vmap) and check_vma rules of cond, while, scan and remat2
// (control_flow_batching.cpp).
core::Batched cond_batch(std::span<const Array> in, std::span<const int> dims,
                         const core::Params& params, const core::BatchAxis& axis);
core::Batched while_batch(std::span<const Array> in, std::span<const int> dims,
                          const core::Params& params, const core::BatchAxis& axis);
core::Batched scan_batch(std::span<const Array> in, std::span<const int> dims,
                         const core::Params& params, const core::BatchAxis& axis);
core::Batched checkpoint_batch(std::span<const Array> in, std::span<const int> dims,
                               const core::Params& params, const core::BatchAxis& axis);
std::vector<uint64_t> cond_vma(std::span<const uint64_t> in, const core::Params& params,
                               std::span<const std::string> axes);
std::vector<uint64_t> while_vma(std::span<const uint64_t> in, const core::Params& params,
                                std::span<const std::string> axes);
std::vector<uint64_t> scan_vma(std::span<const uint64_t> in, const core::Params& params,
                               std::span<const std::string> axes);

}  // namespace parax::prims
