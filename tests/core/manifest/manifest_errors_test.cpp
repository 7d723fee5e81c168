// Every way a manifest can be wrong gets one line naming the file, the line and the key: one
// edit of the valid manifest per case, and the line the error must point at.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "manifest_test_support.hpp"

namespace ptdp::test {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

struct BrokenManifest {
  const char* name;
  std::vector<std::pair<std::string, std::string>> edits;
  std::string key;     // the key the message names
  std::string at;      // text on the line it points at
  std::string reason;  // part of the message after the key
};

void PrintTo(const BrokenManifest& c, std::ostream* os) { *os << c.name; }

class ManifestErrors : public ::testing::TestWithParam<BrokenManifest> {};

TEST_P(ManifestErrors, NameFileLineAndKey) {
  const BrokenManifest& c = GetParam();
  const std::string text = edited(kManifest, c.edits);
  const std::string error = load_error(text);
  EXPECT_THAT(error, StartsWith("t.toml:" + std::to_string(line_of(text, c.at)) + ":"));
  EXPECT_THAT(error, HasSubstr(": " + c.key + ": "));
  EXPECT_THAT(error, HasSubstr(c.reason));
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

std::pair<std::string, std::string> add_after(const std::string& line, const std::string& extra) {
  return {line, line + "\n" + extra};
}

const BrokenManifest kUnknownKeys[] = {
    {"run", {add_after("log_every = 2", "colour = 1")}, "run.colour", "colour", "unknown key (keys of [run]: "},
    {"model", {add_after("vocab = 256", "layer = 8")}, "model.layer", "layer = 8", "unknown key"},
    {"parallel", {add_after("data = 2", "expert = 2")}, "parallel.expert", "expert", "unknown key"},
    {"optimizer", {add_after("lr = 1e-3", "momentum = 0.9")}, "optimizer.momentum", "momentum", "unknown key"},
    {"precision", {add_after("params = \"fp32\"", "grads = \"bf16\"")}, "precision.grads", "grads", "unknown key"},
    {"data", {add_after("val_fraction = 0.1", "shuffle = true")}, "data.shuffle", "shuffle", "unknown key"},
    {"checkpoint", {add_after("every = 0", "retain = 3")}, "checkpoint.retain", "retain", "unknown key"},
    {"plugins", {add_after("communicator = \"comm-ucx\"", "optimizer = \"x\"")}, "plugins.optimizer", "optimizer = \"x\"", "unknown key"},
    {"launch", {add_after("timeout_s = 30", "gpus = 8")}, "launch.gpus", "gpus", "unknown key"},
    {"table", {{"[launch]", "[logging]\nlevel = 1\n\n[launch]"}}, "logging", "[logging]", "unknown key (keys of the manifest: "},
    {"option_slot", {{"[plugins.options.communicator]", "[plugins.options.optimizer]"}}, "plugins.options.optimizer",
     "[plugins.options.optimizer]",
     "unknown key (keys of [plugins.options]: checkpoint, communicator, kernels, scheduler)"},
};
INSTANTIATE_TEST_SUITE_P(UnknownKey, ManifestErrors, ::testing::ValuesIn(kUnknownKeys),
                         [](const auto& info) { return std::string(info.param.name); });

const BrokenManifest kWrongTypes[] = {
    {"string_for_int", {{"layers = 8", "layers = \"8\""}}, "model.layers", "layers", "expected integer, got string"},
    {"float_for_int", {{"hidden = 64", "hidden = 64.0"}}, "model.hidden", "hidden", "expected integer, got float"},
    {"bool_for_int", {{"steps = 10", "steps = true"}}, "run.steps", "steps", "expected integer, got boolean"},
    {"int_for_bool", {{"scatter_gather = true", "scatter_gather = 1"}}, "parallel.scatter_gather", "scatter_gather",
     "expected boolean, got integer"},
    {"int_for_string", {{"recompute = \"none\"", "recompute = 0"}}, "parallel.recompute", "recompute",
     "expected string, got integer"},
    {"string_for_float", {{"lr = 1e-3", "lr = \"1e-3\""}}, "optimizer.lr", "lr = ", "expected float, got string"},
    {"date_for_string", {{"name = \"test\"", "name = 2024-01-01"}}, "run.name", "name", "expected string, got date"},
    {"string_for_array", {{"search_path = [\"plugins\"]", "search_path = \"plugins\""}}, "plugins.search_path",
     "search_path", "expected array of strings, got string"},
    {"int_in_array", {{"search_path = [\"plugins\"]", "search_path = [\"plugins\",\n  3]"}}, "plugins.search_path[1]",
     "  3]", "expected string, got integer"},
    {"value_for_table", {{"[precision]\nparams = \"fp32\"", "[precision.params]\nx = 1"}}, "precision.params",
     "[precision.params]", "expected string, got table"},
    {"value_for_option_slot", {{"[plugins.options.communicator]\ntransports = \"shm\"", "options.communicator = 3"}},
     "plugins.options.communicator", "options.communicator", "expected table, got integer"},
};
INSTANTIATE_TEST_SUITE_P(WrongType, ManifestErrors, ::testing::ValuesIn(kWrongTypes),
                         [](const auto& info) { return std::string(info.param.name); });

const BrokenManifest kOutOfRange[] = {
    {"steps", {{"steps = 10", "steps = 0"}}, "run.steps", "steps", "must be between 1 and 4294967296 (got 0)"},
    {"seed", {{"seed = 7", "seed = -1"}}, "run.seed", "seed", "must be >= 0 (got -1)"},
    {"log_every", {{"log_every = 2", "log_every = 0"}}, "run.log_every", "log_every", "must be between 1 and"},
    {"layers", {{"layers = 8", "layers = 0"}}, "model.layers", "layers", "must be between 1 and 65536 (got 0)"},
    {"hidden", {{"hidden = 64", "hidden = -64"}}, "model.hidden", "hidden", "must be between 1 and"},
    {"heads", {{"heads = 8", "heads = 0"}}, "model.heads", "heads", "must be between 1 and"},
    {"seq_len", {{"seq_len = 32", "seq_len = 0"}}, "model.seq_len", "seq_len", "must be between 1 and"},
    {"vocab", {{"vocab = 256", "vocab = 0"}}, "model.vocab", "vocab", "must be between 1 and"},
    {"dropout", {add_after("vocab = 256", "dropout = 1.0")}, "model.dropout", "dropout", "must be in [0, 1) (got 1)"},
    {"layernorm_eps", {add_after("vocab = 256", "layernorm_eps = 0")}, "model.layernorm_eps", "layernorm_eps",
     "must be > 0 and within 32-bit float range (1.2e-38 to 3.4e38) (got 0)"},
    {"tensor", {{"tensor = 2", "tensor = 0"}}, "parallel.tensor", "tensor", "must be between 1 and 65536 (got 0)"},
    {"pipeline_huge", {{"pipeline = 2", "pipeline = 100000"}}, "parallel.pipeline", "pipeline", "between 1 and 65536"},
    {"data", {{"data = 2", "data = -2"}}, "parallel.data", "data", "must be between 1 and"},
    {"virtual_stages", {{"virtual_stages = 2", "virtual_stages = 0"}}, "parallel.virtual_stages", "virtual_stages",
     "must be between 1 and"},
    {"micro_batch", {{"micro_batch = 1", "micro_batch = 0"}}, "parallel.micro_batch", "micro_batch",
     "must be between 1 and"},
    {"global_batch", {{"global_batch = 8", "global_batch = 0"}}, "parallel.global_batch", "global_batch",
     "must be between 1 and"},
    {"recompute", {{"recompute = \"none\"", "recompute = \"partial\""}}, "parallel.recompute", "recompute",
     "must be one of \"none\", \"full\", \"selective\" (got \"partial\")"},
    {"recompute_every", {add_after("recompute = \"none\"", "recompute_every = 0")}, "parallel.recompute_every",
     "recompute_every", "must be between 1 and"},
    {"lr_zero", {{"lr = 1e-3", "lr = 0.0"}}, "optimizer.lr", "lr = ", "must be > 0 and within 32-bit float range"},
    {"lr_nan", {{"lr = 1e-3", "lr = nan"}}, "optimizer.lr", "lr = ", "must be a finite number (got nan)"},
    {"lr_inf", {{"lr = 1e-3", "lr = inf"}}, "optimizer.lr", "lr = ", "must be a finite number (got inf)"},
    {"lr_beyond_float", {{"lr = 1e-3", "lr = 1e39"}}, "optimizer.lr", "lr = ", "within 32-bit float range"},
    {"grad_clip_inf", {add_after("lr = 1e-3", "grad_clip = inf")}, "optimizer.grad_clip", "grad_clip",
     "must be a finite number (got inf)"},
    {"eps_below_float", {add_after("lr = 1e-3", "eps = 1e-50")}, "optimizer.eps", "eps = 1e-50", "within 32-bit float range"},
    {"steps_huge", {{"steps = 10", "steps = 9000000000000000000"}}, "run.steps", "steps",
     "must be between 1 and 4294967296"},
    {"beta2", {{"beta2 = 0.95", "beta2 = 1"}}, "optimizer.beta2", "beta2", "must be in [0, 1) (got 1)"},
    {"warmup_steps", {{"warmup_steps = 2", "warmup_steps = -1"}}, "optimizer.warmup_steps", "warmup_steps",
     "must be between 0 and 4294967296 (got -1)"},
    {"decay", {{"decay = \"cosine\"", "decay = \"exp\""}}, "optimizer.decay", "decay",
     "must be one of \"cosine\", \"linear\", \"constant\""},
    {"optimizer_type", {add_after("lr = 1e-3", "type = \"sgd\"")}, "optimizer.type", "type", "must be one of"},
    {"params", {{"params = \"fp32\"", "params = \"fp8\""}}, "precision.params", "params",
     "must be one of \"fp32\", \"bf16\", \"fp16\" (got \"fp8\")"},
    {"loss_scale_initial_zero", {add_after("params = \"fp32\"", "loss_scale_initial = 0.0")},
     "precision.loss_scale_initial", "loss_scale_initial", "must be > 0 and within 32-bit float range"},
    {"loss_scale_initial_inf", {add_after("params = \"fp32\"", "loss_scale_initial = inf")},
     "precision.loss_scale_initial", "loss_scale_initial", "must be a finite number (got inf)"},
    {"loss_scale_initial_beyond_float", {add_after("params = \"fp32\"", "loss_scale_initial = 1e39")},
     "precision.loss_scale_initial", "loss_scale_initial", "within 32-bit float range"},
    {"loss_scale_window", {add_after("params = \"fp32\"", "loss_scale_window = 0")}, "precision.loss_scale_window",
     "loss_scale_window", "must be between 1 and 4294967296 (got 0)"},
    {"loss_scale_min", {add_after("params = \"fp32\"", "loss_scale_min = -1.0")}, "precision.loss_scale_min",
     "loss_scale_min", "must be > 0 and within 32-bit float range"},
    {"loss_scale_hysteresis", {add_after("params = \"fp32\"", "loss_scale_hysteresis = 0")},
     "precision.loss_scale_hysteresis", "loss_scale_hysteresis", "must be between 1 and 4294967296 (got 0)"},
    {"data_format", {add_after("val_fraction = 0.1", "format = \"csv\"")}, "data.format", "format", "must be one of"},
    {"val_fraction", {{"val_fraction = 0.1", "val_fraction = 1.5"}}, "data.val_fraction", "val_fraction",
     "must be in [0, 1)"},
    {"data_path_number", {{"path = \"corpus.txt\"", "path = 3"}}, "data.path", "path", "expected array of strings, got integer"},
    {"data_weight_zero", {add_after("val_fraction = 0.1", "weights = [0]")}, "data.weights[0]", "weights", "must be > 0 (got 0)"},
    {"data_weight_text", {add_after("val_fraction = 0.1", "weights = [\"a\"]")}, "data.weights[0]", "weights",
     "expected number, got string"},
    {"data_weights_count", {add_after("val_fraction = 0.1", "weights = [1, 2]")}, "data.weights", "weights",
     "has 2 weights for 1 entry of data.path: a blend weighs each entry (a file or a glob)"},
    {"checkpoint_every", {{"every = 0", "every = -1"}}, "checkpoint.every", "every = -1", "must be between 0 and"},
    {"nproc_per_node", {{"nproc_per_node = 8", "nproc_per_node = 0"}}, "launch.nproc_per_node", "nproc_per_node",
     "must be between 1 and 1024"},
    {"nnodes", {add_after("nproc_per_node = 8", "nnodes = 0")}, "launch.nnodes", "nnodes", "must be between 1 and"},
    {"master_port", {add_after("nproc_per_node = 8", "master_port = 70000")}, "launch.master_port", "master_port",
     "must be between 0 and 65535 (got 70000)"},
    {"timeout_s", {{"timeout_s = 30", "timeout_s = -1"}}, "launch.timeout_s", "timeout_s", "must be in [1, 86400] (got -1)"},
    {"timeout_s_tiny", {{"timeout_s = 30", "timeout_s = 1e-300"}}, "launch.timeout_s", "timeout_s",
     "must be in [1, 86400] (got 1e-300)"},
    {"timeout_s_inf", {{"timeout_s = 30", "timeout_s = inf"}}, "launch.timeout_s", "timeout_s",
     "must be a finite number (got inf)"},
    {"timeout_s_huge", {{"timeout_s = 30", "timeout_s = 9.3e9"}}, "launch.timeout_s", "timeout_s",
     "must be in [1, 86400] (got 9"},
};
INSTANTIATE_TEST_SUITE_P(OutOfRange, ManifestErrors, ::testing::ValuesIn(kOutOfRange),
                         [](const auto& info) { return std::string(info.param.name); });

const BrokenManifest kCrossRules[] = {
    {"hidden_by_heads", {{"heads = 8", "heads = 6"}}, "model.heads", "heads", "hidden (64) must be divisible by heads (6)"},
    {"heads_by_tensor", {{"hidden = 64\nheads = 8", "hidden = 96\nheads = 3"}}, "parallel.tensor", "tensor = 2",
     "heads (3) must be divisible by tensor (2)"},
    {"ffn_by_tensor", {add_after("vocab = 256", "ffn_hidden = 129")}, "parallel.tensor", "tensor = 2",
     "ffn_hidden (129) must be divisible by tensor (2)"},
    {"world_size", {{"nproc_per_node = 8", "nproc_per_node = 4"}}, "launch.nproc_per_node", "nproc_per_node",
     "pipeline (2) * tensor (2) * data (2) = 8 must equal the world size nproc_per_node (4) * nnodes (1) = 4"},
    {"world_size_nodes", {add_after("nproc_per_node = 8", "nnodes = 2")}, "launch.nproc_per_node", "nproc_per_node",
     "= 8 must equal the world size nproc_per_node (8) * nnodes (2) = 16"},
    {"interleave_without_pipeline", {{"pipeline = 2\ndata = 2", "pipeline = 1\ndata = 4"}}, "parallel.virtual_stages",
     "virtual_stages", "interleaving (virtual_stages 2) needs pipeline >= 2"},
    {"layers_by_chunks", {{"layers = 8", "layers = 6"}}, "parallel.virtual_stages", "virtual_stages",
     "layers (6) must be divisible by pipeline * virtual_stages (2 * 2 = 4)"},
    {"layers_by_stages", {{"layers = 8", "layers = 7"}, {"virtual_stages = 2", "virtual_stages = 1"}},
     "parallel.pipeline", "pipeline = 2", "layers (7) must be divisible by pipeline (2)"},
    {"batch_by_micro_and_data", {{"global_batch = 8", "global_batch = 7"}}, "parallel.global_batch", "global_batch",
     "global_batch (7) must be divisible by micro_batch * data (1 * 2 = 2)"},
    {"interleave_needs_m_by_p", {{"global_batch = 8", "global_batch = 6"}}, "parallel.virtual_stages",
     "virtual_stages", "microbatch count m = global_batch / (micro_batch * data) = 3 to be a multiple of pipeline (2)"},
    {"recompute_every_by_chunk", {{"recompute = \"none\"", "recompute = \"full\"\nrecompute_every = 3"}},
     "parallel.recompute_every", "recompute_every", "3 must divide the layers of a model chunk"},
    {"min_lr_above_lr", {{"min_lr = 1e-4", "min_lr = 1e-2"}}, "optimizer.min_lr", "min_lr",
     "must not exceed optimizer.lr"},
    {"checkpoint_every_without_dir", {{"every = 0", "every = 5"}}, "checkpoint.every", "every = 5",
     "needs checkpoint.dir"},
    {"missing_required", {{"vocab = 256\n", ""}}, "model.vocab", "[model]", "required key is missing"},
    {"loss_scale_initial_below_min",
     {{"params = \"fp32\"", "params = \"fp16\"\nloss_scale_initial = 4.0\nloss_scale_min = 8.0"}},
     "precision.loss_scale_initial", "loss_scale_initial = 4",
     "loss_scale_initial (4) is below loss_scale_min (8): the run would start below its smallest loss scale"},
    {"fp8_with_fp16", {{"params = \"fp32\"", "params = \"fp16\"\nfp8 = \"hybrid\""}}, "precision.fp8", "fp8 = ",
     "precision.fp8 = \"hybrid\" does not run with precision.params = \"fp16\""},
};
INSTANTIATE_TEST_SUITE_P(CrossRule, ManifestErrors, ::testing::ValuesIn(kCrossRules),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ManifestErrorsWithoutLine, MissingModelTableNamesTheFile) {
  EXPECT_EQ(load_error("[run]\nsteps = 1\n"), "t.toml: model.layers: required key is missing");
}

TEST(ManifestErrorsWithoutLine, UnknownKeyComesBeforeTheMissingOneItHides) {
  const std::string text = edited(kManifest, {{"layers = 8", "layer = 8"}});
  EXPECT_THAT(load_error(text), HasSubstr("model.layer: unknown key"));
}

}  // namespace
}  // namespace ptdp::test
