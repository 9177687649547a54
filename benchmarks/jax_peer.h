// A JAX:CPU process that times the same workloads as a plain benchmark, in the same run and
// interleaved with it, so that every "JAX / parax" ratio comes from one host at one time.
//
// The peer is a script under tools/ started with --serve (tools/jax_peer.py holds its side
// of the protocol). It prints `info KEY VALUE` lines (the JAX version among them), compiles
// and warms up each workload, then prints `ready`; or it prints `unavailable WHY` and exits
// when JAX is not importable. Each request line names a workload; the reply is the seconds
// of one run of it, timed by the script around the call and block_until_ready, so that
// neither process's start-up nor the pipe is in the time.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

extern char** environ;

namespace plain_bench {

class JaxPeer {
 public:
  // Starts `python script --serve args...`; an empty `python` starts nothing.
  JaxPeer(const std::string& python, const std::string& script,
          const std::vector<std::string>& args = {}) {
    if (python.empty()) {
      why_ = "no Python given (--jax_python=)";
      return;
    }
    // A peer that dies must not kill the benchmark through a write to its stdin.
    signal(SIGPIPE, SIG_IGN);
    int to_child[2], from_child[2];
    if (pipe2(to_child, O_CLOEXEC) != 0 || pipe2(from_child, O_CLOEXEC) != 0) {
      why_ = "cannot make pipes";
      return;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, to_child[0], 0);
    posix_spawn_file_actions_adddup2(&actions, from_child[1], 1);
    std::vector<std::string> argv_s = {python, script, "--serve"};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int err = posix_spawnp(&pid_, python.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(to_child[0]);
    close(from_child[1]);
    to_ = fdopen(to_child[1], "w");
    from_ = fdopen(from_child[0], "r");
    if (err != 0) {
      pid_ = -1;
      why_ = "cannot run " + python;
      return;
    }
    while (true) {
      const std::string line = read_line();
      if (line.empty()) {
        why_ = python + " " + script + " exited before it was ready";
        return;
      }
      const std::string word = line.substr(0, line.find(' '));
      const std::string rest = line.size() > word.size() ? line.substr(word.size() + 1) : "";
      if (word == "ready") break;
      if (word == "unavailable") {
        why_ = rest;
        return;
      }
      if (word == "info") {
        const size_t space = rest.find(' ');
        info_[rest.substr(0, space)] = space == std::string::npos ? "" : rest.substr(space + 1);
      }
    }
    ready_ = true;
  }

  JaxPeer(const JaxPeer&) = delete;
  JaxPeer& operator=(const JaxPeer&) = delete;

  ~JaxPeer() {
    if (to_) fclose(to_);  // the script ends at the end of its input
    if (from_) fclose(from_);
    if (pid_ > 0) waitpid(pid_, nullptr, 0);
  }

  bool ready() const { return ready_; }
  // Why the peer is not ready (the script's own words when JAX did not import).
  const std::string& why() const { return why_; }
  // What the script said about itself: jax_version, jaxlib_version, devices, threads.
  std::string info(const std::string& key) const {
    const auto it = info_.find(key);
    return it == info_.end() ? "?" : it->second;
  }

  // Runs `workload` once in the peer and returns its time in seconds.
  double seconds(const std::string& workload) {
    if (!ready_) throw std::runtime_error("JaxPeer: not ready: " + why_);
    std::fprintf(to_, "%s\n", workload.c_str());
    std::fflush(to_);
    const std::string line = read_line();
    try {
      return std::stod(line);
    } catch (const std::exception&) {
      throw std::runtime_error("JaxPeer: " + workload + ": " +
                               (line.empty() ? "the script exited" : line));
    }
  }

 private:
  std::string read_line() {
    std::string line;
    if (!from_) return line;
    for (int c; (c = std::fgetc(from_)) != EOF && c != '\n';) line += char(c);
    return line;
  }

  pid_t pid_ = -1;
  std::FILE* to_ = nullptr;
  std::FILE* from_ = nullptr;
  bool ready_ = false;
  std::string why_;
  std::map<std::string, std::string> info_;
};

}  // namespace plain_bench
