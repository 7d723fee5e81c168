#pragma once
// Which layers a model chunk holds. The l layers are cut into p·v virtual stages of l/(p·v)
// consecutive layers; chunk c of stage s is virtual stage c·p + s (the paper's interleaving).
// The first virtual stage also holds the embedding, the last one the head.

namespace ptdp {

struct ChunkLayout {
  int virtual_stage = 0;
  int first_layer = 0;
  int num_layers = 0;
  bool has_embedding = false;
  bool has_head = false;
};

ChunkLayout chunk_layout(int layers, int stages, int chunks, int stage, int chunk);

}  // namespace ptdp
