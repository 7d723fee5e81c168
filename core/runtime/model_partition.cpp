#include "runtime/model_partition.hpp"

#include <ptdp/error.hpp>

namespace ptdp {

ChunkLayout chunk_layout(int layers, int stages, int chunks, int stage, int chunk) {
  const int virtual_stages = stages * chunks;
  PTDP_CHECK(layers % virtual_stages == 0, "layers must divide evenly over pipeline x virtual stages");
  ChunkLayout c;
  c.virtual_stage = chunk * stages + stage;
  c.num_layers = layers / virtual_stages;
  c.first_layer = c.virtual_stage * c.num_layers;
  c.has_embedding = c.virtual_stage == 0;
  c.has_head = c.virtual_stage == virtual_stages - 1;
  return c;
}

}  // namespace ptdp
