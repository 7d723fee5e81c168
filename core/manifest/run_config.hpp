#pragma once
// RunConfig: a manifest after parsing and validation. Every field has been checked on its own
// and against the others (the rules of docs/architecture.md §1) by load_manifest(); the rest of the core trusts it.
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <toml++/toml.h>

namespace ptdp {

struct RunConfig {
  std::string source;  // manifest path, for messages

  struct Run {
    std::string name = "ptdp";
    int64_t steps = 10;
    uint64_t seed = 1234;
    int log_every = 1;
  } run;

  struct Model {
    int layers = 0, hidden = 0, heads = 0, seq_len = 0, vocab = 0;
    int padded_vocab = 0;  // vocab rounded up to a multiple of parallel.tensor
    int ffn_hidden = 0;    // 4 * hidden unless set
    float dropout = 0.0f;
    float layernorm_eps = 1e-5f;
  } model;

  struct Parallel {
    int tensor = 1, pipeline = 1, data = 1, virtual_stages = 1;
    int micro_batch = 1, global_batch = 1;
    bool scatter_gather = false;
    bool sequence_parallel = false;  // LayerNorm, dropout and residual activations split over t
    std::string recompute = "none";  // "none" | "full" | "selective"
    int recompute_every = 1;         // with "full": checkpoint every c layers
    // With "selective": what a block recomputes (names of ptdp/activation_recompute.hpp)
    std::vector<std::string> recompute_modules = {"core_attention"};
    bool full_recompute() const { return recompute == "full"; }
    bool selective_recompute() const { return recompute == "selective"; }
    bool distributed_optimizer = false;  // master state and Adam moments sharded over d (ZeRO-1)
    bool overlap_param_gather = true;    // its weight all-gather runs beside the next step's forward
    int64_t bucket_elements = 40000000;  // gradients per data-parallel reduction; see default_bucket_elements
    int world_size() const { return tensor * pipeline * data; }
    int microbatches() const { return global_batch / (micro_batch * data); }  // m
  } parallel;

  struct Optimizer {
    std::string type = "adamw";  // "adam" | "adamw"
    double lr = 3e-4, min_lr = 3e-5;
    double beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weight_decay = 0.1, grad_clip = 1.0;
    int64_t warmup_steps = 0;
    int64_t decay_steps = 0;          // 0: run.steps
    std::string decay = "cosine";     // "cosine" | "linear" | "constant"
  } optimizer;

  struct Precision {
    std::string params = "fp32";      // working dtype of weights and activations: fp32 | bf16 | fp16
    // fp16's dynamic loss scaling (docs/precision.md); ignored under other params.
    double loss_scale_initial = 65536;  // 2^16
    int64_t loss_scale_window = 1000;   // clean steps in a row before the scale doubles
    double loss_scale_min = 1.0;        // a scale halved below it stops the run
    int64_t loss_scale_hysteresis = 2;  // overflowing steps in a row before the scale is halved
    bool fp16() const { return params == "fp16"; }
    // FP8 GEMMs in the transformer blocks (sdk/include/ptdp/fp8.hpp): "off" | "hybrid".
    std::string fp8 = "off";
    std::string fp8_recipe = "tensorwise";  // "tensorwise" | "delayed"
    int fp8_amax_history = 1024;            // delayed: steps of amax kept
    std::string fp8_amax_compute = "max";   // delayed: "max" of the history | "most_recent"
    int fp8_margin = 0;                     // scales are 2^-margin below the format's range
    int fp8_bf16_first_blocks = 0;          // blocks at either end of the model whose GEMMs
    int fp8_bf16_last_blocks = 0;           // stay in params' type
    bool fp8_on() const { return fp8 == "hybrid"; }
  } precision;

  struct Data {
    // Files or globs of token files (ptdp format, llm.c shards) or text, in order; each entry is
    // one source of a blend when `weights` is set, else all together are one data set.
    std::vector<std::string> path;
    std::vector<std::string> val_path;  // a separate validation set; empty: the tail of `path`
    std::vector<double> weights;        // one per entry of `path`; empty: no blend
    std::string tokenizer;              // the tokenizer file the data were made with; travels in checkpoints
    std::string format = "auto";      // "auto" | "ptdp" | "llmc" | "text"
    double val_fraction = 0.05;       // tail of each source held out when there is no val_path
    int val_every = 0;                // 0: never
    int val_batches = 4;
  } data;

  struct Checkpoint {
    std::string dir;                  // empty: no checkpoints
    int every = 0;
    bool resume = true;               // continue from the newest committed step in dir
    int keep = 0;                     // > 0: after each save, delete all but the newest `keep` steps
    std::string resume_from;          // another run's checkpoint folder to start from (read only)
    int64_t resume_step = 0;          // the step of resume_from to start from; 0: its newest
  } checkpoint;

  struct Plugins {
    std::string communicator = "comm-ucx";
    std::string kernels = "kernels-ref";
    std::string scheduler = "sched-1f1b";
    std::string checkpoint = "ckpt-fs";
    std::vector<std::string> search_path;  // resolved against the manifest's folder
    // [plugins.options.<slot>] tables, by slot name (communicator, kernels, scheduler, checkpoint);
    // validated against the plugin's schema when it is loaded. Every slot is present (an empty
    // table when the manifest has none).
    std::map<std::string, toml::table> options;
  } plugins;

  struct Launch {
    int nproc_per_node = 1;
    std::string master_addr = "127.0.0.1";
    int master_port = 0;              // 0: pick a free port
    double timeout_s = 60.0;          // any blocking wait (rendezvous, collective) fails after this
    int nnodes = 1;
    int ranks_per_gpu = 1;            // > 1: that many consecutive local ranks share one GPU
    int world_size() const { return nproc_per_node * nnodes; }
  } launch;

  // What the loader decided on the user's behalf (e.g. vocab padding), for the log and `validate`.
  std::vector<std::string> notes;
  // What the manifest should change though it still loads (a key under its deprecated name), one
  // line each, for the commands to show once.
  std::vector<std::string> warnings;
};

// Megatron-Core's bucket size when the manifest gives none: max(40M, 1M · d) gradients, so that
// each data-parallel rank's share of a bucket stays at least 1M elements, enough for a collective
// to run at bandwidth, however large d grows.
inline int64_t default_bucket_elements(int data_parallel) {
  return std::max<int64_t>(40000000, int64_t{1000000} * data_parallel);
}

}  // namespace ptdp
