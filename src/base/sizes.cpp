#include "base/sizes.h"

#include <sys/sysinfo.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "parax/errors.h"

namespace parax::base {
namespace {

std::string overflow_text(std::string_view api, std::string_view what, int64_t a, int64_t b,
                          char op) {
  return "[" + std::string(api) + "] " + std::string(what) +
         " overflows a 64-bit size: " + std::to_string(a) + " " + op + " " + std::to_string(b) +
         " is not representable";
}

// "12.0 GiB": the scale a reader checks a request against.
std::string human_bytes(uint64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = double(n);
  int u = 0;
  while (v >= 1024 && u < 6) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

// A cgroup's memory limit (v2, then v1), or 0 when there is none.
uint64_t cgroup_limit() {
  for (const char* path :
       {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream in(path);
    std::string s;
    if (!(in >> s) || s.empty() || s == "max") continue;
    try {
      return std::stoull(s);
    } catch (const std::exception&) {
      continue;
    }
  }
  return 0;
}

uint64_t compute_memory_limit() {
  struct sysinfo info {};
  if (sysinfo(&info) != 0) return UINT64_MAX;
  const uint64_t unit = info.mem_unit ? info.mem_unit : 1;
  uint64_t total = (uint64_t(info.totalram) + uint64_t(info.totalswap)) * unit;
  const uint64_t cg = cgroup_limit();
  if (cg > 0 && cg < total) total = cg;
  return total;
}

}  // namespace

int64_t checked_mul(int64_t a, int64_t b, std::string_view api, std::string_view what) {
  if (auto r = mul_exact(a, b)) return *r;
  throw ValueError(overflow_text(api, what, a, b, '*'));
}

void check_array_shape(std::string_view api, const Shape& shape, DType dtype) {
  int64_t bytes = dtype_itemsize(dtype);
  for (int64_t d : shape) {
    if (d < 0) {
      throw ValueError("[" + std::string(api) + "] negative dimensions are not allowed: shape " +
                       shape_str(shape));
    }
    if (d == 0) continue;
    if (auto r = mul_exact(bytes, d)) {
      bytes = *r;
      continue;
    }
    throw ValueError("[" + std::string(api) + "] array is too big: shape " + shape_str(shape) +
                     " of " + std::string(dtype_name(dtype)) +
                     " has more elements or bytes than a 64-bit size can count; expected "
                     "size * itemsize (without zero dimensions) at most 2^63 - 1");
  }
}

uint64_t memory_limit_bytes() {
  static const uint64_t limit = compute_memory_limit();
  return limit;
}

void throw_out_of_memory(std::string_view what, uint64_t nbytes) {
  throw ResourceExhaustedError(
      "RESOURCE_EXHAUSTED: [" + std::string(what) + "] Out of memory while trying to allocate " +
      std::to_string(nbytes) + " bytes (" + human_bytes(nbytes) + "); this machine has " +
      human_bytes(memory_limit_bytes()) + " of memory and swap");
}

bool allocation_fits(uint64_t nbytes, uint64_t live_bytes) {
  const uint64_t limit = memory_limit_bytes();
  return nbytes <= limit && live_bytes <= limit - nbytes;
}

void check_allocation(std::string_view what, uint64_t nbytes, uint64_t live_bytes) {
  if (!allocation_fits(nbytes, live_bytes)) throw_out_of_memory(what, nbytes);
}

}  // namespace parax::base
