// The MPI engine: one communicator per process group, non-blocking calls polled against
// the distributed timeout (a stalled peer gives DistributedError, not a hang), MPI's own
// reductions where they are exact and parax's combine() where MPI's differ (NaN in max and
// min, half floats, bool).
#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "base/check.h"
#include "parax/errors.h"
#include "runtime/engines.h"
#include "runtime/reduce.h"

namespace parax::runtime {
// Set once this process has started MPI (read by the leak checker's hook below).
std::atomic<bool> g_mpi_started{false};
}  // namespace parax::runtime

namespace parax::runtime {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kNumOps = 6;
constexpr int kExchangeTag = 1;
constexpr int kGroupHelloTag = 2;
constexpr int kCreateGroupTag = 3;

template <int kIndex>
void user_reduce(void* in, void* inout, int* len, MPI_Datatype*) {
  combine(inout, in, inout, *len, DType(kIndex / kNumOps), ReduceOp(kIndex % kNumOps));
}

template <size_t... I>
constexpr std::array<MPI_User_function*, sizeof...(I)> user_reduce_table(
    std::index_sequence<I...>) {
  return {&user_reduce<int(I)>...};
}
// One MPI user function per (dtype, op): MPI passes a user function no context of its own.
constexpr auto kUserReduce = user_reduce_table(std::make_index_sequence<kNumDTypes * kNumOps>());

// The MPI type and op that compute `op` exactly as combine() does, if MPI has them.
std::pair<MPI_Datatype, MPI_Op> native(DType dtype, ReduceOp op) {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  switch (dtype) {
    case DType::int8:
      type = MPI_INT8_T;
      break;
    case DType::int16:
      type = MPI_INT16_T;
      break;
    case DType::int32:
      type = MPI_INT32_T;
      break;
    case DType::int64:
      type = MPI_INT64_T;
      break;
    case DType::uint8:
      type = MPI_UINT8_T;
      break;
    case DType::uint16:
      type = MPI_UINT16_T;
      break;
    case DType::uint32:
      type = MPI_UINT32_T;
      break;
    case DType::uint64:
      type = MPI_UINT64_T;
      break;
    case DType::float32:
      type = MPI_FLOAT;
      break;
    case DType::float64:
      type = MPI_DOUBLE;
      break;
    default:
      return {MPI_DATATYPE_NULL, MPI_OP_NULL};  // bool and halves: combine()
  }
  const bool floating = dtype == DType::float32 || dtype == DType::float64;
  switch (op) {
    case ReduceOp::sum:
      return {type, MPI_SUM};
    case ReduceOp::prod:
      return {type, MPI_PROD};
    case ReduceOp::max:
      return {type, floating ? MPI_OP_NULL : MPI_MAX};  // NaN: combine()
    case ReduceOp::min:
      return {type, floating ? MPI_OP_NULL : MPI_MIN};
    case ReduceOp::and_:
      return {type, floating ? MPI_OP_NULL : MPI_BAND};
    case ReduceOp::or_:
      return {type, floating ? MPI_OP_NULL : MPI_BOR};
  }
  return {MPI_DATATYPE_NULL, MPI_OP_NULL};
}

// An element of `itemsize` bytes that MPI moves whole (user ops see element counts).
MPI_Datatype element_type(int itemsize) {
  switch (itemsize) {
    case 1:
      return MPI_UINT8_T;
    case 2:
      return MPI_UINT16_T;
    case 4:
      return MPI_UINT32_T;
    default:
      return MPI_UINT64_T;
  }
}

int checked_count(size_t n, std::string_view what) {
  if (n > size_t(std::numeric_limits<int>::max())) {
    throw NotImplementedError("[" + std::string(what) + "] the MPI engine moves at most 2^31-1 " +
                              "elements per call; got " + std::to_string(n));
  }
  return int(n);
}

class MpiEngine final : public Engine {
 public:
  MpiEngine();
  ~MpiEngine() override;

  std::string_view name() const override { return "mpi"; }
  int process_index() const override { return rank_; }
  int process_count() const override { return size_; }

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
  MPI_Comm comm(std::span<const int> group, std::string_view what);
  MPI_Op user_op(DType dtype, ReduceOp op);
  void check(int rc, std::string_view what);
  void throw_if_poisoned(std::string_view what);
  // Polls `requests` until all complete; at the timeout, poisons the engine and raises
  // DistributedError naming peers[i] for the first incomplete request (or the group).
  void wait(std::vector<MPI_Request>& requests, std::span<const int> peers,
            std::span<const int> group, std::string_view what);

  int rank_ = 0;
  int size_ = 1;
  bool owns_mpi_ = false;
  std::mutex mu_;  // MPI's requests and communicators are used one call at a time
  std::string poisoned_;
  MPI_Comm world_ = MPI_COMM_NULL;
  std::map<std::vector<int>, MPI_Comm> comms_;
  std::map<int, MPI_Op> ops_;
};

MpiEngine::MpiEngine() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized) {
    throw DistributedError(
        "[distributed.initialize] MPI was finalized (by an earlier shutdown or the program) "
        "and cannot be started again in this process");
  }
  int provided = MPI_THREAD_SINGLE;
  if (!initialized) {
    // Open MPI's default non-blocking all-reduce takes twice the blocking one's time on
    // large buffers between two processes; its ring matches it. (Ignored by other MPIs,
    // and by Open MPI when the user sets the parameter.)
    setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "1", /*overwrite=*/0);
    g_mpi_started = true;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    owns_mpi_ = true;
  } else {
    MPI_Query_thread(&provided);
  }
  // Whatever level MPI provides, mu_ serializes the engine's calls; a level below
  // "serialized" would also forbid calls from several threads one at a time.
  if (provided < MPI_THREAD_SERIALIZED) {
    throw DistributedError(
        "[distributed.initialize] MPI provides only thread level " + std::to_string(provided) +
        "; parax's runtime calls MPI from its worker threads and needs MPI_THREAD_SERIALIZED");
  }
  // A communicator of its own keeps parax's messages apart from the program's own MPI use.
  MPI_Comm_dup(MPI_COMM_WORLD, &world_);
  MPI_Comm_set_errhandler(world_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(world_, &rank_);
  MPI_Comm_size(world_, &size_);
}

MpiEngine::~MpiEngine() {
  // After a timeout, requests to a stalled peer are still pending: freeing or finalizing
  // could wait for it forever, so a failed engine leaves MPI as it is.
  if (!poisoned_.empty()) return;
  for (auto& [group, c] : comms_) MPI_Comm_free(&c);
  for (auto& [key, op] : ops_) MPI_Op_free(&op);
  MPI_Comm_free(&world_);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owns_mpi_ && !finalized) MPI_Finalize();
}

void MpiEngine::throw_if_poisoned(std::string_view what) {
  if (!poisoned_.empty()) {
    throw DistributedError(
        "[" + std::string(what) +
        "] the distributed engine failed earlier and cannot be used: " + poisoned_);
  }
}

void MpiEngine::check(int rc, std::string_view what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  poisoned_ = "[" + std::string(what) + "] MPI failed on process " + std::to_string(rank_) + ": " +
              std::string(text, size_t(len));
  throw DistributedError(poisoned_);
}

void MpiEngine::wait(std::vector<MPI_Request>& requests, std::span<const int> peers,
                     std::span<const int> group, std::string_view what) {
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline = start + distributed_timeout();
  for (;;) {
    int done = 0;
    check(MPI_Testall(int(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE), what);
    if (done) return;
    const Clock::time_point now = Clock::now();
    if (now >= deadline) break;
    // MPI progresses only inside MPI_Test: poll, but yield the core to the other processes
    // of an oversubscribed host, and back off once the wait is clearly long.
    if (now - start < std::chrono::seconds(2)) {
      sched_yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  int peer = -1;
  for (size_t i = 0; i < requests.size() && i < peers.size() && peer < 0; ++i) {
    int done = 0;
    MPI_Test(&requests[i], &done, MPI_STATUS_IGNORE);
    if (!done) peer = peers[i];
  }
  poisoned_ = missing_peer_message(what, group, peer, rank_, size_, false);
  throw DistributedError(poisoned_);
}

// MPI_Comm_create_group blocks until every member calls it, so the members first greet
// each other with polled messages: a member that never comes gives a timeout, not a hang.
MPI_Comm MpiEngine::comm(std::span<const int> group, std::string_view what) {
  if (int(group.size()) == size_) return world_;
  std::vector<int> key(group.begin(), group.end());
  if (auto it = comms_.find(key); it != comms_.end()) return it->second;
  std::vector<MPI_Request> requests;
  std::vector<int> peers;
  std::vector<char> hello(group.size() * 2);
  for (size_t i = 0; i < group.size(); ++i) {
    if (group[i] == rank_) continue;
    requests.emplace_back();
    peers.push_back(group[i]);
    check(MPI_Irecv(&hello[2 * i], 1, MPI_CHAR, group[i], kGroupHelloTag, world_, &requests.back()),
          what);
    requests.emplace_back();
    peers.push_back(group[i]);
    check(MPI_Isend(&hello[2 * i + 1], 1, MPI_CHAR, group[i], kGroupHelloTag, world_,
                    &requests.back()),
          what);
  }
  wait(requests, peers, group, what);
  MPI_Group world_group = MPI_GROUP_NULL, sub = MPI_GROUP_NULL;
  MPI_Comm_group(world_, &world_group);
  MPI_Group_incl(world_group, int(group.size()), group.data(), &sub);
  MPI_Comm c = MPI_COMM_NULL;
  check(MPI_Comm_create_group(world_, sub, kCreateGroupTag, &c), what);
  MPI_Group_free(&sub);
  MPI_Group_free(&world_group);
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  comms_[key] = c;
  return c;
}

MPI_Op MpiEngine::user_op(DType dtype, ReduceOp op) {
  const int index = int(dtype) * kNumOps + int(op);
  if (auto it = ops_.find(index); it != ops_.end()) return it->second;
  MPI_Op mpi_op = MPI_OP_NULL;
  MPI_Op_create(kUserReduce[size_t(index)], /*commute=*/1, &mpi_op);
  return ops_[index] = mpi_op;
}

void MpiEngine::all_gather(std::span<const int> group, const void* in, size_t bytes, void* out,
                           std::string_view what) {
  if (group.size() == 1 || bytes == 0) {
    if (bytes) std::memmove(out, in, bytes);
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  throw_if_poisoned(what);
  MPI_Comm c = comm(group, what);
  const int n = checked_count(bytes, what);
  // MPI forbids overlapping buffers except as MPI_IN_PLACE.
  const int me = int(std::find(group.begin(), group.end(), rank_) - group.begin());
  const void* send = in == static_cast<char*>(out) + size_t(me) * bytes ? MPI_IN_PLACE : in;
  std::vector<MPI_Request> requests(1);
  check(MPI_Iallgather(send, n, MPI_BYTE, out, n, MPI_BYTE, c, &requests[0]), what);
  wait(requests, {}, group, what);
}

void MpiEngine::all_reduce(std::span<const int> group, void* data, int64_t count, DType dtype,
                           ReduceOp op, std::string_view what) {
  if (group.size() == 1 || count == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  throw_if_poisoned(what);
  MPI_Comm c = comm(group, what);
  auto [type, mpi_op] = native(dtype, op);
  if (mpi_op == MPI_OP_NULL) {
    type = element_type(dtype_itemsize(dtype));
    mpi_op = user_op(dtype, op);
  }
  std::vector<MPI_Request> requests(1);
  check(MPI_Iallreduce(MPI_IN_PLACE, data, checked_count(size_t(count), what), type, mpi_op, c,
                       &requests[0]),
        what);
  wait(requests, {}, group, what);
}

void MpiEngine::broadcast(std::span<const int> group, int root, void* data, size_t bytes,
                          std::string_view what) {
  if (group.size() == 1 || bytes == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  throw_if_poisoned(what);
  MPI_Comm c = comm(group, what);
  const int root_rank = int(std::find(group.begin(), group.end(), root) - group.begin());
  std::vector<MPI_Request> requests(1);
  check(MPI_Ibcast(data, checked_count(bytes, what), MPI_BYTE, root_rank, c, &requests[0]), what);
  const int peers[] = {root};
  wait(requests, root == rank_ ? std::span<const int>() : std::span<const int>(peers), group, what);
}

void MpiEngine::barrier(std::span<const int> group, std::string_view what) {
  if (group.size() == 1) return;
  std::lock_guard<std::mutex> lock(mu_);
  throw_if_poisoned(what);
  MPI_Comm c = comm(group, what);
  std::vector<MPI_Request> requests(1);
  check(MPI_Ibarrier(c, &requests[0]), what);
  wait(requests, {}, group, what);
}

// MPI keeps messages between two processes with one tag in order, so successive calls and
// several messages to one peer in a call match up.
void MpiEngine::exchange(std::span<const Message> sends, std::span<const Message> recvs,
                         std::string_view what) {
  std::lock_guard<std::mutex> lock(mu_);
  throw_if_poisoned(what);
  std::vector<MPI_Request> requests;
  std::vector<int> peers;
  for (const Message& m : recvs) {
    requests.emplace_back();
    peers.push_back(m.peer);
    check(MPI_Irecv(m.data, checked_count(m.bytes, what), MPI_BYTE, m.peer, kExchangeTag, world_,
                    &requests.back()),
          what);
  }
  for (const Message& m : sends) {
    requests.emplace_back();
    peers.push_back(m.peer);
    check(MPI_Isend(m.data, checked_count(m.bytes, what), MPI_BYTE, m.peer, kExchangeTag, world_,
                    &requests.back()),
          what);
  }
  std::vector<int> group = peers;
  std::sort(group.begin(), group.end());
  group.erase(std::unique(group.begin(), group.end()), group.end());
  wait(requests, peers, group, what);
}

}  // namespace

std::unique_ptr<Engine> start_mpi() { return std::make_unique<MpiEngine>(); }

}  // namespace parax::runtime

#if defined(__SANITIZE_ADDRESS__)
// Open MPI keeps memory from MPI_Init for the life of the process and unloads the plugins
// that allocated it, so LeakSanitizer can neither name nor suppress it: a process that
// started MPI is not leak-checked at exit (memory errors still are; every other process
// is).
extern "C" int __lsan_is_turned_off() { return parax::runtime::g_mpi_started ? 1 : 0; }
#endif
