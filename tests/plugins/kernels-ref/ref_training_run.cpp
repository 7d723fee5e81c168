#include "ref_training_run.hpp"

#include <cmath>

#include "ref_kernels.hpp"
#include "support/gpt_stack.hpp"
#include "support/thread_group.hpp"

namespace ptdp::test {

std::vector<ParamRef> global_parameters(const ModelSpec& model) {
  kref::RefKernels kernels;
  kernels.bind(KernelsBinding{model, 0, 1, nullptr, 0});
  GptStack stack(kernels, model);
  return stack.parameters();
}

double relative_error(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0.0, ref = 0.0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    ref += double(b[i]) * b[i];
  }
  if (a.size() != b.size()) return INFINITY;
  return ref == 0.0 ? std::sqrt(diff) : std::sqrt(diff / ref);
}

TrainingResult train(const ModelSpec& model, const TensorMap& initial, const TrainingPlan& plan) {
  const int tp = plan.tp;
  ThreadGroup group(tp, "tp", 60.0);
  std::vector<std::vector<std::vector<float>>> losses(tp);
  std::vector<std::vector<LocalTensor>> grads(tp), weights(tp);

  run_ranks(group, [&](int rank) {
    kref::RefKernels kernels;
    Communicator* comm = tp == 1 && plan.null_communicator_for_tp1 ? nullptr : group.rank(rank);
    kernels.bind(KernelsBinding{model, rank, tp, comm, 0});
    GptStack stack(kernels, model);
    stack.load(initial);
    for (size_t step = 0; step < plan.batches.size(); ++step) {
      const auto& batches = plan.batches[step];
      const int m = static_cast<int>(batches.size());
      auto micro = [&](int j) {
        return MicroBatch{j, static_cast<int64_t>(step), int64_t{j} * model.micro_batch};
      };
      std::vector<float> step_losses(m);
      stack.zero_grads();
      for (int j = 0; j < m; ++j) {
        step_losses[j] = stack.forward(micro(j), batches[j]);
        stack.backward(micro(j), 1.0f / m);
      }
      losses[rank].push_back(step_losses);
      if (step == 0) grads[rank] = stack.grads();
      AdamStep adam = plan.adam;
      adam.step = static_cast<int64_t>(step) + 1;
      stack.adam_step(adam);
    }
    weights[rank] = stack.masters();
  });

  for (int r = 1; r < tp; ++r)
    if (losses[r] != losses[0]) throw Error("tensor-parallel ranks report different losses");
  return TrainingResult{losses[0], assemble(grads), assemble(weights)};
}

}  // namespace ptdp::test
