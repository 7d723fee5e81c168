// kernels-ref against PyTorch (Debian's python3-torch, float64) on the same GPT-2, weights and
// batches: losses, every gradient of the first step and the weights after three AdamW steps,
// each within 1e-5 relative (||ours - torch|| / ||torch|| per tensor), on one rank and split
// over two tensor-parallel ranks.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

#include "ref_training_run.hpp"
#include "support/temp_dir.hpp"
#include "support/tensor_folder.hpp"

namespace ptdp::test {
namespace {

constexpr const char* kPython = "/usr/bin/python3";
constexpr int kSteps = 3;
constexpr int kMicrobatches = 2;

ModelSpec oracle_model() {
  ModelSpec m;
  m.layers = 2;
  m.hidden = 32;
  m.heads = 4;
  m.seq_len = 8;
  m.vocab = 61;
  m.padded_vocab = 62;  // one padding row, split over two ranks as well
  m.ffn_hidden = 128;
  m.micro_batch = 2;
  m.dropout = 0.0f;    // PyTorch cannot draw ptdp's masks
  m.seed = 5;
  return m;
}

AdamStep oracle_adam() {
  AdamStep a;
  a.lr = 1e-2f;
  a.beta1 = 0.9f;
  a.beta2 = 0.95f;
  // Far above the rounding noise in the key bias's gradient, which is zero in exact arithmetic
  // (see tensor_parallel_test.cpp); still far below every real gradient.
  a.eps = 1e-4f;
  a.weight_decay = 0.1f;
  a.grad_scale = 0.5f;
  return a;
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

class TorchOracle : public ::testing::TestWithParam<int> {
 protected:
  struct Reference {
    TensorMap initial;
    std::vector<std::vector<TokenBatch>> batches;
    TensorMap torch;  // loss, grad.<name>, weight.<name>
  };
  static inline std::optional<Reference> reference_;
  static inline std::string skip_reason_;

  static void SetUpTestSuite() {
    if (std::system((std::string(kPython) + " -c 'import torch, numpy' > /dev/null 2>&1").c_str()) != 0) {
      skip_reason_ = std::string(kPython) + " cannot import torch and numpy (Debian: apt install python3-torch)";
      return;
    }
    const ModelSpec m = oracle_model();
    Reference ref;
    ref.initial = make_initial_weights(global_parameters(m), 17);
    TensorFolderWriter in;
    for (const auto& [name, t] : ref.initial) in.add("weight." + name, t.shape, t.values);
    for (int step = 0; step < kSteps; ++step) {
      ref.batches.emplace_back();
      for (int j = 0; j < kMicrobatches; ++j) {
        TokenBatch b = make_token_batch(m, 23, step * kMicrobatches + j);
        const std::string key = std::to_string(step) + "." + std::to_string(j);
        in.add("tokens." + key, {m.seq_len, m.micro_batch}, b.tokens);
        in.add("targets." + key, {m.seq_len, m.micro_batch}, b.targets);
        ref.batches.back().push_back(std::move(b));
      }
    }
    const AdamStep a = oracle_adam();
    in.meta()["model"] = {{"layers", m.layers}, {"hidden", m.hidden}, {"heads", m.heads},
                          {"vocab", m.vocab}, {"layernorm_eps", m.layernorm_eps}};
    in.meta()["adam"] = {{"lr", a.lr}, {"beta1", a.beta1}, {"beta2", a.beta2}, {"eps", a.eps},
                         {"weight_decay", a.weight_decay}, {"grad_scale", a.grad_scale}};
    in.meta()["steps"] = kSteps;
    in.meta()["microbatches"] = kMicrobatches;

    TempDir dir("ptdp-torch-oracle");
    in.write(dir.path() / "in");
    auto quoted = [](const std::filesystem::path& p) { return std::string(1, '\'').append(p.string()).append(1, '\''); };
    const std::string command = std::string(kPython) + " " +
                                quoted(PTDP_TEST_DATA_DIR "/torch_gpt2_reference.py") + " " +
                                quoted(dir.path() / "in") + " " + quoted(dir.path() / "out") + " > " +
                                quoted(dir.path() / "log") + " 2>&1";
    if (std::system(command.c_str()) != 0)
      FAIL() << "the PyTorch reference failed:\n" << read_text(dir.path() / "log");
    ref.torch = read_tensor_folder(dir.path() / "out");
    reference_ = std::move(ref);
  }

  void SetUp() override {
    if (!skip_reason_.empty()) GTEST_SKIP() << skip_reason_;
    ASSERT_TRUE(reference_.has_value()) << "the PyTorch reference did not run";
  }
};

TEST_P(TorchOracle, LossGradientsAndAdamStepsMatch) {
  const Reference& ref = *reference_;
  TrainingPlan plan;
  plan.tp = GetParam();
  plan.null_communicator_for_tp1 = true;
  plan.adam = oracle_adam();
  plan.batches = ref.batches;
  const TrainingResult ours = train(oracle_model(), ref.initial, plan);

  std::vector<float> losses;
  for (const auto& step : ours.losses) losses.insert(losses.end(), step.begin(), step.end());
  EXPECT_LT(relative_error(losses, ref.torch.at("loss").values), 1e-5);
  EXPECT_GT(ref.torch.at("loss").values[0], 1.0f);  // a real loss, not a degenerate one

  ASSERT_EQ(ours.first_grads.size(), ref.initial.size());
  for (const auto& [name, grad] : ours.first_grads) {
    const HostTensor& want = ref.torch.at("grad." + name);
    ASSERT_EQ(grad.shape, want.shape) << name;
    EXPECT_LT(relative_error(grad.values, want.values), 1e-5) << "gradient of " << name;
  }
  for (const auto& [name, weight] : ours.final_weights) {
    const HostTensor& want = ref.torch.at("weight." + name);
    EXPECT_LT(relative_error(weight.values, want.values), 1e-5) << "weights of " << name;
    // The steps moved the weights well beyond the tolerance, so the comparison has teeth.
    EXPECT_GT(relative_error(ref.initial.at(name).values, want.values), 1e-3) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(KernelsRef, TorchOracle, ::testing::Values(1, 2),
                         [](const auto& info) { return "tp" + std::to_string(info.param); });

}  // namespace
}  // namespace ptdp::test
