// The key-value service behind a "host:port" coordinator address, as JAX's coordination
// service: process 0 hosts it, every process (0 included) is a client, and Gloo's rendezvous
// uses it through its Store interface. Built on ZeroMQ (request/reply), no raw sockets.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gloo/rendezvous/store.h>
#include <zmq.hpp>

namespace parax::runtime {

// Raised by ZmqStore when the service does not answer or a key does not appear in time.
class StoreTimeout : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Serves set/get requests on `endpoint` ("tcp://ip:port") from a thread until destroyed.
class ZmqStoreServer {
 public:
  // Throws DistributedError when the address cannot be bound.
  ZmqStoreServer(zmq::context_t& zmq, const std::string& endpoint);
  ~ZmqStoreServer();

 private:
  void serve();
  zmq::socket_t socket_;
  std::map<std::string, std::vector<char>> values_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// A client of ZmqStoreServer. Not thread-safe (the engine serializes its calls).
class ZmqStore : public gloo::rendezvous::Store {
 public:
  ZmqStore(zmq::context_t& zmq, std::string endpoint, std::chrono::milliseconds timeout);
  void set(const std::string& key, const std::vector<char>& data) override;
  // Waits up to the store's timeout for the key, then returns its value.
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

 private:
  using Clock = std::chrono::steady_clock;
  // Sends one request and returns the reply's frames; StoreTimeout at `deadline`.
  std::vector<zmq::message_t> request(std::vector<zmq::message_t> frames,
                                      Clock::time_point deadline);
  // Returns the value, or false when the key is not set yet.
  bool try_get(const std::string& key, std::vector<char>* out, Clock::time_point deadline);
  void reconnect();

  zmq::context_t& zmq_;
  std::string endpoint_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<zmq::socket_t> socket_;
};

}  // namespace parax::runtime
