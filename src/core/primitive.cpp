#include "core/primitive.h"

#include <array>

namespace parax::core {
namespace {

struct PrimInfo {
  std::string_view name;
  uint32_t traits;
};

constexpr std::array<PrimInfo, kNumPrims> kPrims = {{
#define PARAX_PRIM_INFO(name, printed, traits) {printed, traits},
    PARAX_PRIMITIVES(PARAX_PRIM_INFO)
#undef PARAX_PRIM_INFO
}};

}  // namespace

std::string_view prim_name(Prim p) { return kPrims[size_t(p)].name; }
uint32_t prim_traits(Prim p) { return kPrims[size_t(p)].traits; }

}  // namespace parax::core
