#pragma once
// Communicator: collectives and point-to-point transfers among the ranks of one group.
//
// Semantics every implementation keeps (the conformance suite checks them):
// - Collectives are called by every rank of the group in the same order.
// - On host memory a call returns when its buffers may be reused. On CUDA memory the call is
//   enqueued on the stream given to bind_stream() and completes in stream order.
// - send/recv between group_start() and group_end() are posted together, so a rank may send to
//   and receive from its neighbours in one group without deadlock. Outside a group each call is
//   its own group. Messages between one pair of ranks with the same tag arrive in order.
// - A failure (peer gone, timeout, abort) throws ptdp::Error naming the rank, the peer or group,
//   and the operation; it never hangs past the configured timeout.
//
// Device placement is the core's. For every rank it picks one device (local rank → GPU, several
// ranks per GPU when launch.ranks_per_gpu > 1) and hands that same device to both plugins, in
// this order, before either touches it:
//   1. create the communicator and the kernels plugin (constructors touch no device);
//   2. Communicator::init(CommInit{..., device}): a CUDA communicator makes `device` current on
//      the calling thread before its first CUDA call;
//   3. split the world into the parallel groups;
//   4. LayerKernels::bind(KernelsBinding{..., device_index = device.index, tp = the TP group});
//   5. bind_stream(kernels.stream()) on the world and on every group, so that transfers and
//      collectives of device memory are ordered with the kernels that produce and consume it.
// With more than one data-parallel replica the core then makes a second instance of the plugin
// for the gradient reduction and calls init() (key prefix "reduction-lane"), split() and
// bind_stream(kernels.side_stream()) on a thread of its own, which makes every later call on it;
// with more than one pipeline stage on host memory, another for the pipeline transfers (key
// prefix "transfer-lane", split into the pipeline group). Instances of one plugin work in one
// process at once, each from one thread.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ptdp/rendezvous.hpp"
#include "ptdp/tensor.hpp"

namespace ptdp {

enum class ReduceOp : uint32_t { Sum, Max, Min };

// What a communicator promises beyond the common contract, as bits of capabilities(). The core's
// pairing rules and the conformance suite read these, never a plugin's name.
enum class CommCapability : uint32_t {
  MatchesTags = 1u << 0,    // send/recv match by tag; without it, in posting order only (NCCL)
  NamesDeadPeer = 1u << 1,  // a collective that fails because a rank died names that rank
  SharesDevice = 1u << 2,   // several ranks may use one GPU (NCCL refuses a duplicate GPU)
};
inline uint32_t capability_bit(CommCapability c) { return static_cast<uint32_t>(c); }

struct CommInit {
  int rank = 0;                 // this process in the world group
  int size = 1;                 // world size
  Rendezvous* store = nullptr;  // shared by every rank; outlives init()
  std::string key_prefix;       // namespace for this communicator's keys in the store
  double timeout_s = 60.0;      // how long any blocking wait may last before it fails
  Device device;                // the device this rank computes on (the kernels plugin gets the
                                // same one); Host for CPU ranks
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  // Collective over the whole world: connects to every rank through the rendezvous.
  virtual void init(const CommInit& init) = 0;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Human-readable name of this group for error messages ("world", "tp[pp=0,dp=1]", ...).
  virtual std::string name() const = 0;
  // Bit set of memory_bit(MemoryKind) this communicator can move.
  virtual uint32_t memory_kinds() const = 0;
  // Bit set of capability_bit(CommCapability) this communicator keeps.
  virtual uint32_t capabilities() const = 0;

  // Collective over this communicator: ranks passing the same color form a new group, ordered
  // by key (ties by current rank). The result is named `name` in messages.
  virtual std::shared_ptr<Communicator> split(int color, int key, const std::string& name) = 0;

  // For CUDA communicators: the stream (cudaStream_t) to enqueue on. Host ones ignore it.
  virtual void bind_stream(void* stream) = 0;

  virtual void all_reduce(Tensor buffer, ReduceOp op) = 0;                  // in place
  // in = size*out; in place when output is this rank's block of input
  virtual void reduce_scatter(const Tensor& input, Tensor output, ReduceOp op) = 0;
  // out = size*in, rank order; in place when input is this rank's block of output
  virtual void all_gather(const Tensor& input, Tensor output) = 0;
  virtual void broadcast(Tensor buffer, int root) = 0;

  virtual void group_start() = 0;
  virtual void group_end() = 0;
  virtual void send(const Tensor& buffer, int peer, int tag) = 0;
  virtual void recv(Tensor buffer, int peer, int tag) = 0;

  virtual void barrier() = 0;
  // Tears the communicator down so that every pending and later call fails promptly; used when
  // another part of the job failed. Safe to call from another thread.
  virtual void abort(const std::string& reason) = 0;
};

}  // namespace ptdp
