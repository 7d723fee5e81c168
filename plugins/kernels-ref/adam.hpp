#pragma once
// Adam with decoupled weight decay (AdamW, as torch.optim.AdamW) on one parameter's shard.
#include <ptdp/layer_kernels.hpp>

namespace ptdp::kref {

// grad is divided by step.loss_scale and multiplied by step.grad_scale first; decay applies only
// where param.weight_decay.
void adam_update(const ParamRef& param, const AdamStep& step);

}  // namespace ptdp::kref
