#include "runtime/zmq_store.h"

#include <zmq_addon.hpp>

#include "parax/errors.h"

namespace parax::runtime {
namespace {

zmq::message_t frame(std::string_view s) { return zmq::message_t(s.data(), s.size()); }

std::string text(const zmq::message_t& m) { return std::string(m.data<char>(), m.size()); }

}  // namespace

ZmqStoreServer::ZmqStoreServer(zmq::context_t& zmq, const std::string& endpoint)
    : socket_(zmq, zmq::socket_type::router) {
  socket_.set(zmq::sockopt::linger, 0);
  try {
    socket_.bind(endpoint);
  } catch (const zmq::error_t& e) {
    throw DistributedError("[distributed.initialize] process 0 cannot serve the coordinator at " +
                           endpoint + ": " + e.what());
  }
  thread_ = std::thread([this] { serve(); });
}

ZmqStoreServer::~ZmqStoreServer() {
  stop_ = true;
  thread_.join();
}

// Requests are [op, key] or [op, key, value] behind the router's [identity, empty] envelope;
// replies are [status] or [status, value]. Waiting is the clients' (they poll), so one
// thread serves everyone and a stalled client never blocks the others.
void ZmqStoreServer::serve() {
  zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
  while (!stop_) {
    if (zmq::poll(&item, 1, std::chrono::milliseconds(50)) == 0) continue;
    std::vector<zmq::message_t> msg;
    if (!zmq::recv_multipart(socket_, std::back_inserter(msg), zmq::recv_flags::dontwait)) continue;
    if (msg.size() < 4) continue;  // not a client of ours
    std::vector<zmq::message_t> reply;
    reply.push_back(std::move(msg[0]));
    reply.push_back(zmq::message_t());
    const std::string op = text(msg[2]);
    const std::string key = text(msg[3]);
    if (op == "set" && msg.size() == 5) {
      values_[key] = std::vector<char>(msg[4].data<char>(), msg[4].data<char>() + msg[4].size());
      reply.push_back(frame("ok"));
    } else if (auto it = values_.find(key); op == "get" && it != values_.end()) {
      reply.push_back(frame("ok"));
      reply.push_back(zmq::message_t(it->second.data(), it->second.size()));
    } else {
      reply.push_back(frame("missing"));
    }
    zmq::send_multipart(socket_, reply, zmq::send_flags::dontwait);
  }
}

ZmqStore::ZmqStore(zmq::context_t& zmq, std::string endpoint, std::chrono::milliseconds timeout)
    : zmq_(zmq), endpoint_(std::move(endpoint)), timeout_(timeout) {
  reconnect();
}

void ZmqStore::reconnect() {
  socket_ = std::make_unique<zmq::socket_t>(zmq_, zmq::socket_type::req);
  socket_->set(zmq::sockopt::linger, 0);
  socket_->connect(endpoint_);
}

std::vector<zmq::message_t> ZmqStore::request(std::vector<zmq::message_t> frames,
                                              Clock::time_point deadline) {
  // ZeroMQ queues the request until the server is up, so processes may start in any order.
  zmq::send_multipart(*socket_, frames);
  zmq::pollitem_t item{socket_->handle(), 0, ZMQ_POLLIN, 0};
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (zmq::poll(&item, 1, std::max(left, std::chrono::milliseconds(1))) == 0) {
    reconnect();  // a request socket without its reply accepts no further request
    throw StoreTimeout("the coordinator at " + endpoint_ + " did not answer");
  }
  std::vector<zmq::message_t> reply;
  (void)zmq::recv_multipart(*socket_, std::back_inserter(reply));
  return reply;
}

void ZmqStore::set(const std::string& key, const std::vector<char>& data) {
  std::vector<zmq::message_t> frames;
  frames.push_back(frame("set"));
  frames.push_back(frame(key));
  frames.push_back(zmq::message_t(data.data(), data.size()));
  request(std::move(frames), Clock::now() + timeout_);
}

bool ZmqStore::try_get(const std::string& key, std::vector<char>* out, Clock::time_point deadline) {
  std::vector<zmq::message_t> frames;
  frames.push_back(frame("get"));
  frames.push_back(frame(key));
  std::vector<zmq::message_t> reply = request(std::move(frames), deadline);
  if (reply.size() != 2 || text(reply[0]) != "ok") return false;
  if (out) out->assign(reply[1].data<char>(), reply[1].data<char>() + reply[1].size());
  return true;
}

std::vector<char> ZmqStore::get(const std::string& key) {
  std::vector<char> value;
  const Clock::time_point deadline = Clock::now() + timeout_;
  while (!try_get(key, &value, deadline)) {
    if (Clock::now() >= deadline) throw StoreTimeout("key " + key + " was not set in time");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return value;
}

void ZmqStore::wait(const std::vector<std::string>& keys,
                    const std::chrono::milliseconds& timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  for (const std::string& key : keys) {
    while (!try_get(key, nullptr, deadline)) {
      if (Clock::now() >= deadline) throw StoreTimeout("key " + key + " was not set in time");
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

}  // namespace parax::runtime
