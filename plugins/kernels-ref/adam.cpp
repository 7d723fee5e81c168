#include "adam.hpp"

#include <cmath>

#include "tensor_checks.hpp"

namespace ptdp::kref {

void adam_update(const ParamRef& param, const AdamStep& step) {
  if (step.step < 1)
    throw Error("kernels-ref: adam step number must start at 1 (got " + std::to_string(step.step) + ")");
  const std::vector<int64_t>& shape = param.master.shape;
  check_host_tensor(param.master, DType::F32, shape, param.name + " master");
  check_host_tensor(param.grad, DType::F32, shape, param.name + " grad");
  check_host_tensor(param.exp_avg, DType::F32, shape, param.name + " exp_avg");
  check_host_tensor(param.exp_avg_sq, DType::F32, shape, param.name + " exp_avg_sq");

  const double t = static_cast<double>(step.step);
  const float step_size = static_cast<float>(step.lr / (1.0 - std::pow(step.beta1, t)));
  const float inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(1.0 - std::pow(step.beta2, t)));
  const float decay = param.weight_decay ? 1.0f - step.lr * step.weight_decay : 1.0f;
  const float b1 = step.beta1, b2 = step.beta2;
  // One factor: the loss scale divided out, then clipping. For a power-of-two loss scale it is
  // exact, and the update equals that of unscaled gradients bit for bit.
  const float grad_factor = step.grad_scale / step.loss_scale;

  float* w = param.master.as<float>();
  const float* g = param.grad.as<float>();
  float* m = param.exp_avg.as<float>();
  float* v = param.exp_avg_sq.as<float>();
  const int64_t n = param.master.numel();
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i] * grad_factor;
    m[i] = b1 * m[i] + (1.0f - b1) * gi;
    v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
    w[i] *= decay;
    w[i] -= step_size * m[i] / (std::sqrt(v[i]) * inv_sqrt_bc2 + step.eps);
  }
}

}  // namespace ptdp::kref
