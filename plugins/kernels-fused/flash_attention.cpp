#include "flash_attention.hpp"

#include <string>

#include "ptdp/error.hpp"

#if PTDP_HAVE_CUDNN_FRONTEND

#include <cudnn_frontend.h>

#include <cmath>
#include <unordered_map>

#include "ptdp/checked_call_cudnn.hpp"
#include "ptdp/checked_call_cudnn_frontend.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {
namespace {

namespace fe = cudnn_frontend;

enum Uid : int64_t { kQ = 1, kK, kV, kO, kStats, kDO, kDQ, kDK, kDV };

class FlashAttention final : public Attention {
 public:
  FlashAttention(const AttentionShape& shape, const KernelContext& ctx, PluginLog log)
      : shape_(shape), ctx_(ctx), log_(std::move(log)) {
    PTDP_CALL(cudnnCreate(&handle_));
    PTDP_CALL(cudnnSetStream(handle_, ctx_.stream));
    build_forward();
    build_backward();
  }
  ~FlashAttention() override {
    TeardownFailures failures;
    if (handle_) PTDP_TEARDOWN_CALL(failures, cudnnDestroy(handle_));
    log_.write_failures("kernels-fused: destroying the cuDNN handle", failures);
  }

  std::string name() const override { return "flash"; }

  std::shared_ptr<void> forward(const act_t* qkv, act_t* ctx, bool save) override {
    const int64_t w = shape_.width();
    auto stats = allocate_buffer<float>(*ctx_.arena, size_t(shape_.batch) * shape_.heads * shape_.seq);
    std::unordered_map<int64_t, void*> pack{{kQ, const_cast<act_t*>(qkv)},
                                            {kK, const_cast<act_t*>(qkv + w)},
                                            {kV, const_cast<act_t*>(qkv + 2 * w)},
                                            {kO, ctx},
                                            {kStats, stats.get()}};
    auto workspace = ctx_.arena->allocate(size_t(forward_workspace_));
    PTDP_CALL(forward_->execute(handle_, pack, workspace.get()));
    return save ? stats.block : nullptr;
  }

  void backward(const act_t* qkv, const act_t* ctx, const act_t* dctx, const void* saved, act_t* dqkv) override {
    const int64_t w = shape_.width();
    std::unordered_map<int64_t, void*> pack{{kQ, const_cast<act_t*>(qkv)},
                                            {kK, const_cast<act_t*>(qkv + w)},
                                            {kV, const_cast<act_t*>(qkv + 2 * w)},
                                            {kO, const_cast<act_t*>(ctx)},
                                            {kDO, const_cast<act_t*>(dctx)},
                                            {kStats, const_cast<void*>(saved)},
                                            {kDQ, dqkv},
                                            {kDK, dqkv + w},
                                            {kDV, dqkv + 2 * w}};
    auto workspace = ctx_.arena->allocate(size_t(backward_workspace_));
    PTDP_CALL(backward_->execute(handle_, pack, workspace.get()));
  }

 private:
  std::vector<int64_t> dims() const { return {shape_.batch, shape_.heads, shape_.seq, shape_.head_dim}; }
  // q, k, v (and their gradients) inside [s, b, 3, heads, head_dim].
  std::vector<int64_t> qkv_stride() const {
    const int64_t w = shape_.width();
    return {3 * w, shape_.head_dim, int64_t(shape_.batch) * 3 * w, 1};
  }
  // ctx and its gradient: [s, b, heads, head_dim].
  std::vector<int64_t> ctx_stride() const {
    const int64_t w = shape_.width();
    return {w, shape_.head_dim, int64_t(shape_.batch) * w, 1};
  }
  std::vector<int64_t> stats_dims() const { return {shape_.batch, shape_.heads, shape_.seq, 1}; }
  std::vector<int64_t> stats_stride() const { return {int64_t(shape_.heads) * shape_.seq, shape_.seq, 1, 1}; }
  float scale() const { return 1.0f / std::sqrt(float(shape_.head_dim)); }

  std::shared_ptr<fe::graph::Graph> new_graph() const {
    auto graph = std::make_shared<fe::graph::Graph>();
    graph->set_io_data_type(PTDP_FUSED_FP16 ? fe::DataType_t::HALF : fe::DataType_t::BFLOAT16)
        .set_intermediate_data_type(fe::DataType_t::FLOAT)
        .set_compute_data_type(fe::DataType_t::FLOAT);
    return graph;
  }

  std::shared_ptr<fe::graph::Tensor_attributes> input(fe::graph::Graph& graph, const char* name, int64_t uid,
                                                      const std::vector<int64_t>& stride) const {
    return graph.tensor(fe::graph::Tensor_attributes().set_name(name).set_uid(uid).set_dim(dims()).set_stride(stride));
  }

  void finish(fe::graph::Graph& graph, int64_t& workspace) {
    PTDP_CALL(graph.validate());
    PTDP_CALL(graph.build_operation_graph(handle_));
    PTDP_CALL(graph.create_execution_plans({fe::HeurMode_t::A}));
    PTDP_CALL(graph.check_support(handle_));
    PTDP_CALL(graph.build_plans(handle_));
    PTDP_CALL(graph.get_workspace_size(workspace));
  }

  void build_forward() {
    forward_ = new_graph();
    auto q = input(*forward_, "q", kQ, qkv_stride());
    auto k = input(*forward_, "k", kK, qkv_stride());
    auto v = input(*forward_, "v", kV, qkv_stride());
    auto options = fe::graph::SDPA_attributes()
                       .set_name("flash_attention")
                       .set_generate_stats(true)
                       .set_attn_scale(scale())
                       .set_diagonal_alignment(fe::DiagonalAlignment_t::TOP_LEFT)
                       .set_diagonal_band_right_bound(0);
    auto [o, stats] = forward_->sdpa(q, k, v, options);
    o->set_output(true).set_dim(dims()).set_stride(ctx_stride()).set_uid(kO);
    stats->set_output(true).set_data_type(fe::DataType_t::FLOAT).set_dim(stats_dims()).set_stride(stats_stride())
        .set_uid(kStats);
    finish(*forward_, forward_workspace_);
  }

  void build_backward() {
    backward_ = new_graph();
    auto q = input(*backward_, "q", kQ, qkv_stride());
    auto k = input(*backward_, "k", kK, qkv_stride());
    auto v = input(*backward_, "v", kV, qkv_stride());
    auto o = input(*backward_, "o", kO, ctx_stride());
    auto d_o = input(*backward_, "dO", kDO, ctx_stride());
    auto stats = backward_->tensor(fe::graph::Tensor_attributes()
                                       .set_name("stats")
                                       .set_uid(kStats)
                                       .set_dim(stats_dims())
                                       .set_stride(stats_stride())
                                       .set_data_type(fe::DataType_t::FLOAT));
    auto options = fe::graph::SDPA_backward_attributes()
                       .set_name("flash_attention_backward")
                       .set_attn_scale(scale())
                       .set_diagonal_alignment(fe::DiagonalAlignment_t::TOP_LEFT)
                       .set_diagonal_band_right_bound(0);
    auto [dq, dk, dv] = backward_->sdpa_backward(q, k, v, o, d_o, stats, options);
    dq->set_output(true).set_dim(dims()).set_stride(qkv_stride()).set_uid(kDQ);
    dk->set_output(true).set_dim(dims()).set_stride(qkv_stride()).set_uid(kDK);
    dv->set_output(true).set_dim(dims()).set_stride(qkv_stride()).set_uid(kDV);
    finish(*backward_, backward_workspace_);
  }

  AttentionShape shape_;
  KernelContext ctx_;
  PluginLog log_;
  cudnnHandle_t handle_ = nullptr;
  std::shared_ptr<fe::graph::Graph> forward_, backward_;
  int64_t forward_workspace_ = 0, backward_workspace_ = 0;
};

}  // namespace

bool flash_attention_built() { return true; }

void require_flash_attention_built() {}

std::unique_ptr<Attention> make_flash_attention(const AttentionShape& shape, const KernelContext& ctx,
                                                PluginLog log) {
  try {
    return std::make_unique<FlashAttention>(shape, ctx, std::move(log));
  } catch (const Error& e) {
    throw Error(std::string("kernels-fused: attention = \"flash\" cannot serve seq_len ") + std::to_string(shape.seq) +
                ", micro_batch " + std::to_string(shape.batch) + ", " + std::to_string(shape.heads) +
                " heads of " + std::to_string(shape.head_dim) + " on this GPU (" + reason_of(e) +
                "); use attention = \"unfused\"");
  }
}

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused

#else  // !PTDP_HAVE_CUDNN_FRONTEND

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

bool flash_attention_built() { return false; }

void require_flash_attention_built() {
  throw Error(
      "kernels-fused: attention = \"flash\" is not available: this build has no cuDNN frontend "
      "(configure found no cudnn_frontend.h; run scripts/setup.sh or set PTDP_CUDNN_FRONTEND_DIR), so use "
      "attention = \"unfused\"");
}

std::unique_ptr<Attention> make_flash_attention(const AttentionShape&, const KernelContext&, PluginLog) {
  require_flash_attention_built();
  return nullptr;
}

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused

#endif
