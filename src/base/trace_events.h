// The recorder behind parax/profiler.h: events in Chrome's trace-event form, kept per
// thread while a trace is on and written as one JSON file when it stops. Every layer
// records through here (the executor its kernels and collectives, jit its tracing, the
// compiler's callers their compiles, the runtime its transfers, checkpointing its I/O);
// with no trace on, a recording site costs one relaxed atomic load.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

namespace parax::base::trace {

namespace detail {
extern std::atomic<bool> g_on;
}

// True while a trace is recording.
inline bool on() { return detail::g_on.load(std::memory_order_relaxed); }

// Microseconds on the trace's clock (wall-clock time, so that processes' files line up).
int64_t now_us();

// The track of device `id`, and of the calling thread.
int device_track(int id);
int thread_track();

// Records a span [start_us, start_us + dur_us) named `name` of category `cat` on `track`;
// `args` is a JSON object's members without braces (`"bytes": 64, "shape": "f32[8]"`) or "".
void complete(std::string_view name, std::string_view cat, int64_t start_us, int64_t dur_us,
              int track, std::string args = "");

// Sets the pid written for this process's events (its process index) and its name.
void set_process(int index);

// Returns `s` as a JSON string literal.
std::string json_string(std::string_view s);

// Records, when a trace is on, a span from construction to destruction on the calling
// thread's track, named `what`, or `what` + " " + `of`. With no trace on it builds nothing:
// give it args through add_args when active().
class Span {
 public:
  explicit Span(std::string_view cat, std::string_view what, std::string_view of = {})
      : active_(on()) {
    if (!active_) return;
    start_ = now_us();
    cat_ = cat;
    name_ = what;
    if (!of.empty()) {
      name_ += ' ';
      name_ += of;
    }
  }
  ~Span() {
    if (active_) complete(name_, cat_, start_, now_us() - start_, thread_track(), std::move(args_));
  }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;
  bool active() const { return active_; }
  // Adds members to the span's args (JSON, as complete takes them).
  void add_args(std::string_view more) {
    if (!active_) return;
    if (!args_.empty()) args_ += ", ";
    args_ += more;
  }

 private:
  bool active_;
  int64_t start_ = 0;
  std::string_view cat_;
  std::string name_, args_;
};

}  // namespace parax::base::trace
