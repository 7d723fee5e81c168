// parallel.data and the world: a manifest that leaves d out takes it from the world (the launch
// table's, or the one an external launcher reports), saying so; one that gives it is checked
// against the launcher's world when one started the job (a launch table that disagrees is then
// ignored, with a note), else against the launch table.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "manifest/manifest_loader.hpp"
#include "manifest_test_support.hpp"

namespace ptdp::test {
namespace {

using ::testing::ElementsAre;
using ::testing::StartsWith;

// kManifest without parallel.data: p 2 · t 2 on launch.nproc_per_node = 8.
const std::string kDataLeftOut = edited(kManifest, {{"data = 2\n", ""}});

// The loader's refusal of `manifest` under an external launcher's world, or "accepted".
std::string refusal_under(const std::string& manifest, const LaunchedWorld& world) {
  try {
    load_manifest_string(manifest, "t.toml", {}, world);
  } catch (const ManifestError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(WorldSize, LeftOutDataIsTheLaunchTablesWorldOverPipelineAndTensor) {
  const RunConfig c = load_manifest_string(kDataLeftOut, "t.toml");
  EXPECT_EQ(c.parallel.data, 2);
  EXPECT_EQ(c.parallel.microbatches(), 4);
  EXPECT_THAT(c.notes, ElementsAre("parallel.data = 2: the manifest leaves it out, so it is the world size "
                                   "nproc_per_node (8) * nnodes (1) = 8 over pipeline (2) * tensor (2)"));
  const RunConfig wider = load_manifest_string(kDataLeftOut, "t.toml", {"launch.nproc_per_node=16"});
  EXPECT_EQ(wider.parallel.data, 4);
  EXPECT_EQ(wider.parallel.world_size(), 16);
  EXPECT_EQ(wider.parallel.microbatches(), 2);
}

TEST(WorldSize, TheDefaultBucketGrowsWithTheDerivedData) {
  // Megatron-Core's max(40M, 1M * d); a given size stays as given.
  EXPECT_EQ(load_manifest_string(kDataLeftOut, "t.toml").parallel.bucket_elements, 40000000);
  const RunConfig wide = load_manifest_string(kDataLeftOut, "t.toml", {"launch.nproc_per_node=256", "parallel.global_batch=128"});
  EXPECT_EQ(wide.parallel.data, 64);
  EXPECT_EQ(wide.parallel.bucket_elements, 64000000);
  EXPECT_EQ(load_manifest_string(kDataLeftOut, "t.toml", {"launch.nproc_per_node=256", "parallel.global_batch=128",
                                                               "parallel.bucket_elements=5000"})
                .parallel.bucket_elements,
            5000);
}

TEST(WorldSize, LeftOutDataIsRefusedWhenPipelineTimesTensorDoesNotDivideTheWorld) {
  EXPECT_EQ(load_error(kDataLeftOut, {"launch.nproc_per_node=6"}),
            "--set launch.nproc_per_node=6: launch.nproc_per_node: parallel.data is left out, so it is the world size "
            "over pipeline * tensor, but pipeline (2) * tensor (2) = 4 does not divide the world size "
            "nproc_per_node (6) * nnodes (1) = 6");
  const std::string six = edited(kDataLeftOut, {{"nproc_per_node = 8", "nproc_per_node = 6"}});
  EXPECT_THAT(load_error(six), StartsWith("t.toml:" + std::to_string(line_of(six, "nproc_per_node = 6")) +
                                          ":1: launch.nproc_per_node: parallel.data is left out"));
  // The rules that use d see the derived one: 16 ranks give d = 4, which does not divide a batch of 6.
  EXPECT_EQ(load_error(kDataLeftOut, {"launch.nproc_per_node=16", "parallel.global_batch=6"}),
            "--set parallel.global_batch=6: parallel.global_batch: global_batch (6) must be divisible by "
            "micro_batch * data (1 * 4 = 4)");
}

TEST(WorldSize, AnExternalLaunchersWorldDecidesLeftOutData) {
  // The launch table (8 ranks) is not the world srun started.
  const RunConfig c = load_manifest_string(kDataLeftOut, "t.toml", {}, LaunchedWorld{"srun", 16});
  EXPECT_EQ(c.parallel.data, 4);
  EXPECT_NO_THROW(check_world_size(c, 16));
  EXPECT_THAT(c.notes, ElementsAre("parallel.data = 4: the manifest leaves it out, so it is the world size 16 that "
                                   "srun reports over pipeline (2) * tensor (2)"));
  const std::string error = refusal_under(kDataLeftOut, LaunchedWorld{"torchrun", 6});
  EXPECT_THAT(error, StartsWith("t.toml:"));
  EXPECT_THAT(error, ::testing::EndsWith(
                         ": parallel.pipeline: parallel.data is left out, so it is the world size over pipeline * "
                         "tensor, but pipeline (2) * tensor (2) = 4 does not divide the world size 6 that torchrun "
                         "reports"));
}

TEST(WorldSize, GivenDataIsCheckedAgainstTheLaunchersWorldAndALaunchTableThatDisagreesIsIgnored) {
  // torchrun started 4 ranks of p 2 · t 2 · d 1; the manifest's table says 8 (it was refused).
  const RunConfig c = load_manifest_string(kManifest, "t.toml", {"parallel.data=1"}, LaunchedWorld{"torchrun", 4});
  EXPECT_EQ(c.parallel.data, 1);
  EXPECT_NO_THROW(check_world_size(c, 4));
  EXPECT_THAT(c.notes, ElementsAre("launch.nproc_per_node and nnodes (nproc_per_node (8) * nnodes (1) = 8) are "
                                   "ignored: torchrun started 4 ranks, and its world is the job's"));
  // A table that agrees is worth no note.
  EXPECT_TRUE(load_manifest_string(kManifest, "t.toml", {}, LaunchedWorld{"srun", 8}).notes.empty());
  // A layout that does not fill the launcher's world is refused naming the launcher.
  const std::string error = refusal_under(kManifest, LaunchedWorld{"srun", 16});
  EXPECT_THAT(error, ::testing::EndsWith("pipeline (2) * tensor (2) * data (2) = 8 must equal the world size 16 "
                                         "that srun reports"));
  // Without a launcher the table is the world, as before.
  EXPECT_THAT(load_error(kManifest, {"launch.nproc_per_node=16"}),
              ::testing::HasSubstr("pipeline (2) * tensor (2) * data (2) = 8 must equal the world size "
                                   "nproc_per_node (16) * nnodes (1) = 16"));
}

}  // namespace
}  // namespace ptdp::test
