// CheckpointManager over the file-system store: round trip, resharding between tensor-parallel
// sizes through ParamRefs, and the rule that every element is written exactly once.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <barrier>
#include <filesystem>
#include <limits>
#include <map>
#include <thread>

#include "checkpoint/checkpoint_manager.hpp"
#include "fs_checkpoint_store.hpp"
#include "support/host_memory_kernels.hpp"

namespace ptdp::test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

struct ParamSpec {
  std::string name;
  std::vector<int64_t> global_shape;
  int shard_dim;
};

// A two-stage model in miniature; with one stage everything sits on stage 0 and the head shares
// the embedding, with two the last stage holds its own copy of the word embedding.
std::vector<ParamSpec> stage_params(int stage, int stages) {
  std::vector<ParamSpec> first = {{"embedding.word", {16, 4}, 0},
                                  {"embedding.position", {5, 4}, -1},
                                  {"layers.0.attn.qkv.weight", {3, 4, 4}, 1},
                                  {"layers.0.attn.qkv.bias", {3, 4}, 1},
                                  {"layers.0.mlp.fc2.weight", {4, 16}, 1},
                                  {"layers.0.ln1.weight", {4}, -1}};
  std::vector<ParamSpec> last = {{"layers.1.attn.qkv.weight", {3, 4, 4}, 1},
                                 {"layers.1.ln1.weight", {4}, -1},
                                 {"head.ln.weight", {4}, -1}};
  if (stages == 1) {
    first.insert(first.end(), last.begin(), last.end());
    return first;
  }
  if (stage == 0) return first;
  last.push_back({"embedding.word", {16, 4}, 0});
  return last;
}

int64_t count_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// The global value of element i of a saved tensor: distinct per tensor and per element.
float global_value(const std::string& saved_name, int64_t i) {
  float base = 0;
  for (char c : saved_name) base = base * 0.5f + static_cast<float>(c);
  return base + 0.25f * static_cast<float>(i);
}

// Elements of `global` (row-major, global_shape) in the slab [offset, offset + local) of `dim`.
std::vector<float> slab(const std::string& saved_name, const std::vector<int64_t>& global_shape, int dim,
                        int64_t offset, const std::vector<int64_t>& local_shape) {
  std::vector<float> out;
  for (int64_t i = 0; i < count_of(local_shape); ++i) {
    int64_t rest = i, flat = 0, stride = 1;
    for (size_t d = local_shape.size(); d-- > 0;) {
      int64_t at = rest % local_shape[d] + (static_cast<int>(d) == dim ? offset : 0);
      flat += at * stride;
      rest /= local_shape[d];
      stride *= global_shape[d];
    }
    out.push_back(global_value(saved_name, flat));
  }
  return out;
}

// The tensors saved for a parameter, by the suffix of their checkpoint name.
std::vector<std::pair<std::string, const Tensor*>> saved_parts(const ParamRef& p) {
  return {{"", &p.master}, {".exp_avg", &p.exp_avg}, {".exp_avg_sq", &p.exp_avg_sq}};
}

std::vector<float> host_copy(const Tensor& t) {
  return std::vector<float>(t.as<float>(), t.as<float>() + t.numel());
}

// One rank's parameters, in host memory: the model's values, or zeros to load into.
struct RankParams {
  std::vector<OwnedTensor> storage;
  std::vector<ParamRef> params;

  RankParams(HostMemoryKernels& kernels, const std::vector<ParamSpec>& specs, int tp_size, int tp_rank,
             bool with_values) {
    for (const ParamSpec& spec : specs) {
      ParamRef p;
      p.name = spec.name;
      p.global_shape = spec.global_shape;
      p.shard_dim = spec.shard_dim;
      std::vector<int64_t> local = spec.global_shape;
      if (spec.shard_dim >= 0) {
        local[spec.shard_dim] /= tp_size;
        p.shard_offset = tp_rank * local[spec.shard_dim];
      }
      for (Tensor* t : {&p.master, &p.grad, &p.exp_avg, &p.exp_avg_sq}) {
        storage.push_back(kernels.allocate(local, DType::F32));
        *t = storage.back().view;
      }
      if (with_values) {
        for (const auto& [suffix, t] : saved_parts(p)) {
          std::vector<float> v = slab(spec.name + suffix, spec.global_shape, spec.shard_dim, p.shard_offset, local);
          kernels.copy_from_host(*t, v.data());
        }
      }
      params.push_back(p);
    }
  }
};

void expect_model_values(const std::vector<ParamRef>& params) {
  for (const ParamRef& p : params)
    for (const auto& [suffix, t] : saved_parts(p))
      EXPECT_EQ(host_copy(*t), slab(p.name + suffix, p.global_shape, p.shard_dim, p.shard_offset, t->shape))
          << p.name << suffix << " at offset " << p.shard_offset;
}

class CheckpointManagerTest : public ::testing::Test {
 protected:
  CheckpointManagerTest()
      : root_(fs::temp_directory_path() /
              ("ptdp-ckpt-manager-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) +
               "-" + std::to_string(::getpid()))) {
    fs::remove_all(root_);
  }
  ~CheckpointManagerTest() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  std::shared_ptr<CheckpointStore> open_store() {
    auto store = std::make_shared<ckptfs::FsCheckpointStore>(ckptfs::FsCheckpointStore::Options{false});
    store->open(root_.string());
    return store;
  }

  // Saves `step` from every rank of a (t, d, p) layout, each rank on its own thread with its
  // own store, as separate processes would.
  void save_layout(int64_t step, int t, int d, int p) {
    const int world = t * d * p;
    std::barrier sync(world);
    std::vector<std::exception_ptr> errors(world);
    std::vector<std::thread> threads;
    for (int rank = 0; rank < world; ++rank) {
      threads.emplace_back([&, rank] {
        try {
          const int tp = rank % t, dp = (rank / t) % d, pp = rank / (t * d);
          HostMemoryKernels kernels;
          RankParams model(kernels, stage_params(pp, p), t, tp, true);
          CheckpointManager manager(open_store(), kernels, CheckpointRole{rank, world, dp, tp, pp, p});
          manager.save(step, model.params, R"({"step": )" + std::to_string(step) + "}",
                       [&] { sync.arrive_and_wait(); });
        } catch (...) {
          errors[rank] = std::current_exception();
          sync.arrive_and_drop();
        }
      });
    }
    for (std::thread& th : threads) th.join();
    for (const std::exception_ptr& e : errors)
      if (e) std::rethrow_exception(e);
  }

  // Loads `step` into every rank of a (t, p) layout and checks each rank's values.
  void load_and_check(int64_t step, int t, int p) {
    for (int pp = 0; pp < p; ++pp) {
      for (int tp = 0; tp < t; ++tp) {
        HostMemoryKernels kernels;
        RankParams model(kernels, stage_params(pp, p), t, tp, false);
        CheckpointManager manager(open_store(), kernels, CheckpointRole{tp + t * pp, t * p, 0, tp, pp, p});
        manager.load(step, model.params);
        EXPECT_EQ(kernels.params_updated_calls, 1);
        SCOPED_TRACE("loaded with t=" + std::to_string(t) + " p=" + std::to_string(p) + " at tp=" +
                     std::to_string(tp) + " pp=" + std::to_string(pp));
        expect_model_values(model.params);
      }
    }
  }

  fs::path root_;
};

TEST_F(CheckpointManagerTest, RoundTripRestoresWeightsAndMoments) {
  HostMemoryKernels kernels;
  CheckpointManager manager(open_store(), kernels, CheckpointRole{});
  EXPECT_EQ(manager.latest_step(), std::nullopt);
  RankParams saved(kernels, stage_params(0, 1), 1, 0, true);
  int barriers = 0;
  manager.save(10, saved.params, R"({"step": 10, "tokens": 4096})", [&] { ++barriers; });
  EXPECT_EQ(barriers, 1);
  EXPECT_EQ(manager.latest_step(), 10);
  EXPECT_EQ(manager.metadata(10), R"({"step":10,"tokens":4096})");

  RankParams loaded(kernels, stage_params(0, 1), 1, 0, false);
  EXPECT_NE(host_copy(loaded.params[0].master), host_copy(saved.params[0].master));
  manager.load(10, loaded.params);
  EXPECT_EQ(kernels.params_updated_calls, 1);
  expect_model_values(loaded.params);
  for (const ParamRef& p : loaded.params) EXPECT_EQ(host_copy(p.grad), std::vector<float>(p.grad.numel(), 0.0f));
}

TEST_F(CheckpointManagerTest, SavedWithTensorParallelTwoLoadsWithOneAndFour) {
  save_layout(3, 2, 1, 1);
  load_and_check(3, 1, 1);
  load_and_check(3, 4, 1);
  load_and_check(3, 2, 1);
}

TEST_F(CheckpointManagerTest, EveryElementIsWrittenOnceAndLoadsIntoOneRank) {
  // t = 2, d = 2, p = 2: the data-parallel replica, the second TP rank's whole tensors and the
  // last stage's copy of the word embedding are left out. The store's commit refuses shards
  // that overlap or leave a tensor incomplete, so the save succeeding is itself part of the check.
  save_layout(8, 2, 2, 2);
  auto store = open_store();
  std::map<std::string, int> shards_per_tensor;
  for (const ShardInfo& s : store->shards(8)) ++shards_per_tensor[s.name];
  const std::map<std::string, int> expected = {
      {"embedding.word", 2},           {"embedding.position", 1},     {"layers.0.attn.qkv.weight", 2},
      {"layers.0.attn.qkv.bias", 2},   {"layers.0.mlp.fc2.weight", 2}, {"layers.0.ln1.weight", 1},
      {"layers.1.attn.qkv.weight", 2}, {"layers.1.ln1.weight", 1},     {"head.ln.weight", 1}};
  for (const auto& [name, count] : expected) {
    EXPECT_EQ(shards_per_tensor[name], count) << name;
    EXPECT_EQ(shards_per_tensor[name + ".exp_avg"], count) << name;
    EXPECT_EQ(shards_per_tensor[name + ".exp_avg_sq"], count) << name;
  }
  EXPECT_EQ(shards_per_tensor.size(), expected.size() * 3);
  load_and_check(8, 1, 1);
  load_and_check(8, 4, 2);
}

TEST(CheckpointRole, WritesRule) {
  auto param = [](const char* name, int shard_dim) {
    ParamRef p;
    p.name = name;
    p.shard_dim = shard_dim;
    return p;
  };
  const ParamRef split = param("layers.0.attn.qkv.weight", 1), whole = param("layers.0.ln1.weight", -1),
                 word = param("embedding.word", 0);
  // {rank, world, dp, tp, pp, stages}
  EXPECT_TRUE(writes({0, 8, 0, 0, 0, 2}, split));
  EXPECT_TRUE(writes({1, 8, 0, 1, 0, 2}, split));
  EXPECT_FALSE(writes({2, 8, 1, 0, 0, 2}, split)) << "data-parallel replica";
  EXPECT_TRUE(writes({0, 8, 0, 0, 0, 2}, whole));
  EXPECT_FALSE(writes({1, 8, 0, 1, 0, 2}, whole)) << "whole tensor on TP rank 1";
  EXPECT_TRUE(writes({1, 8, 0, 1, 0, 2}, word)) << "first stage's word embedding";
  EXPECT_FALSE(writes({5, 8, 0, 1, 1, 2}, word)) << "last stage's copy";
  EXPECT_TRUE(writes({1, 2, 0, 1, 0, 1}, word)) << "one stage: the only copy";
}

TEST_F(CheckpointManagerTest, LoadRefusesMissingOrMisshapenTensors) {
  HostMemoryKernels kernels;
  auto store = open_store();
  CheckpointManager manager(store, kernels, CheckpointRole{});
  RankParams saved(kernels, stage_params(0, 1), 1, 0, true);
  manager.save(10, saved.params, "{}", [] {});

  std::vector<ParamSpec> extra = stage_params(0, 1);
  extra.push_back({"layers.9.ln1.weight", {4}, -1});
  RankParams with_extra(kernels, extra, 1, 0, false);
  EXPECT_THAT([&] { manager.load(10, with_extra.params); },
              ::testing::ThrowsMessage<Error>(HasSubstr("no tensor 'layers.9.ln1.weight' in checkpoint step 10")));

  RankParams wider(kernels, {{"head.ln.weight", {8}, -1}}, 1, 0, false);
  EXPECT_THAT([&] { manager.load(10, wider.params); },
              ::testing::ThrowsMessage<Error>(HasSubstr(
                  "tensor 'head.ln.weight' is f32 [4] in checkpoint step 10, the model's is f32 [8]")));

  // A step holding weights but no optimizer moments.
  const std::vector<float> ln(4, 1.0f);
  store->write_shard(11, 0, ShardInfo{"head.ln.weight", DType::F32, {4}, {0}, {4}}, ln.data());
  store->finish_rank(11, 0);
  store->commit(11, 1, "{}");
  RankParams head(kernels, {{"head.ln.weight", {4}, -1}}, 1, 0, false);
  EXPECT_THAT([&] { manager.load(11, head.params); },
              ::testing::ThrowsMessage<Error>(HasSubstr("no tensor 'head.ln.weight.exp_avg' in checkpoint step 11")));

  EXPECT_THAT([&] { manager.load(12, head.params); },
              ::testing::ThrowsMessage<Error>(HasSubstr("step 12 is not committed")));

  // A damaged shard file: the store's reason, with the tensor and the step.
  const fs::path file = root_ / "step-00000010" / "rank-00000.safetensors";
  fs::resize_file(file, fs::file_size(file) - 4);
  RankParams all(kernels, stage_params(0, 1), 1, 0, false);
  EXPECT_THAT([&] { manager.load(10, all.params); },
              ::testing::ThrowsMessage<Error>(HasSubstr("in checkpoint step 10: ckpt-fs: " + file.string() + ": truncated")));
  EXPECT_EQ(kernels.params_updated_calls, 0) << "a failed load does not refresh the kernels";
}

TEST_F(CheckpointManagerTest, RefusesParametersAndRolesThatDoNotFit) {
  HostMemoryKernels kernels;
  CheckpointManager manager(open_store(), kernels, CheckpointRole{});
  RankParams model(kernels, {{"layers.0.mlp.fc2.weight", {4, 16}, 1}}, 1, 0, true);
  model.params[0].shard_offset = 4;  // 16 columns from 4 run past the end
  EXPECT_THAT([&] { manager.save(1, model.params, "{}", [] {}); },
              ::testing::ThrowsMessage<Error>(HasSubstr(
                  "parameter 'layers.0.mlp.fc2.weight': local shape [4, 16] at offset 4 of dimension 1 "
                  "does not fit global shape [4, 16]")));
  EXPECT_EQ(manager.latest_step(), std::nullopt);
  model.params[0].shard_offset = 0;
  manager.save(1, model.params, "{}", [] {});
  EXPECT_EQ(manager.latest_step(), 1);
  model.params[0].shard_dim = 2;
  EXPECT_THAT([&] { manager.load(1, model.params); },
              ::testing::ThrowsMessage<Error>(HasSubstr("shard_dim 2 is outside its 2 dimensions")));

  EXPECT_THAT([&] { CheckpointManager(nullptr, kernels, CheckpointRole{}); },
              ::testing::ThrowsMessage<Error>(HasSubstr("no checkpoint store")));
  EXPECT_THAT([&] { CheckpointManager(open_store(), kernels, CheckpointRole{4, 4, 0, 0, 0, 1}); },
              ::testing::ThrowsMessage<Error>(HasSubstr("inconsistent role: rank 4 of 4")));
}

TEST_F(CheckpointManagerTest, ADivergedModelIsNeverCommitted) {
  HostMemoryKernels kernels;
  CheckpointManager manager(open_store(), kernels, CheckpointRole{});
  RankParams model(kernels, stage_params(0, 1), 1, 0, true);
  manager.save(1, model.params, "{}", [] {});
  model.params[2].exp_avg_sq.as<float>()[5] = std::numeric_limits<float>::infinity();
  try {
    manager.save(2, model.params, "{}", [] {});
    ADD_FAILURE() << "a step holding inf was saved";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("step 2 not saved: 'layers.0.attn.qkv.weight.exp_avg_sq' holds inf at element 5"));
  }
  EXPECT_EQ(open_store()->list_steps(), std::vector<int64_t>{1});
}

TEST_F(CheckpointManagerTest, KeepNewestDeletesTheOlderSteps) {
  HostMemoryKernels kernels;
  CheckpointManager manager(open_store(), kernels, CheckpointRole{});
  RankParams model(kernels, stage_params(0, 1), 1, 0, true);
  for (int64_t step : {1, 2, 3, 4}) manager.save(step, model.params, "{}", [] {});
  EXPECT_TRUE(manager.keep_newest(0).empty()) << "keep = 0 keeps every step";
  EXPECT_EQ(manager.keep_newest(2), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(open_store()->list_steps(), (std::vector<int64_t>{3, 4}));
  EXPECT_TRUE(manager.keep_newest(2).empty());
}

}  // namespace
}  // namespace ptdp::test
