// LibTorch interop (the parax_torch library, built when LibTorch is found): tensors to and
// from Arrays, and a torch::nn::Module's parameters to and from an nn::StateDict under the
// same dotted names, so a LibTorch model's weights load into the equivalent parax module.
// The only parax header that includes LibTorch's.
#pragma once

#include <torch/torch.h>

#include <optional>

#include "parax/array.h"
#include "parax/module.h"
#include "parax/sharding.h"

namespace parax {

// Returns a CPU tensor holding x's values (a sharded x is gathered to the host), of x's
// dtype. Throws TypeError for a dtype torch lacks.
::torch::Tensor to_torch(const Array& x);
// Returns the tensor's values as an Array (canonical dtype: int64 becomes int32 and
// float64 float32 unless jax_enable_x64, as jnp.asarray does), placed as `sharding` when
// given. Throws TypeError for a dtype parax lacks.
Array from_torch(const ::torch::Tensor& t, const std::optional<Sharding>& sharding = std::nullopt);
// Returns the module's parameters and buffers under torch's state_dict names and order.
nn::StateDict import_parameters(const ::torch::nn::Module& module);
// Copies `params` into the module's parameters and buffers of the same names. Throws
// ValueError naming a parameter that is missing from `params` or has another shape.
void export_parameters(const nn::StateDict& params, ::torch::nn::Module& module);

}  // namespace parax
