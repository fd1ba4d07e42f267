// The pools file (--pools): the issue's example reads as written; every mistake is named with
// file:line:column and the key, unknown keys with the closest valid names.
#include "server/pools/pool_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ablate {
namespace {

using ::testing::HasSubstr;

constexpr char kExample[] = R"(pools:
  - name: h100
    kind: slurm
    partition: gpu
    account: speedrun        # optional
    qos: normal              # optional
    gpus_per_node: 8
    gres: gpu:8              # what to ask for per node
    max_nodes: 4             # never hold more than this
    time_limit: 2:00:00
    idle_exit: 5m            # a pilot with no work for this long exits
    sbatch_args: []          # passed through
    worker: {binary: /opt/ablate/bin/ablate-worker, work_dir: /scratch/ablate, data_dir: /data/datasets}
)";

TEST(PoolConfigTest, ReadsTheExampleOfTheIssue) {
  absl::StatusOr<std::vector<PoolConfig>> pools = ParsePoolsConfig(kExample, "pools.yaml");
  ASSERT_TRUE(pools.ok()) << pools.status();
  ASSERT_EQ(pools->size(), 1u);
  const PoolConfig& p = (*pools)[0];
  EXPECT_EQ(p.name, "h100");
  EXPECT_EQ(p.partition, "gpu");
  EXPECT_EQ(p.account, "speedrun");
  EXPECT_EQ(p.qos, "normal");
  EXPECT_EQ(p.gpus_per_node, 8);
  EXPECT_EQ(p.gres, "gpu:8");
  EXPECT_EQ(p.max_nodes, 4);
  EXPECT_EQ(p.time_limit_s, 7200);
  EXPECT_EQ(p.idle_exit_ms, 300000);
  EXPECT_EQ(p.signal_before_s, 120);
  EXPECT_TRUE(p.sbatch_args.empty());
  EXPECT_EQ(p.worker.binary, "/opt/ablate/bin/ablate-worker");
  EXPECT_EQ(p.worker.work_dir, "/scratch/ablate");
  EXPECT_EQ(p.worker.data_dir, "/data/datasets");
  EXPECT_EQ(p.worker.cpu_slots, 1);
}

TEST(PoolConfigTest, DefaultsOfOptionalKeys) {
  absl::StatusOr<std::vector<PoolConfig>> pools = ParsePoolsConfig(
      "pools:\n- {name: cpu, kind: slurm, partition: debug, worker: {work_dir: /w}}\n"
      "- {name: a100, kind: slurm, partition: gpu, gpus_per_node: 4, worker: {work_dir: /w,"
      " cpu_slots: 0, args: [--grace-ms, '5000']}, sbatch_args: [--exclusive]}\n",
      "p.yaml");
  ASSERT_TRUE(pools.ok()) << pools.status();
  EXPECT_EQ((*pools)[0].gres, "");
  EXPECT_EQ((*pools)[0].gpus_per_node, 0);
  EXPECT_EQ((*pools)[0].max_nodes, 1);
  EXPECT_EQ((*pools)[0].time_limit_s, 0);
  EXPECT_EQ((*pools)[0].worker.binary, "ablate-worker");
  EXPECT_EQ((*pools)[1].gres, "gpu:4");
  EXPECT_EQ((*pools)[1].worker.cpu_slots, 0);
  EXPECT_EQ((*pools)[1].worker.args, (std::vector<std::string>{"--grace-ms", "5000"}));
  EXPECT_EQ((*pools)[1].sbatch_args, (std::vector<std::string>{"--exclusive"}));
}

std::string ErrorOf(const std::string& yaml) {
  absl::StatusOr<std::vector<PoolConfig>> pools = ParsePoolsConfig(yaml, "pools.yaml");
  EXPECT_FALSE(pools.ok()) << yaml;
  EXPECT_EQ(pools.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(pools.status().message());
}

TEST(PoolConfigTest, EveryProblemWithItsPosition) {
  std::string e = ErrorOf(
      "pools:\n"
      "  - name: h100\n"
      "    kind: kubernetes\n"
      "    partiton: gpu\n"
      "    max_nodes: 0\n"
      "    time_limit: soon\n"
      "    idle_exit: 5 minutes\n"
      "    worker: {work_dir: scratch, data_dir: data, token_file: ./worker.token,\n"
      "             binary: bin/ablate-worker}\n");
  EXPECT_THAT(e, HasSubstr("pools.yaml:2:5: pools[0].partition: is required"));
  EXPECT_THAT(e, HasSubstr("pools.yaml:3:11: pools[0].kind: unknown pool kind 'kubernetes'"));
  EXPECT_THAT(e, HasSubstr("pools.yaml:4:5: pools[0].partiton: unknown key 'partiton'; did you "
                           "mean 'partition'?"));
  EXPECT_THAT(e, HasSubstr("pools.yaml:5:16: pools[0].max_nodes:"));
  EXPECT_THAT(e, HasSubstr("pools.yaml:6:17: pools[0].time_limit: 'soon' is not a Slurm time"));
  EXPECT_THAT(e, HasSubstr("pools.yaml:7:16: pools[0].idle_exit: '5 minutes' is not a duration"));
  EXPECT_THAT(e, HasSubstr("pools.yaml:8:24: pools[0].worker.work_dir: must be an absolute path"));
  EXPECT_THAT(e, HasSubstr("pools.yaml:8:43: pools[0].worker.data_dir: must be an absolute path"));
  EXPECT_THAT(e, HasSubstr("pools.yaml:8:61: pools[0].worker.token_file: must be an absolute "
                           "path"));
  EXPECT_THAT(e, HasSubstr("pools.yaml:9:22: pools[0].worker.binary: must be a name on the "
                           "nodes' $PATH or an absolute path"));
}

TEST(PoolConfigTest, WholeFileMistakes) {
  EXPECT_THAT(ErrorOf("pool: []\n"), HasSubstr("unknown key 'pool'; did you mean 'pools'?"));
  EXPECT_THAT(ErrorOf("pools: []\n"), HasSubstr("pools.yaml:1:8: pools: expected a list of at "
                                                "least one pool"));
  EXPECT_THAT(ErrorOf("pools:\n  - name: a\n    kind: slurm\n    partition: p\n"),
              HasSubstr("pools[0].worker: is required"));
  EXPECT_THAT(ErrorOf("pools: [\n"), HasSubstr("pools.yaml:"));
  EXPECT_THAT(
      ErrorOf("pools:\n- {name: a, kind: slurm, partition: p, worker: {work_dir: /w}}\n"
              "- {name: a, kind: slurm, partition: q, worker: {work_dir: /w}}\n"),
      HasSubstr("pools.yaml:3:10: pools[1].name: pool 'a' is defined twice"));
}

TEST(PoolConfigTest, ContainerKeys) {
  absl::StatusOr<std::vector<PoolConfig>> pools = ParsePoolsConfig(
      "pools:\n"
      "- name: h100\n  kind: slurm\n  partition: gpu\n  worker: {work_dir: /w}\n"
      "  container:\n    runtime: pyxis\n    image: nvcr.io#org/ablate:0.1.0\n"
      "    mounts: [/data, /srv/tok:/tok:ro]\n    args: [--container-writable]\n"
      "- {name: cpu, kind: slurm, partition: debug, worker: {work_dir: /w},"
      " container: {runtime: apptainer, image: 'docker://ablate:0.1.0'}}\n"
      "- {name: bare, kind: slurm, partition: debug, worker: {work_dir: /w}}\n",
      "p.yaml");
  ASSERT_TRUE(pools.ok()) << pools.status();
  const PoolContainerConfig& c = (*pools)[0].container;
  EXPECT_EQ(c.runtime, ContainerRuntime::kPyxis);
  EXPECT_EQ(c.image, "nvcr.io#org/ablate:0.1.0");
  EXPECT_EQ(c.mounts, (std::vector<std::string>{"/data", "/srv/tok:/tok:ro"}));
  EXPECT_EQ(c.args, (std::vector<std::string>{"--container-writable"}));
  EXPECT_EQ((*pools)[1].container.runtime, ContainerRuntime::kApptainer);
  EXPECT_EQ((*pools)[1].container.image, "docker://ablate:0.1.0");
  EXPECT_EQ((*pools)[2].container.runtime, ContainerRuntime::kNone);
}

TEST(PoolConfigTest, ContainerMistakesNameTheField) {
  const std::string head =
      "pools:\n- name: a\n  kind: slurm\n  partition: p\n  worker: {work_dir: /w}\n";
  EXPECT_THAT(ErrorOf(head + "  container: {image: /i.sqsh}\n"),
              HasSubstr("pools.yaml:6:14: pools[0].container.runtime: is required"));
  EXPECT_THAT(ErrorOf(head + "  container: {runtime: docker, image: /i}\n"),
              HasSubstr("pools.yaml:6:24: pools[0].container.runtime: unknown container runtime "
                        "'docker'; use pyxis or apptainer"));
  EXPECT_THAT(ErrorOf(head + "  container: {runtime: pyxis}\n"),
              HasSubstr("pools[0].container.image: is required"));
  EXPECT_THAT(ErrorOf(head + "  container: {runtime: pyxis, image: ''}\n"),
              HasSubstr("pools[0].container.image: must not be empty"));
  EXPECT_THAT(ErrorOf(head + "  container: {runtime: pyxis, image: ablate.sqsh}\n"),
              HasSubstr("pools.yaml:6:38: pools[0].container.image: 'ablate.sqsh' is a relative "
                        "path: give the squashfs file by its absolute path"));
  EXPECT_THAT(ErrorOf(head + "  container: {runtime: apptainer, image: images/a.sif}\n"),
              HasSubstr("pools[0].container.image: 'images/a.sif' is neither an absolute path"));
  EXPECT_THAT(ErrorOf(head + "  container: {runtime: pyxis, imgae: /i}\n"),
              HasSubstr("pools[0].container.imgae: unknown key 'imgae'; did you mean 'image'?"));
  EXPECT_THAT(ErrorOf(head + "  container: /i.sqsh\n"),
              HasSubstr("pools[0].container: expected a map, got '/i.sqsh'"));
  std::string e = ErrorOf(head +
                          "  container:\n    runtime: pyxis\n    image: /i.sqsh\n"
                          "    mounts: [/a:/b:rx, 'data:/data', '/a,/b', /a:/b:ro:x]\n");
  EXPECT_THAT(e, HasSubstr("pools.yaml:9:14: pools[0].container.mounts[0]: '/a:/b:rx': unknown "
                           "mount option 'rx'; use ro or rw"));
  EXPECT_THAT(e, HasSubstr("pools[0].container.mounts[1]: 'data:/data': 'data' is not an "
                           "absolute path"));
  EXPECT_THAT(e, HasSubstr("pools[0].container.mounts[2]: '/a,/b' contains a comma"));
  EXPECT_THAT(e, HasSubstr("pools[0].container.mounts[3]: '/a:/b:ro:x' is not SRC:DST[:ro|rw]"));
  EXPECT_THAT(ErrorOf(head + "  container: {runtime: pyxis, image: /i, mounts: /data}\n"),
              HasSubstr("pools[0].container.mounts:"));
}

// Durations follow the one grammar (common/spec/duration.h): a bare number was seconds here and
// steps on ablate-train's command line, so it is refused, saying what to write; the pools file's
// maps are read with the one CheckedEntries (common/spec/checked_entries.h), key cap included.
TEST(PoolConfigTest, DurationsNeedAUnitAndMapsAreCapped) {
  const std::string pool =
      "pools:\n  - {name: a, kind: slurm, partition: p, worker: {work_dir: /w},\n";
  EXPECT_THAT(ErrorOf(pool + "     idle_exit: 300}\n"),
              HasSubstr("pools.yaml:3:17: pools[0].idle_exit: '300' has no unit; write 300s for "
                        "seconds"));
  EXPECT_THAT(ErrorOf(pool + "     signal_before: 0s}\n"),
              HasSubstr("pools[0].signal_before: must be positive"));
  absl::StatusOr<std::vector<PoolConfig>> ok =
      ParsePoolsConfig(pool + "     idle_exit: 1.5m, signal_before: 90s}\n", "pools.yaml");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ((*ok)[0].idle_exit_ms, 90000);
  EXPECT_EQ((*ok)[0].signal_before_s, 90);
  std::string many = "pools:\n  - name: a\n";
  for (int i = 0; i < 65; ++i) many += "    k" + std::to_string(i) + ": 1\n";
  EXPECT_THAT(ErrorOf(many),
              HasSubstr("pools.yaml:2:5: pools[0]: has 66 keys; valid keys: name, "));
  EXPECT_THAT(ErrorOf(pool + "     name: b}\n"),
              HasSubstr("pools[0].name: duplicate key 'name' (first at line 2)"));
}

}  // namespace
}  // namespace ablate
