#include "manifest/world_size.hpp"

#include <fmt/format.h>

#include <cstdint>

#include "manifest/manifest_loader.hpp"

namespace ptdp {

void settle_data_parallel(RunConfig& c, const ManifestLocator& at, bool data_given,
                          const std::optional<LaunchedWorld>& launched) {
  auto& par = c.parallel;
  const int64_t p = par.pipeline, t = par.tensor;
  const int64_t table_world = int64_t{c.launch.nproc_per_node} * c.launch.nnodes;
  const std::string table_text =
      fmt::format("nproc_per_node ({}) * nnodes ({}) = {}", c.launch.nproc_per_node, c.launch.nnodes, table_world);
  if (data_given && launched) {
    // The launcher's world is the job's: the launch table describes what ptdp-host would start
    // itself, and under torchrun, mpirun or srun it started nothing. A table that disagrees is
    // ignored, and the note says so, rather than refusing a job the launcher has already placed.
    const int64_t d = par.data;
    if (p * t * d != launched->size)
      at.fail(at.blame({"parallel.pipeline", "parallel.tensor", "parallel.data"}),
              fmt::format("pipeline ({}) * tensor ({}) * data ({}) = {} must equal the world size {} that {} reports",
                          p, t, d, p * t * d, launched->size, launched->launcher));
    if (table_world != launched->size)
      c.notes.push_back(fmt::format("launch.nproc_per_node and nnodes ({}) are ignored: {} started {} ranks, "
                                    "and its world is the job's",
                                    table_text, launched->launcher, launched->size));
    return;
  }
  if (data_given) {
    const int64_t d = par.data;
    if (p * t * d != table_world)
      at.fail(at.blame({"launch.nproc_per_node", "launch.nnodes", "parallel.pipeline", "parallel.tensor",
                        "parallel.data"}),
              fmt::format("pipeline ({}) * tensor ({}) * data ({}) = {} must equal the world size {}", p, t, d,
                          p * t * d, table_text));
    return;
  }
  // An external launcher's world is the job's, whatever the launch table says: a manifest that
  // leaves d to the world needs no launch table to run under one.
  const int64_t world = launched ? launched->size : table_world;
  const std::string world_text =
      launched ? fmt::format("{} that {} reports", world, launched->launcher) : table_text;
  if (world % (p * t) != 0) {
    const std::string reason =
        fmt::format("parallel.data is left out, so it is the world size over pipeline * tensor, but pipeline ({}) * "
                    "tensor ({}) = {} does not divide the world size {}",
                    p, t, p * t, world_text);
    if (launched) at.fail(at.blame({"parallel.pipeline", "parallel.tensor"}), reason);
    at.fail(at.blame({"launch.nproc_per_node", "launch.nnodes", "parallel.pipeline", "parallel.tensor"}), reason);
  }
  par.data = static_cast<int>(world / (p * t));
  c.notes.push_back(fmt::format("parallel.data = {}: the manifest leaves it out, so it is the world size {} over "
                                "pipeline ({}) * tensor ({})",
                                par.data, world_text, p, t));
}

void check_world_size(const RunConfig& c, int world_size) {
  const auto& par = c.parallel;
  if (int64_t{par.pipeline} * par.tensor * par.data != world_size)
    throw ManifestError(fmt::format(
        "{}: parallel: pipeline ({}) * tensor ({}) * data ({}) = {} does not match the world size {}", c.source,
        par.pipeline, par.tensor, par.data, int64_t{par.pipeline} * par.tensor * par.data, world_size));
}

}  // namespace ptdp
