// Traces for Perfetto and chrome://tracing (Chrome's trace-event JSON): what each device ran
// (every equation or fusion, with its shapes and bytes), each collective (its group, bytes
// and time), tracing and compiling, host<->device transfers and checkpoint I/O, on a track
// per device and per thread. `PARAX_TRACE=path` traces a whole run. Across processes each
// writes its own file with its process index as the pid; `parax-run --trace DIR` runs them
// with PARAX_TRACE set and merges the files into DIR/trace.json, one timeline.
#pragma once

#include <string>

namespace parax::profiler {

// Starts recording (ending any trace in progress without writing it). The file is written
// by stop_trace(), or at exit when still recording.
void start_trace(const std::string& path);
// Stops recording and writes the trace to the path start_trace was given; returns that
// path ("" when nothing was being recorded). Throws RuntimeError when it cannot write.
std::string stop_trace();
// Stops recording and drops what was recorded: nothing is written.
void discard_trace();
bool is_tracing();

// Marks a span of the caller's own on its thread's track (jax.profiler.TraceAnnotation).
class TraceAnnotation {
 public:
  explicit TraceAnnotation(std::string name);
  ~TraceAnnotation();
  TraceAnnotation(const TraceAnnotation&) = delete;
  TraceAnnotation& operator=(const TraceAnnotation&) = delete;

 private:
  std::string name_;
  long long start_us_ = -1;
};

}  // namespace parax::profiler
