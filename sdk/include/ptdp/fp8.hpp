#pragma once
// FP8 training (since ABI 1.7): what the core asks of a kernels plugin when precision.fp8 is
// "hybrid", and the arithmetic of scaling that every backend shares.
//
// Hybrid FP8 runs the three GEMMs of each linear layer of a transformer block (QKV, attention
// projection, FC1, FC2) on FP8 operands: activations and weights in E4M3 in the forward, output
// gradients in E5M2 in the backward (the input gradient is dY·W, the weight gradient dYᵀ·X).
// Each operand is multiplied by its scale, rounded to the format (nearest even, saturating at the
// format's largest finite value), multiplied in the GEMM with fp32 accumulation, and the product
// divided by the two scales. Everything that is not one of those GEMMs (embedding, LayerNorm,
// attention, GeLU, head, optimizer) stays in the activation type; master weights stay fp32.
//
// Scaling recipes:
// - Tensorwise ("current" scaling): each operand's scale comes from its own amax, the largest
//   |value| of the whole tensor at the moment it is cast. A tensor sharded over the
//   tensor-parallel group takes the group's amax (a Max all-reduce), so each rank scales as a
//   single rank would.
// - Delayed: each operand's scale comes from a history of the amaxes of earlier steps, which the
//   core keeps (reduced over the tensor- and data-parallel groups, so the same in every layout),
//   checkpoints, and writes into the scale tensors the block was bound to; the backend only
//   records amaxes and multiplies by the scales it is given.
#include <cmath>
#include <cstdint>
#include <limits>

#include "ptdp/precision.hpp"
#include "ptdp/tensor.hpp"

namespace ptdp {

enum class Fp8Scaling : uint8_t { Tensorwise = 0, Delayed = 1 };
enum class Fp8AmaxCompute : uint8_t { Max = 0, MostRecent = 1 };

// precision.fp8* of the manifest, as the core hands it to the kernels (KernelsBinding::fp8).
struct Fp8Recipe {
  bool enabled = false;  // "hybrid"
  Fp8Scaling scaling = Fp8Scaling::Tensorwise;
  int amax_history = 1024;                        // delayed: steps of amax kept
  Fp8AmaxCompute amax_compute = Fp8AmaxCompute::Max;  // delayed: max of the history, or its newest
  int margin = 0;                                 // scale = format max / amax / 2^margin
  int bf16_first_blocks = 0;  // the first and last blocks of the model that keep the activation
  int bf16_last_blocks = 0;   // type for their GEMMs (the embedding and head always do)

  // Whether the block of global index `layer` (of `layers`) runs its GEMMs in FP8.
  bool block_in_fp8(int layer, int layers) const {
    return enabled && layer >= bf16_first_blocks && layer < layers - bf16_last_blocks;
  }
};

// The largest finite values of the two formats (OCP FP8: E4M3 has no infinity, its all-ones
// pattern is NaN; E5M2 is IEEE-like).
inline constexpr float kE4M3Max = 448.0f;
inline constexpr float kE5M2Max = 57344.0f;

// The operands of one linear layer whose amax and scale are kept, the columns of a block's
// scaling tensors.
enum class Fp8Operand : int { Input = 0, Weight = 1, OutputGradient = 2 };
inline constexpr int kFp8Operands = 3;
// The linear layers of a block, the rows of its scaling tensors, in this order.
inline constexpr int kFp8BlockLinears = 4;
inline constexpr const char* kFp8BlockLinearNames[kFp8BlockLinears] = {"attn.qkv", "attn.proj", "mlp.fc1",
                                                                      "mlp.fc2"};
inline constexpr const char* kFp8OperandNames[kFp8Operands] = {"input", "weight", "output gradient"};

// The format an operand is cast to under the hybrid recipe, by its largest value.
inline float fp8_operand_max(Fp8Operand operand) {
  return operand == Fp8Operand::OutputGradient ? kE5M2Max : kE4M3Max;
}

// The scale that maps `amax` to the format's largest value, less `margin` powers of two. An
// amax of zero (an all-zero tensor, or no history yet) gives 1; a non-finite amax gives NaN, so
// that the tensor cast with it is NaN and the step's gradient norm says so; a scale too large for
// float is the largest float.
inline float fp8_scale(float amax, float format_max, int margin) {
  if (!std::isfinite(amax)) return std::numeric_limits<float>::quiet_NaN();
  if (amax <= 0.0f) return 1.0f;
  const double scale = std::ldexp(static_cast<double>(format_max) / amax, -margin);
  return scale > std::numeric_limits<float>::max() ? std::numeric_limits<float>::max() : static_cast<float>(scale);
}

// The largest |value| of a NaN-propagating running maximum: NaN once any value is NaN.
inline float amax_update(float amax, float value) {
  const float magnitude = std::fabs(value);
  if (std::isnan(amax) || std::isnan(magnitude)) return std::numeric_limits<float>::quiet_NaN();
  return magnitude > amax ? magnitude : amax;
}

}  // namespace ptdp
