// Shared by vmap and pmap: JAX's message when the axes to map disagree in size.
#pragma once

#include <string>
#include <vector>

#include "core/aval.h"

namespace parax::detail {

// Throws ValueError listing the mapped axes' sizes, the most common first, as JAX does
// ("vmap got inconsistent sizes for array axes to be mapped:\n  * most axes (2 of them)
// had size 8, e.g. axis 0 of args[1] of type float32[8,3];\n  * one axis had size 4: ...").
// dims[i] < 0: argument i is not mapped.
[[noreturn]] void throw_inconsistent_sizes(const std::string& fn,
                                           const std::vector<core::Aval>& avals,
                                           const std::vector<int>& dims,
                                           const std::vector<std::string>& names);

}  // namespace parax::detail
