// The Gloo engine: TCP pairs between processes, one gloo context per process group (made
// when the group first communicates, all members meeting through the store), Gloo's own
// algorithms with parax's reductions, and unbound buffers for point-to-point exchange.
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/redis_store.h>
#include <gloo/transport/tcp/address.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>
#include <gloo/types.h>
#include <netdb.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <numeric>
#include <thread>
#include <vector>

#include "base/dtype_dispatch.h"
#include "parax/errors.h"
#include "runtime/engines.h"
#include "runtime/reduce.h"
#include "runtime/zmq_store.h"

namespace parax::runtime {
namespace {

using Clock = std::chrono::steady_clock;
using gloo::rendezvous::Store;

// Gloo's rendezvous calls get() without a timeout, which Gloo's stores bound by 30 s;
// this bounds every wait by parax's timeout instead and keeps each run's keys apart.
class TimedStore : public Store {
 public:
  TimedStore(std::unique_ptr<Store> inner, std::chrono::milliseconds timeout)
      : inner_(std::move(inner)), timeout_(timeout) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    inner_->set(key, data);
  }
  std::vector<char> get(const std::string& key) override {
    inner_->wait({key}, timeout_);
    return inner_->get(key);
  }
  void wait(const std::vector<std::string>& keys) override { inner_->wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    inner_->wait(keys, timeout);
  }

 private:
  std::unique_ptr<Store> inner_;
  std::chrono::milliseconds timeout_;
};

struct HostPort {
  std::string host;
  int port = 0;
};

HostPort parse_host_port(std::string_view address, std::string_view text) {
  const size_t colon = text.rfind(':');
  const std::string digits(colon == std::string_view::npos ? "" : text.substr(colon + 1));
  char* end = nullptr;
  const long port = digits.empty() ? -1 : std::strtol(digits.c_str(), &end, 10);
  if (colon == 0 || port <= 0 || port > 65535 || *end != '\0') {
    throw ValueError("[distributed.initialize] coordinator_address '" + std::string(address) +
                     "' is not host:port, redis://host:port or file:///dir");
  }
  std::string host(text.substr(0, colon));
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  return {host, int(port)};
}

// The numeric address of `host` for ZeroMQ's bind (which takes interfaces and addresses).
std::string numeric_host(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || !res) return host;
  char buf[NI_MAXHOST];
  const bool ok =
      getnameinfo(res->ai_addr, res->ai_addrlen, buf, sizeof buf, nullptr, 0, NI_NUMERICHOST) == 0;
  freeaddrinfo(res);
  return ok ? std::string(buf) : host;
}

bool is_loopback(const std::string& host) {
  return host == "localhost" || host.starts_with("127.") || host == "::1";
}

std::string this_hostname() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

// The TCP device on the interface that reaches the coordinator: loopback when it is on
// this host's loopback, else this host's name; PARAX_GLOO_INTERFACE names one instead.
std::shared_ptr<gloo::transport::Device> make_device(const std::string& coordinator_host) {
  gloo::transport::tcp::attr attr;
  if (const char* iface = std::getenv("PARAX_GLOO_INTERFACE"); iface && *iface) {
    attr.iface = iface;
    return gloo::transport::tcp::CreateDevice(attr);
  }
  attr.hostname = is_loopback(coordinator_host) ? "127.0.0.1" : this_hostname();
  try {
    return gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception&) {
    attr.hostname = "127.0.0.1";  // a host name that does not resolve: one host only
    return gloo::transport::tcp::CreateDevice(attr);
  }
}

std::string group_key(std::span<const int> group) {
  std::string key = "group";
  for (int p : group) key += "/" + std::to_string(p);
  return key;
}

std::string join_list(std::span<const int> ps) {
  std::string s;
  for (int p : ps) s += (s.empty() ? "" : ", ") + std::to_string(p);
  return s;
}

bool mentions(const std::string& text, const char* what) { return text.find(what) != text.npos; }

// Slots of exchange's messages: their own prefix beside Gloo's algorithms' (0x01-0x08).
constexpr uint8_t kExchangeSlotPrefix = 0x40;

class GlooEngine final : public Engine {
 public:
  GlooEngine(const std::string& address, int num_processes, int process_id);
  ~GlooEngine() override;

  std::string_view name() const override { return "gloo"; }
  int process_index() const override { return pid_; }
  int process_count() const override { return n_; }

  void all_gather(std::span<const int> group, const void* in, size_t bytes, void* out,
                  std::string_view what) override;
  void all_reduce(std::span<const int> group, void* data, int64_t count, DType dtype, ReduceOp op,
                  std::string_view what) override;
  void broadcast(std::span<const int> group, int root, void* data, size_t bytes,
                 std::string_view what) override;
  void exchange(std::span<const Message> sends, std::span<const Message> recvs,
                std::string_view what) override;
  void barrier(std::span<const int> group, std::string_view what) override;

 private:
  void open_store(const std::string& address);
  void meet(const std::string& address);
  std::shared_ptr<gloo::Context> context(std::span<const int> group);
  std::shared_ptr<gloo::Context> connect(std::span<const int> group, const std::string& prefix);
  // Runs `f` under the engine's lock, turning Gloo's failures into DistributedError (and
  // poisoning the engine: Gloo closes the pairs of a context that failed). `peer` names the
  // process `f` was waiting for when it knows.
  template <class F>
  void run(std::string_view what, std::span<const int> group, F&& f);

  int n_;
  int pid_;
  std::string coordinator_host_;
  std::mutex mu_;
  std::string poisoned_;
  int peer_ = -1;
  // Gloo names a failed pair by its peer's address: which process listens there.
  std::map<std::string, int> process_at_;
  // Destroyed bottom-up: contexts before the device, the store before the ZeroMQ context.
  std::unique_ptr<zmq::context_t> zmq_;
  std::unique_ptr<ZmqStoreServer> server_;
  std::unique_ptr<TimedStore> store_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::Context> world_;
  std::map<std::vector<int>, std::shared_ptr<gloo::Context>> groups_;
};

GlooEngine::GlooEngine(const std::string& address, int num_processes, int process_id)
    : n_(num_processes), pid_(process_id) {
  // A peer that dies leaves a socket whose next write raises SIGPIPE; Gloo reports it as an
  // error instead when the signal is ignored (as Python, and so JAX, ignore it).
  struct sigaction old {};
  if (sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) {
    std::signal(SIGPIPE, SIG_IGN);
  }
  open_store(address);
  try {
    meet(address);
  } catch (const DistributedError&) {
    // Process 0 serves the coordinator: it stays up a moment so the others read the
    // same reason (a mismatched count) instead of a coordinator that vanished.
    if (server_) std::this_thread::sleep_for(std::chrono::seconds(1));
    throw;
  }
  std::vector<int> all(size_t(n_), 0);
  std::iota(all.begin(), all.end(), 0);
  run("distributed.initialize", {}, [&] {
    device_ = make_device(coordinator_host_);
    world_ = connect(all, "world");
  });
}

GlooEngine::~GlooEngine() {
  groups_.clear();
  world_.reset();
  device_.reset();
  store_.reset();
  server_.reset();
}

void GlooEngine::open_store(const std::string& address) {
  const auto timeout = distributed_timeout();
  std::unique_ptr<Store> inner;
  if (address.starts_with("file://")) {
    const std::string dir = address.substr(7);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    inner = std::make_unique<gloo::rendezvous::FileStore>(dir);
  } else if (address.starts_with("redis://")) {
    const HostPort hp = parse_host_port(address, std::string_view(address).substr(8));
    coordinator_host_ = hp.host;
    try {
      inner = std::make_unique<gloo::rendezvous::RedisStore>(hp.host, hp.port);
    } catch (const std::exception& e) {
      throw DistributedError("[distributed.initialize] cannot reach the Redis server at " +
                             address + " (this is process " + std::to_string(pid_) +
                             "): " + e.what());
    }
  } else {
    const HostPort hp = parse_host_port(address, address);
    coordinator_host_ = hp.host;
    zmq_ = std::make_unique<zmq::context_t>();
    if (pid_ == 0) {
      server_ = std::make_unique<ZmqStoreServer>(
          *zmq_, "tcp://" + numeric_host(hp.host) + ":" + std::to_string(hp.port));
    }
    inner = std::make_unique<ZmqStore>(*zmq_, "tcp://" + address, timeout);
  }
  store_ = std::make_unique<TimedStore>(std::move(inner), timeout);
}

// Every process announces itself with its process count before any TCP pair is made, so
// a missing process or a mismatched count is named instead of surfacing as a Gloo timeout.
void GlooEngine::meet(const std::string& address) {
  const std::string mine = std::to_string(n_);
  const Clock::time_point deadline = Clock::now() + distributed_timeout();
  try {
    store_->set("arrive/" + std::to_string(pid_), std::vector<char>(mine.begin(), mine.end()));
  } catch (const std::exception& e) {
    throw DistributedError("[distributed.initialize] process " + std::to_string(pid_) +
                           " cannot reach the coordinator at " + address + ": " + e.what());
  }
  std::vector<int> missing;
  for (int p = 0; p < n_; ++p) {
    const std::string key = "arrive/" + std::to_string(p);
    const auto left =
        std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()),
                 std::chrono::milliseconds(10));
    std::vector<char> v;
    try {
      store_->wait({key}, left);
      v = store_->get(key);
    } catch (const std::exception& e) {
      if (mentions(e.what(), "did not answer")) {
        throw DistributedError("[distributed.initialize] the coordinator at " + address +
                               " (served by process 0) stopped answering (this is process " +
                               std::to_string(pid_) + " of " + std::to_string(n_) + ")");
      }
      missing.push_back(p);
      continue;
    }
    const std::string theirs(v.begin(), v.end());
    if (theirs != mine) {
      throw DistributedError("[distributed.initialize] process " + std::to_string(p) +
                             " was started with num_processes=" + theirs + " but process " +
                             std::to_string(pid_) + " with num_processes=" + mine +
                             "; every process must be given the same count");
    }
  }
  if (!missing.empty()) {
    const auto secs = std::chrono::duration_cast<std::chrono::seconds>(distributed_timeout());
    throw DistributedError("[distributed.initialize] process" +
                           std::string(missing.size() > 1 ? "es " : " ") + join_list(missing) +
                           " did not arrive at the coordinator " + address + " within " +
                           std::to_string(secs.count()) + " s (this is process " +
                           std::to_string(pid_) + " of " + std::to_string(n_) + ")");
  }
}

std::shared_ptr<gloo::Context> GlooEngine::context(std::span<const int> group) {
  if (int(group.size()) == n_) return world_;
  std::vector<int> key(group.begin(), group.end());
  if (auto it = groups_.find(key); it != groups_.end()) return it->second;
  return groups_[key] = connect(group, group_key(group));
}

// Every member publishes, under its rank, the addresses its pairs listen on for the other
// members (in rank order, itself left out): the one meant for this process names the peer.
std::shared_ptr<gloo::Context> GlooEngine::connect(std::span<const int> group,
                                                   const std::string& prefix) {
  const int rank = int(std::find(group.begin(), group.end(), pid_) - group.begin());
  const int size = int(group.size());
  auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, size);
  ctx->setTimeout(distributed_timeout());
  gloo::rendezvous::PrefixStore store(prefix, *store_);
  ctx->connectFullMesh(store, device_);
  for (int i = 0; i < size; ++i) {
    if (i == rank) continue;
    const std::vector<char> all = store.get(std::to_string(i));
    const size_t each = all.size() / size_t(size - 1);
    const size_t slot = size_t(rank > i ? rank - 1 : rank);
    const auto first = all.begin() + std::ptrdiff_t(slot * each);
    const gloo::transport::tcp::Address address(
        std::vector<char>(first, first + std::ptrdiff_t(each)));
    process_at_[address.str()] = group[size_t(i)];
  }
  return ctx;
}

template <class F>
void GlooEngine::run(std::string_view what, std::span<const int> group, F&& f) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!poisoned_.empty()) {
    throw DistributedError(
        "[" + std::string(what) +
        "] the distributed engine failed earlier and cannot be used: " + poisoned_);
  }
  peer_ = -1;
  try {
    f();
    return;
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    const std::string detail = e.what();
    const bool left = mentions(detail, "closed by peer") || mentions(detail, "reset by peer") ||
                      mentions(detail, "Broken pipe") || mentions(detail, "Connection refused");
    std::vector<int> all;
    if (group.empty()) {
      for (int p = 0; p < n_; ++p) all.push_back(p);
      group = all;
    }
    for (const auto& [address, process] : process_at_) {
      if (peer_ < 0 && mentions(detail, address.c_str())) peer_ = process;
    }
    poisoned_ = missing_peer_message(what, group, peer_, pid_, n_, left) + "; gloo: " + detail;
    throw DistributedError(poisoned_);
  }
}

void GlooEngine::all_gather(std::span<const int> group, const void* in, size_t bytes, void* out,
                            std::string_view what) {
  if (group.size() == 1 || bytes == 0) {
    if (bytes) std::memmove(out, in, bytes);
    return;
  }
  run(what, group, [&] {
    gloo::AllgatherOptions opts(context(group));
    const size_t me = size_t(std::find(group.begin(), group.end(), pid_) - group.begin());
    if (in != static_cast<char*>(out) + me * bytes) {  // else in place: no input buffer
      opts.setInput(static_cast<uint8_t*>(const_cast<void*>(in)), bytes);
    }
    opts.setOutput(static_cast<uint8_t*>(out), bytes * group.size());
    opts.setTimeout(distributed_timeout());
    gloo::allgather(opts);
  });
}

void GlooEngine::all_reduce(std::span<const int> group, void* data, int64_t count, DType dtype,
                            ReduceOp op, std::string_view what) {
  if (group.size() == 1 || count == 0) return;
  run(what, group, [&] {
    gloo::AllreduceOptions opts(context(group));
    dispatch_dtype(dtype, [&](auto tag) {
      using T = decltype(tag);
      opts.setOutput(static_cast<T*>(data), size_t(count));
    });
    opts.setReduceFunction([dtype, op](void* o, const void* a, const void* b, size_t n) {
      combine(o, a, b, int64_t(n), dtype, op);
    });
    opts.setTimeout(distributed_timeout());
    gloo::allreduce(opts);
  });
}

void GlooEngine::broadcast(std::span<const int> group, int root, void* data, size_t bytes,
                           std::string_view what) {
  if (group.size() == 1 || bytes == 0) return;
  run(what, group, [&] {
    gloo::BroadcastOptions opts(context(group));
    opts.setOutput(static_cast<uint8_t*>(data), bytes);
    opts.setRoot(int(std::find(group.begin(), group.end(), root) - group.begin()));
    opts.setTimeout(distributed_timeout());
    gloo::broadcast(opts);
  });
}

void GlooEngine::barrier(std::span<const int> group, std::string_view what) {
  if (group.size() == 1) return;
  run(what, group, [&] {
    gloo::BarrierOptions opts(context(group));
    opts.setTimeout(distributed_timeout());
    gloo::barrier(opts);
  });
}

// The k-th message between two processes in one call has slot k on both sides (each pair's
// stream keeps successive calls in order).
void GlooEngine::exchange(std::span<const Message> sends, std::span<const Message> recvs,
                          std::string_view what) {
  std::vector<int> peers;
  for (const Message& m : sends) peers.push_back(m.peer);
  for (const Message& m : recvs) peers.push_back(m.peer);
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  run(what, peers, [&] {
    std::vector<const Message*> self_sends;
    std::vector<std::pair<int, std::unique_ptr<gloo::transport::UnboundBuffer>>> posted_sends,
        posted_recvs;
    std::map<int, uint32_t> sent, received;
    for (const Message& m : sends) {
      if (m.peer == pid_) {
        self_sends.push_back(&m);
        continue;
      }
      auto buf = world_->createUnboundBuffer(m.data, m.bytes);
      buf->send(m.peer, gloo::Slot::build(kExchangeSlotPrefix, sent[m.peer]++));
      posted_sends.emplace_back(m.peer, std::move(buf));
    }
    size_t next_self = 0;
    for (const Message& m : recvs) {
      if (m.peer == pid_) {
        PARAX_CHECK(next_self < self_sends.size() && self_sends[next_self]->bytes == m.bytes,
                    "exchange: a receive from this process matches no send to it");
        std::memcpy(m.data, self_sends[next_self++]->data, m.bytes);
        continue;
      }
      auto buf = world_->createUnboundBuffer(m.data, m.bytes);
      buf->recv(m.peer, gloo::Slot::build(kExchangeSlotPrefix, received[m.peer]++));
      posted_recvs.emplace_back(m.peer, std::move(buf));
    }
    const Clock::time_point deadline = Clock::now() + distributed_timeout();
    auto left = [&] {
      return std::max(
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()),
          std::chrono::milliseconds(1));
    };
    for (auto& [peer, buf] : posted_recvs) {
      peer_ = peer;
      buf->waitRecv(left());
    }
    for (auto& [peer, buf] : posted_sends) {
      peer_ = peer;
      buf->waitSend(left());
    }
  });
}

}  // namespace

std::unique_ptr<Engine> start_gloo(const std::string& coordinator_address, int num_processes,
                                   int process_id) {
  return std::make_unique<GlooEngine>(coordinator_address, num_processes, process_id);
}

}  // namespace parax::runtime
