#include "parax/config.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <iterator>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/config_internal.h"
#include "parax/errors.h"

namespace parax::config {
namespace {

struct Flag {
  std::string_view name;
  std::atomic<bool> value;
};

Flag g_flags[] = {
    {"jax_threefry_partitionable", true},
    {"jax_enable_x64", false},
    {"jax_high_dynamic_range_gumbel", false},  // random::gumbel's default mode: "high" if set
};
std::atomic<unsigned long long> g_epoch{0};

// Integer settings: the bounds of the caches that long runs would otherwise grow without
// limit. Each starts from its PARAX_* environment variable when set.
struct IntSetting {
  std::string_view name;
  const char* env;
  int64_t fallback;
  std::atomic<int64_t> value{-1};  // -1: not read yet
};

IntSetting g_ints[] = {
    {"parax_eager_cache_size", "PARAX_EAGER_CACHE_SIZE", 4096},
    {"parax_jit_cache_size", "PARAX_JIT_CACHE_SIZE", 1024},
    {"parax_buffer_cache_bytes", "PARAX_BUFFER_CACHE_BYTES", int64_t(1) << 30},
    {"parax_distributed_timeout", "PARAX_DISTRIBUTED_TIMEOUT", 10},
};
static_assert(std::size(g_ints) == size_t(detail::IntSettingId::kCount));

int64_t parse_setting(std::string_view name, const std::string& text, const char* origin) {
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || n < 0) {
    throw ValueError(std::string(origin) + " must be a non-negative integer for " +
                     std::string(name) + "; got '" + text + "'");
  }
  return int64_t(n);
}

IntSetting* find_int(std::string_view name) {
  for (IntSetting& s : g_ints) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

int64_t load(IntSetting& s) {
  int64_t v = s.value.load(std::memory_order_relaxed);
  if (v >= 0) return v;
  v = s.fallback;
  if (const char* env = std::getenv(s.env); env && *env) v = parse_setting(s.name, env, s.env);
  int64_t expected = -1;
  s.value.compare_exchange_strong(expected, v);
  return s.value.load();
}
// String settings: a choice among a few names (the collective engine). Each starts from
// its PARAX_* environment variable when set.
struct StringSetting {
  std::string_view name;
  const char* env;
  std::vector<std::string_view> choices;  // the first is the default
  std::optional<std::string> value;       // unset: not read yet
};

std::mutex g_strings_mu;
StringSetting g_strings[] = {
    {"jax_cpu_collectives_implementation", "PARAX_CPU_COLLECTIVES", {"gloo", "mpi"}, {}},
    {"parax_conv_implementation", "PARAX_CONV_IMPLEMENTATION", {"auto", "onednn", "im2col"}, {}},
    {"parax_implicit_reshard", "PARAX_IMPLICIT_RESHARD", {"allow", "warn", "error"}, {}},
};

// parax_implicit_reshard's choice as an index into its choices, -1 until read.
std::atomic<int> g_reshard_policy{-1};

StringSetting* find_string(std::string_view name) {
  for (StringSetting& s : g_strings) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::string checked_choice(const StringSetting& s, std::string_view value, const char* origin) {
  for (std::string_view c : s.choices) {
    if (c == value) return std::string(value);
  }
  std::string list;
  for (std::string_view c : s.choices) list += (list.empty() ? "'" : ", '") + std::string(c) + "'";
  throw ValueError(std::string(origin) + " must be one of " + list + " for " + std::string(s.name) +
                   "; got '" + std::string(value) + "'");
}

// Requires: g_strings_mu held.
const std::string& load(StringSetting& s) {
  if (!s.value) {
    const char* env = std::getenv(s.env);
    s.value = (env && *env) ? checked_choice(s, env, s.env) : std::string(s.choices.front());
  }
  return *s.value;
}

std::mutex g_devices_mu;
int g_requested_devices = 0;  // 0: not set by set_num_cpu_devices
bool g_devices_frozen = false;

Flag& find(std::string_view name) {
  for (Flag& f : g_flags) {
    if (f.name == name) return f;
  }
  if (find_int(name)) {
    throw TypeError("config option " + std::string(name) + " takes an integer, not a bool");
  }
  if (find_string(name)) {
    throw TypeError("config option " + std::string(name) + " takes a string, not a bool");
  }
  throw ValueError("Unrecognized config option: " + std::string(name));
}

IntSetting& find_setting(std::string_view name) {
  if (IntSetting* s = find_int(name)) return *s;
  for (Flag& f : g_flags) {
    if (f.name == name) {
      throw TypeError("config option " + std::string(name) + " takes a bool, not an integer");
    }
  }
  if (find_string(name)) {
    throw TypeError("config option " + std::string(name) + " takes a string, not an integer");
  }
  throw ValueError("Unrecognized config option: " + std::string(name));
}

// Parses N from XLA_FLAGS' --xla_force_host_platform_device_count=N, as JAX users set it.
int count_from_xla_flags() {
  const char* flags = std::getenv("XLA_FLAGS");
  if (!flags) return 0;
  std::string s(flags);
  const std::string key = "--xla_force_host_platform_device_count=";
  size_t pos = s.rfind(key);
  if (pos == std::string::npos) return 0;
  return std::atoi(s.c_str() + pos + key.size());
}

int count_from_env() {
  const char* env = std::getenv("PARAX_NUM_CPU_DEVICES");
  if (!env || !*env) return 0;
  char* end = nullptr;
  long n = std::strtol(env, &end, 10);
  if (*end != '\0' || n < 1) {
    throw ValueError("PARAX_NUM_CPU_DEVICES must be a positive integer; got '" + std::string(env) +
                     "'");
  }
  return int(n);
}

}  // namespace

void set_num_cpu_devices(int n) {
  std::lock_guard<std::mutex> lock(g_devices_mu);
  if (n < 1) {
    throw ValueError("[set_num_cpu_devices] the number of CPU devices must be >= 1; got " +
                     std::to_string(n));
  }
  if (g_devices_frozen) {
    throw RuntimeError(
        "[set_num_cpu_devices] the number of CPU devices must be set before the devices are "
        "created, i.e. before any parax operation; it is already fixed. Call "
        "parax::config::set_num_cpu_devices first thing in main, or set "
        "PARAX_NUM_CPU_DEVICES.");
  }
  g_requested_devices = n;
}

void update(std::string_view name, bool value) {
  Flag& f = find(name);
  if (f.value.exchange(value) != value) ++g_epoch;
}

bool read(std::string_view name) { return find(name).value.load(); }

void update(std::string_view name, int64_t value) {
  IntSetting& s = find_setting(name);
  if (value < 0) {
    throw ValueError("config option " + std::string(name) +
                     " must be a non-negative integer; got " + std::to_string(value));
  }
  s.value.store(value);
}

int64_t read_int(std::string_view name) { return load(find_setting(name)); }

namespace {
StringSetting& find_string_setting(std::string_view name) {
  if (StringSetting* s = find_string(name)) return *s;
  if (find_int(name)) {
    throw TypeError("config option " + std::string(name) + " takes an integer, not a string");
  }
  for (Flag& f : g_flags) {
    if (f.name == name) {
      throw TypeError("config option " + std::string(name) + " takes a bool, not a string");
    }
  }
  throw ValueError("Unrecognized config option: " + std::string(name));
}
}  // namespace

void update(std::string_view name, std::string_view value) {
  StringSetting& s = find_string_setting(name);
  std::string checked = checked_choice(s, value, "the value");
  std::lock_guard<std::mutex> lock(g_strings_mu);
  s.value = std::move(checked);
  if (s.name == "parax_implicit_reshard") {
    g_reshard_policy =
        int(std::find(s.choices.begin(), s.choices.end(), *s.value) - s.choices.begin());
  }
}

std::string read_string(std::string_view name) {
  StringSetting& s = find_string_setting(name);
  std::lock_guard<std::mutex> lock(g_strings_mu);
  return load(s);
}

unsigned long long epoch() { return g_epoch.load(); }

}  // namespace parax::config

namespace parax::detail {

ReshardPolicy implicit_reshard_policy() {
  int p = config::g_reshard_policy.load(std::memory_order_relaxed);
  if (p < 0) {
    const std::string v = config::read_string("parax_implicit_reshard");
    p = v == "error" ? 2 : v == "warn" ? 1 : 0;  // the choices' order
    int unread = -1;
    config::g_reshard_policy.compare_exchange_strong(unread, p);
  }
  return ReshardPolicy(p);
}

int freeze_num_cpu_devices() {
  std::lock_guard<std::mutex> lock(config::g_devices_mu);
  config::g_devices_frozen = true;
  if (config::g_requested_devices > 0) return config::g_requested_devices;
  if (int n = config::count_from_env()) return n;
  if (int n = config::count_from_xla_flags(); n > 0) return n;
  return 1;
}

bool x64_enabled() { return config::read("jax_enable_x64"); }

int64_t int_setting(IntSettingId id) { return config::load(config::g_ints[size_t(id)]); }

}  // namespace parax::detail
