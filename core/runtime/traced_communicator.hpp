#pragma once
// A communicator that records each collective it runs as a span of the rank's timeline
// ("tp all-reduce", "tp reduce-scatter", "tp all-gather"), so that the trace shows the
// collectives the kernels plugin runs over the tensor-parallel group, which the core does not
// call itself. Every call goes to the wrapped group unchanged; with no timeline attached (before
// the trainer makes one, or while it does not record) nothing is added.
#include <memory>
#include <string>

#include <ptdp/communicator.hpp>

#include "runtime/timeline_recorder.hpp"

namespace ptdp {

class TracedCommunicator final : public Communicator {
 public:
  // label: what the spans are prefixed with ("tp").
  TracedCommunicator(std::shared_ptr<Communicator> group, std::string label)
      : group_(std::move(group)), label_(std::move(label)) {}
  void trace_to(TimelineRecorder* timeline) { timeline_ = timeline; }

  void init(const CommInit& init) override { group_->init(init); }
  int rank() const override { return group_->rank(); }
  int size() const override { return group_->size(); }
  std::string name() const override { return group_->name(); }
  uint32_t memory_kinds() const override { return group_->memory_kinds(); }
  uint32_t capabilities() const override { return group_->capabilities(); }
  std::shared_ptr<Communicator> split(int color, int key, const std::string& name) override {
    return group_->split(color, key, name);
  }
  void bind_stream(void* stream) override { group_->bind_stream(stream); }

  void all_reduce(Tensor buffer, ReduceOp op) override {
    traced("all-reduce", [&] { group_->all_reduce(buffer, op); });
  }
  void reduce_scatter(const Tensor& input, Tensor output, ReduceOp op) override {
    traced("reduce-scatter", [&] { group_->reduce_scatter(input, output, op); });
  }
  void all_gather(const Tensor& input, Tensor output) override {
    traced("all-gather", [&] { group_->all_gather(input, output); });
  }
  void broadcast(Tensor buffer, int root) override {
    traced("broadcast", [&] { group_->broadcast(buffer, root); });
  }

  void group_start() override { group_->group_start(); }
  void group_end() override { group_->group_end(); }
  void send(const Tensor& buffer, int peer, int tag) override { group_->send(buffer, peer, tag); }
  void recv(Tensor buffer, int peer, int tag) override { group_->recv(buffer, peer, tag); }
  void barrier() override { group_->barrier(); }
  void abort(const std::string& reason) override { group_->abort(reason); }

 private:
  void traced(const char* op, const std::function<void()>& fn) {
    if (timeline_)
      timeline_->span(label_ + " " + op, "collective", fn);
    else
      fn();
  }

  std::shared_ptr<Communicator> group_;
  std::string label_;
  TimelineRecorder* timeline_ = nullptr;
};

}  // namespace ptdp
