#include "base/trace_events.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "parax/errors.h"
#include "parax/profiler.h"

namespace parax::base::trace {

namespace detail {
std::atomic<bool> g_on{false};
}

namespace {

constexpr int kDeviceTrackBase = 100000;  // device tracks sort after the threads'

struct Event {
  std::string name;
  std::string cat;
  int64_t ts = 0, dur = 0;
  int track = 0;
  std::string args;
};

// One thread's events: only its thread appends, stop_trace reads them all.
struct ThreadEvents {
  std::mutex mu;
  std::vector<Event> events;
};

struct Recorder {
  std::mutex mu;  // guards everything below
  std::vector<std::shared_ptr<ThreadEvents>> threads;
  std::string path;
  uint64_t generation = 0;  // bumped by each start, so threads drop a stale buffer
  int pid = 0;
  bool exit_hook = false;
  // The wall clock at the steady clock's zero, fixed when a trace starts.
  int64_t offset_us = 0;
};

Recorder& recorder() {
  static auto* r = new Recorder;  // never destroyed: threads may record during exit
  return *r;
}

std::atomic<int> g_next_thread_track{1};
thread_local int t_track = 0;
thread_local std::shared_ptr<ThreadEvents> t_events;
thread_local uint64_t t_generation = ~uint64_t(0);

ThreadEvents& my_events() {
  Recorder& r = recorder();
  std::lock_guard<std::mutex> lock(r.mu);
  if (!t_events || t_generation != r.generation) {
    t_events = std::make_shared<ThreadEvents>();
    t_generation = r.generation;
    r.threads.push_back(t_events);
  }
  return *t_events;
}

int64_t steady_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void write_at_exit() {
  if (!on()) return;
  try {
    const std::string path = profiler::stop_trace();
    std::fprintf(stderr, "parax: trace written to %s\n", path.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "parax: could not write the trace: %s\n", e.what());
  }
}

void write_json(std::ostream& os, const std::vector<Event>& events, int pid) {
  std::set<int> tracks;
  for (const Event& e : events) tracks.insert(e.track);
  os << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  os << "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": " << pid
     << ", \"tid\": 0, \"args\": {\"name\": \"process " << pid << "\"}},\n";
  os << "{\"ph\": \"M\", \"name\": \"process_sort_index\", \"pid\": " << pid
     << ", \"tid\": 0, \"args\": {\"sort_index\": " << pid << "}}";
  for (int t : tracks) {
    const std::string name = t >= kDeviceTrackBase ? "CPU " + std::to_string(t - kDeviceTrackBase)
                                                   : "thread " + std::to_string(t);
    os << ",\n{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": " << pid << ", \"tid\": " << t
       << ", \"args\": {\"name\": " << json_string(name) << "}}";
    os << ",\n{\"ph\": \"M\", \"name\": \"thread_sort_index\", \"pid\": " << pid
       << ", \"tid\": " << t << ", \"args\": {\"sort_index\": " << t << "}}";
  }
  for (const Event& e : events) {
    os << ",\n{\"ph\": \"X\", \"name\": " << json_string(e.name)
       << ", \"cat\": " << json_string(e.cat) << ", \"pid\": " << pid << ", \"tid\": " << e.track
       << ", \"ts\": " << e.ts << ", \"dur\": " << e.dur;
    if (!e.args.empty()) os << ", \"args\": {" << e.args << "}";
    os << "}";
  }
  os << "\n]}\n";
}

// PARAX_TRACE=path traces the whole run.
const bool g_from_env = [] {
  if (const char* path = std::getenv("PARAX_TRACE"); path && *path) profiler::start_trace(path);
  return true;
}();

}  // namespace

int64_t now_us() { return steady_us() + recorder().offset_us; }

int device_track(int id) { return kDeviceTrackBase + id; }

int thread_track() {
  if (t_track == 0) t_track = g_next_thread_track.fetch_add(1);
  return t_track;
}

void complete(std::string_view name, std::string_view cat, int64_t start_us, int64_t dur_us,
              int track, std::string args) {
  if (!on()) return;
  ThreadEvents& mine = my_events();
  std::lock_guard<std::mutex> lock(mine.mu);
  mine.events.push_back(
      Event{std::string(name), std::string(cat), start_us, dur_us, track, std::move(args)});
}

void set_process(int index) {
  Recorder& r = recorder();
  std::lock_guard<std::mutex> lock(r.mu);
  r.pid = index;
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace parax::base::trace

namespace parax::profiler {

using namespace base::trace;

void start_trace(const std::string& path) {
  Recorder& r = recorder();
  std::lock_guard<std::mutex> lock(r.mu);
  base::trace::detail::g_on = false;
  r.threads.clear();
  ++r.generation;
  r.path = path;
  r.offset_us = std::chrono::duration_cast<std::chrono::microseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count() -
                steady_us();
  if (!r.exit_hook) {
    r.exit_hook = true;
    std::atexit(write_at_exit);
  }
  base::trace::detail::g_on = true;
}

std::string stop_trace() {
  Recorder& r = recorder();
  std::vector<Event> events;
  std::string path;
  int pid = 0;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    if (!base::trace::detail::g_on.exchange(false)) return "";
    for (const auto& t : r.threads) {
      std::lock_guard<std::mutex> tl(t->mu);
      for (Event& e : t->events) events.push_back(std::move(e));
    }
    r.threads.clear();
    ++r.generation;
    path = r.path;
    pid = r.pid;
  }
  std::ofstream os(path);
  if (!os) throw RuntimeError("profiler: cannot write the trace to '" + path + "'");
  write_json(os, events, pid);
  os.close();
  if (!os) throw RuntimeError("profiler: writing the trace to '" + path + "' failed");
  return path;
}

void discard_trace() {
  Recorder& r = recorder();
  std::vector<std::shared_ptr<ThreadEvents>> dropped;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    base::trace::detail::g_on = false;
    dropped.swap(r.threads);
    ++r.generation;
  }
}

bool is_tracing() { return on(); }

TraceAnnotation::TraceAnnotation(std::string name) : name_(std::move(name)) {
  if (on()) start_us_ = now_us();
}

TraceAnnotation::~TraceAnnotation() {
  if (start_us_ >= 0) complete(name_, "user", start_us_, now_us() - start_us_, thread_track());
}

}  // namespace parax::profiler
