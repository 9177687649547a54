// parax-run: starts N local processes of one program for parax's Gloo backend, hands each the
// environment distributed::initialize() reads, prefixes every output line with the process
// index, and ends the job as a whole: a failing process brings the others down after a grace
// period, so a job never lingers. POSIX only; it does not link parax.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

constexpr char kUsage[] =
    "Usage: parax-run -n N [--devices-per-process D] [--grace-seconds S] [--trace DIR] [--]\n"
    "                 prog [args...]\n"
    "\n"
    "Starts N processes of prog on this host for parax's Gloo backend. Each one gets\n"
    "PARAX_COORDINATOR_ADDRESS=file://<fresh temporary directory>, PARAX_NUM_PROCESSES=N,\n"
    "PARAX_PROCESS_ID=0..N-1 and, with --devices-per-process, PARAX_NUM_CPU_DEVICES=D.\n"
    "Every output line is prefixed with its process index ('[0] '). Process 0 reads stdin.\n"
    "\n"
    "  -n N                       number of processes (required)\n"
    "  --devices-per-process D    virtual CPU devices per process\n"
    "  --grace-seconds S          after a process fails, how long the others may keep\n"
    "                             running before SIGTERM (SIGKILL 2 s later); default 5\n"
    "  --trace DIR                each process writes a trace (PARAX_TRACE=DIR/trace.I.json);\n"
    "                             when all have exited they are merged into DIR/trace.json,\n"
    "                             one timeline for Perfetto with a pid per process\n"
    "  -h, --help                 print this help\n"
    "\n"
    "Exits 0 if every process does; otherwise with the first failing process's exit code\n"
    "(128+signal if a signal ended it), or 127 if prog cannot be found.\n";

// Processes still alive this long after SIGTERM get SIGKILL.
constexpr auto kKillDelay = std::chrono::seconds(2);
// After every process has exited, output still held by their leftovers is read this long.
constexpr auto kDrainTime = std::chrono::seconds(1);
// A line longer than this is cut, so a program that never writes '\n' cannot exhaust memory.
constexpr size_t kMaxLine = 1 << 20;

struct Options {
  int num_processes = 0;
  int devices_per_process = 0;  // 0: PARAX_NUM_CPU_DEVICES stays as inherited
  double grace_seconds = 5;
  std::string trace_dir;  // "": no traces
  bool help = false;
  std::vector<std::string> command;
};

struct UsageError {
  std::string message;
};

long parse_number(std::string_view option, const std::string& text, long min_value) {
  char* end = nullptr;
  errno = 0;
  long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || value < min_value || value > 1 << 20) {
    throw UsageError{std::string(option) + " takes an integer >= " + std::to_string(min_value) +
                     ", got '" + text + "'"};
  }
  return value;
}

double parse_seconds(std::string_view option, const std::string& text) {
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(value) || value < 0) {
    throw UsageError{std::string(option) + " takes a number of seconds >= 0, got '" + text + "'"};
  }
  return value;
}

// Splits "--name=value" and "-nVALUE" forms; otherwise the value is the next argument.
std::optional<std::string> option_value(std::string_view arg, std::string_view name, int& i,
                                        int argc, char** argv) {
  if (arg == name) {
    if (i + 1 >= argc) throw UsageError{std::string(name) + " needs a value"};
    return std::string(argv[++i]);
  }
  bool is_long = name.size() > 2;
  if (arg.starts_with(name) && (!is_long || arg[name.size()] == '=')) {
    return std::string(arg.substr(name.size() + (is_long ? 1 : 0)));
  }
  return std::nullopt;
}

// Options end at "--" or at the first argument that is not one: the rest is the program's.
Options parse_options(int argc, char** argv) {
  Options options;
  int i = 1;
  for (; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg == "-h" || arg == "--help") {
      options.help = true;
      return options;
    }
    if (auto v = option_value(arg, "-n", i, argc, argv)) {
      options.num_processes = parse_number("-n", *v, 1);
    } else if (auto v = option_value(arg, "--devices-per-process", i, argc, argv)) {
      options.devices_per_process = parse_number("--devices-per-process", *v, 1);
    } else if (auto v = option_value(arg, "--grace-seconds", i, argc, argv)) {
      options.grace_seconds = parse_seconds("--grace-seconds", *v);
    } else if (auto v = option_value(arg, "--trace", i, argc, argv)) {
      if (v->empty()) throw UsageError{"--trace needs a directory"};
      options.trace_dir = *v;
    } else if (arg.starts_with("-") && arg.size() > 1) {
      throw UsageError{"unknown option '" + std::string(arg) + "'"};
    } else {
      break;
    }
  }
  options.command.assign(argv + i, argv + argc);
  if (options.num_processes == 0) throw UsageError{"-n N is required"};
  if (options.command.empty()) throw UsageError{"no program given"};
  return options;
}

std::string trace_file(const Options& options, int index) {
  return options.trace_dir + "/trace." + std::to_string(index) + ".json";
}

void write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // a closed reader (parax-run | head) loses the rest, nothing more
    data.remove_prefix(n);
  }
}

void report(const std::string& message) { write_all(2, "parax-run: " + message + "\n"); }

// Finds prog as execvp would, so a missing program is reported once, before anything starts.
std::optional<std::string> resolve_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string_view dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  while (true) {
    size_t colon = dirs.find(':');
    std::string dir(dirs.substr(0, colon));
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    struct stat st;
    if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    if (colon == std::string_view::npos) return std::nullopt;
    dirs.remove_prefix(colon + 1);
  }
}

// Signals arrive through a pipe so that the poll loop handles them in order with output.
int signal_pipe[2] = {-1, -1};

void on_signal(int sig) {
  int saved = errno;
  char byte = static_cast<char>(sig);
  (void)!write(signal_pipe[1], &byte, 1);
  errno = saved;
}

void install_signal_handlers() {
  if (pipe2(signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) throw std::runtime_error("pipe failed");
  struct sigaction action {};
  action.sa_handler = on_signal;
  action.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigemptyset(&action.sa_mask);
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &action, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    return "was killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
  }
  return "exited with code " + std::to_string(WEXITSTATUS(status));
}

int exit_code(int status) {
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

// One of a child's output pipes: complete lines go out prefixed, the rest waits.
struct Stream {
  int fd = -1;
  int target = 1;
  std::string pending;

  void emit(const std::string& prefix, bool at_eof) {
    std::string out;
    size_t start = 0;
    for (size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
      out.append(prefix).append(pending, start, nl + 1 - start);
    }
    pending.erase(0, start);
    if (!pending.empty() && (at_eof || pending.size() > kMaxLine)) {
      out.append(prefix).append(pending).append("\n");
      pending.clear();
    }
    // One write per batch: parax-run is the only writer, so lines never interleave.
    write_all(target, out);
  }

  void read_some(const std::string& prefix) {
    char buffer[65536];
    ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
    if (n > 0) {
      pending.append(buffer, n);
      emit(prefix, false);
      return;
    }
    emit(prefix, true);
    close(fd);
    fd = -1;
  }
};

struct Process {
  pid_t pid = -1;  // also its process group, which its own children join
  bool running = false;
  std::string prefix;
  Stream out, err;
};

class Job {
 public:
  Job(Options options, std::string program, std::string store_dir)
      : options_(std::move(options)),
        program_(std::move(program)),
        store_dir_(std::move(store_dir)) {}

  int run() {
    start_all();
    while (true) {
      handle_signals();
      reap();
      if (finished()) break;
      fire_deadlines();
      wait_for_events();
      read_output();
    }
    for (Process& p : processes_) {
      for (Stream* s : {&p.out, &p.err}) {
        if (s->fd >= 0) s->emit(p.prefix, true);
      }
    }
    return first_failure_ ? exit_code(*first_failure_) : 0;
  }

 private:
  std::vector<std::string> environment(int index) const {
    auto ours = [](std::string_view entry) {
      for (std::string_view key : {"PARAX_COORDINATOR_ADDRESS=", "PARAX_NUM_PROCESSES=",
                                   "PARAX_PROCESS_ID=", "PARAX_NUM_CPU_DEVICES=", "PARAX_TRACE="}) {
        if (entry.starts_with(key)) return true;
      }
      return false;
    };
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) {
      bool keep_devices = options_.devices_per_process == 0 &&
                          std::string_view(*e).starts_with("PARAX_NUM_CPU_DEVICES=");
      if (!ours(*e) || keep_devices) env.emplace_back(*e);
    }
    env.push_back("PARAX_COORDINATOR_ADDRESS=file://" + store_dir_);
    env.push_back("PARAX_NUM_PROCESSES=" + std::to_string(options_.num_processes));
    env.push_back("PARAX_PROCESS_ID=" + std::to_string(index));
    if (options_.devices_per_process > 0) {
      env.push_back("PARAX_NUM_CPU_DEVICES=" + std::to_string(options_.devices_per_process));
    }
    if (!options_.trace_dir.empty()) env.push_back("PARAX_TRACE=" + trace_file(options_, index));
    return env;
  }

  static std::vector<char*> pointers(std::vector<std::string>& strings) {
    std::vector<char*> result;
    for (std::string& s : strings) result.push_back(s.data());
    result.push_back(nullptr);
    return result;
  }

  void start_all() {
    sigset_t all, previous;
    sigfillset(&all);
    // Blocked across fork so that no signal runs our handler in a child before exec.
    sigprocmask(SIG_BLOCK, &all, &previous);
    processes_.resize(options_.num_processes);
    try {
      for (int i = 0; i < options_.num_processes; ++i) start(i, previous);
    } catch (...) {
      signal_all(SIGKILL);  // half a job is no job
      sigprocmask(SIG_SETMASK, &previous, nullptr);
      throw;
    }
    sigprocmask(SIG_SETMASK, &previous, nullptr);
  }

  void start(int index, const sigset_t& mask) {
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
      throw std::runtime_error(std::string("cannot create pipes: ") + strerror(errno));
    }
    std::vector<std::string> env = environment(index);
    std::vector<std::string> args = options_.command;
    std::vector<char*> envp = pointers(env), argv = pointers(args);
    int stdin_fd = index == 0 ? 0 : open("/dev/null", O_RDONLY | O_CLOEXEC);
    pid_t pid = fork();
    if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + strerror(errno));
    if (pid == 0) exec_child(stdin_fd, out[1], err[1], argv, envp, mask);
    setpgid(pid, pid);  // also here, so that no signal can miss a child that has not run yet
    if (stdin_fd > 0) close(stdin_fd);
    close(out[1]);
    close(err[1]);
    Process& p = processes_[index];
    p.pid = pid;
    p.running = true;
    p.prefix = "[" + std::to_string(index) + "] ";
    p.out = {out[0], 1, {}};
    p.err = {err[0], 2, {}};
  }

  [[noreturn]] void exec_child(int stdin_fd, int out_fd, int err_fd, std::vector<char*>& argv,
                               std::vector<char*>& envp, const sigset_t& mask) {
    for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGPIPE}) signal(sig, SIG_DFL);
    sigprocmask(SIG_SETMASK, &mask, nullptr);
    // Its own process group: the job's signals reach whatever the program starts, too.
    setpgid(0, 0);
    dup2(stdin_fd, 0);
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    execve(program_.c_str(), argv.data(), envp.data());
    std::string message = "parax-run: cannot execute " + program_ + ": " + strerror(errno) + "\n";
    write_all(2, message);
    _exit(127);
  }

  void signal_all(int sig) {
    for (const Process& p : processes_) {
      if (p.pid > 0) kill(-p.pid, sig);
    }
  }

  void handle_signals() {
    char signals[64];
    ssize_t n;
    while ((n = read(signal_pipe[0], signals, sizeof signals)) > 0) {
      for (ssize_t k = 0; k < n; ++k) {
        if (signals[k] == SIGCHLD) continue;
        signal_all(signals[k]);
        interrupted_ = true;
        // Programs that ignore the forwarded signal still end.
        kill_at_ = std::min(kill_at_.value_or(Clock::time_point::max()), Clock::now() + grace());
      }
    }
  }

  Clock::duration grace() const {
    return std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(options_.grace_seconds));
  }

  void reap() {
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
      for (int i = 0; i < static_cast<int>(processes_.size()); ++i) {
        if (processes_[i].pid == pid) exited(i, status);
      }
    }
    bool all_exited = std::none_of(processes_.begin(), processes_.end(),
                                   [](const Process& p) { return p.running; });
    if (all_exited && !drain_until_) {
      // Whatever the programs left behind in their groups ends with the job.
      signal_all(SIGKILL);
      drain_until_ = Clock::now() + kDrainTime;
    }
  }

  void exited(int index, int status) {
    processes_[index].running = false;
    bool failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    if (!failed || first_failure_) return;
    first_failure_ = status;
    bool others_running = std::any_of(processes_.begin(), processes_.end(),
                                      [](const Process& p) { return p.running; });
    std::string message = "process " + std::to_string(index) + " " + describe_exit(status);
    if (others_running && !interrupted_) {
      char grace[32];
      std::snprintf(grace, sizeof grace, "%g", options_.grace_seconds);
      message += "; ending the other processes in " + std::string(grace) + " s";
    }
    report(message);
    term_at_ = Clock::now() + grace();
  }

  void fire_deadlines() {
    auto now = Clock::now();
    if (term_at_ && now >= *term_at_) {
      term_at_.reset();
      signal_all(SIGTERM);
      kill_at_ = std::min(kill_at_.value_or(Clock::time_point::max()), now + kKillDelay);
    }
    if (kill_at_ && now >= *kill_at_) {
      kill_at_.reset();
      signal_all(SIGKILL);
    }
  }

  bool finished() const {
    bool open = std::any_of(processes_.begin(), processes_.end(),
                            [](const Process& p) { return p.out.fd >= 0 || p.err.fd >= 0; });
    return drain_until_ && (!open || Clock::now() >= *drain_until_);
  }

  void wait_for_events() {
    std::vector<pollfd> fds{{signal_pipe[0], POLLIN, 0}};
    for (const Process& p : processes_) {
      for (const Stream* s : {&p.out, &p.err}) {
        if (s->fd >= 0) fds.push_back({s->fd, POLLIN, 0});
      }
    }
    auto next = Clock::time_point::max();
    for (const auto& deadline : {term_at_, kill_at_, drain_until_}) {
      if (deadline) next = std::min(next, *deadline);
    }
    int timeout = -1;
    if (next != Clock::time_point::max()) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(next - Clock::now());
      timeout = static_cast<int>(std::max<long>(0, left.count()));
    }
    poll(fds.data(), fds.size(), timeout);
    ready_.clear();
    for (const pollfd& f : fds) {
      if (f.revents != 0) ready_.push_back(f.fd);
    }
  }

  void read_output() {
    for (Process& p : processes_) {
      for (Stream* s : {&p.out, &p.err}) {
        if (s->fd >= 0 && std::find(ready_.begin(), ready_.end(), s->fd) != ready_.end()) {
          s->read_some(p.prefix);
        }
      }
    }
  }

  Options options_;
  std::string program_;
  std::string store_dir_;
  std::vector<Process> processes_;
  std::vector<int> ready_;
  std::optional<int> first_failure_;
  bool interrupted_ = false;  // a signal to parax-run was forwarded to the job
  std::optional<Clock::time_point> term_at_, kill_at_, drain_until_;
};

// A fresh private directory for Gloo's file store, so concurrent jobs never meet.
std::string make_store_dir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/parax-run.XXXXXX";
  if (!mkdtemp(pattern.data())) {
    throw std::runtime_error("cannot create a temporary directory from " + pattern + ": " +
                             strerror(errno));
  }
  return pattern;
}

// Merges the processes' traces into DIR/trace.json: their events in one array (each
// process's carry its process index as their pid). A process that wrote none is reported.
void merge_traces(const Options& options) {
  nlohmann::json events = nlohmann::json::array();
  for (int i = 0; i < options.num_processes; ++i) {
    std::ifstream in(trace_file(options, i));
    if (!in) {
      report("no trace from process " + std::to_string(i));
      continue;
    }
    try {
      const nlohmann::json one = nlohmann::json::parse(in);
      for (const auto& e : one.at("traceEvents")) events.push_back(e);
    } catch (const std::exception& e) {
      report("the trace of process " + std::to_string(i) + " is unreadable: " + e.what());
    }
  }
  const std::string path = options.trace_dir + "/trace.json";
  std::ofstream out(path);
  out << nlohmann::json{{"displayTimeUnit", "ms"}, {"traceEvents", events}}.dump() << "\n";
  if (!out) report("cannot write " + path);
}

int launch(const Options& options) {
  std::optional<std::string> program = resolve_program(options.command[0]);
  if (!program || access(program->c_str(), F_OK) != 0) {
    report(options.command[0] + ": program not found");
    return 127;
  }
  if (access(program->c_str(), X_OK) != 0) {
    report(options.command[0] + ": not executable");
    return 126;
  }
  install_signal_handlers();
  if (!options.trace_dir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(options.trace_dir, error);
    if (error) {
      report("cannot create " + options.trace_dir + ": " + error.message());
      return 1;
    }
  }
  std::string dir = make_store_dir();
  int code;
  try {
    code = Job(options, *program, dir).run();
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
    throw;
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  if (!options.trace_dir.empty()) merge_traces(options);
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  try {
    options = parse_options(argc, argv);
  } catch (const UsageError& e) {
    write_all(2, "parax-run: " + e.message + "\n" + kUsage);
    return 2;
  }
  if (options.help) {
    write_all(1, kUsage);
    return 0;
  }
  try {
    return launch(options);
  } catch (const std::exception& e) {
    report(e.what());
    return 1;
  }
}
