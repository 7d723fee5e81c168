#pragma once
// What happens at the pipeline flush, after every microbatch's backward: the data-parallel
// gradient all-reduce (bucketed), the tied word embedding's gradient sum between the first and
// last stage, the global gradient norm, and the clipped optimizer step.
#include <vector>

#include <ptdp/layer_kernels.hpp>

#include "runtime/topology.hpp"

namespace ptdp {

// Sums gradients over the data-parallel group, packing them into buckets of at most
// bucket_elements so that many small tensors cost few collectives.
void all_reduce_data_parallel(LayerKernels& kernels, Communicator& data_group, const std::vector<ParamRef>& params,
                              int64_t bucket_elements);

// Sums the gradient of "embedding.word" over the embedding group (its copies on the first and
// last stage must stay equal).
void sync_tied_embedding(LayerKernels& kernels, Communicator& embedding_group, const std::vector<ParamRef>& params);

// L2 norm of the whole model's gradient. Each element counts once: tensors every TP rank holds
// whole count on TP rank 0, the last stage's copy of the word embedding does not count.
double global_grad_norm(LayerKernels& kernels, const ParallelGroups& groups, const GridPosition& me, int stages,
                        const std::vector<ParamRef>& params);

// Sums a host scalar over a group through device memory (communicators move the kernels'
// memory kind).
double all_reduce_scalar(LayerKernels& kernels, Communicator& group, double value, ReduceOp op);

}  // namespace ptdp
