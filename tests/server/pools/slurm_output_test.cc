// Slurm's output formats, parsed. The squeue and sacct texts were recorded from Slurm 22.05.8
// (Debian 12) running as tests/util/slurm_cluster sets it up, with the coordinator's format.
#include "server/pools/slurm_output.h"

#include <gtest/gtest.h>

namespace ablate {
namespace {

// Two 2-node pilots (one running, one waiting for it) and a 3-node job on a 2-node partition.
constexpr char kSqueue[] =
    "3|PENDING|Resources|2|10:00||ablate-c1|ablate coordinator=c1 pool=h100 nodes=2 sweep=3|0|gpu\n"
    "4|PENDING|PartitionNodeLimit|3|UNLIMITED||ablate-c1|(null)|0|gpu\n"
    "2|RUNNING|None|2|9:52|n[1-2]|ablate-c1|ablate coordinator=c1 pool=h100 nodes=2 sweep=3|0|gpu\n";

TEST(SqueueTest, ParsesEveryField) {
  absl::StatusOr<std::vector<SlurmJob>> jobs = ParseSqueue(kSqueue);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 3u);
  const SlurmJob& pending = (*jobs)[0];
  EXPECT_EQ(pending.id, 3);
  EXPECT_TRUE(pending.pending());
  EXPECT_FALSE(pending.running());
  EXPECT_EQ(pending.reason, "Resources");
  EXPECT_EQ(pending.nodes, 2);
  EXPECT_EQ(pending.time_left_s, 600);
  EXPECT_EQ(pending.node_list, "");
  EXPECT_EQ(pending.name, "ablate-c1");
  EXPECT_EQ(pending.partition, "gpu");
  const SlurmJob& never = (*jobs)[1];
  EXPECT_EQ(never.reason, "PartitionNodeLimit");
  EXPECT_EQ(never.time_left_s, std::nullopt);
  EXPECT_EQ(never.comment, "");
  const SlurmJob& running = (*jobs)[2];
  EXPECT_TRUE(running.running());
  EXPECT_EQ(running.time_left_s, 9 * 60 + 52);
  EXPECT_EQ(running.node_list, "n[1-2]");
  EXPECT_EQ(running.restart_count, 0);
  std::optional<PilotTag> tag = ParsePilotTag(running.comment);
  ASSERT_TRUE(tag.has_value());
  EXPECT_EQ(tag->coordinator, "c1");
  EXPECT_EQ(tag->pool, "h100");
  EXPECT_EQ(tag->nodes, 2);
  EXPECT_EQ(tag->sweep_id, 3);
}

TEST(SqueueTest, ARequeuedJobCountsItsRestarts) {
  // Recorded after `scontrol requeue 1`: pending again until the requeue delay has passed.
  absl::StatusOr<std::vector<SlurmJob>> jobs = ParseSqueue(
      "1|PENDING|BeginTime|1|30:00||ablate-e2e|ablate coordinator=e2e pool=lab nodes=1 sweep=1|1|"
      "gpu\n");
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].restart_count, 1);
  EXPECT_TRUE((*jobs)[0].pending());
  EXPECT_EQ((*jobs)[0].reason, "BeginTime");
}

TEST(SqueueTest, RecordedWithTheCoordinatorsOwnCall) {
  // Printed by SqueueArgs("ablate-rec") (squeue -h --name=ablate-rec -O kSqueueFormat) in
  // SlurmClusterTest.CoordinatorsSqueueAndSacctOutputsParse, Slurm 22.05.8: a pilot pending on
  // Resources with --time=5, a 3-node job on the 2-node partition without --time, and a
  // running pilot with --time=10:00. Another user's job is not listed (by job name).
  absl::StatusOr<std::vector<SlurmJob>> jobs = ParseSqueue(
      "2|PENDING|Resources|2|5:00||ablate-rec|ablate coordinator=rec pool=lab nodes=2 sweep=3|0|"
      "gpu\n"
      "3|PENDING|PartitionNodeLimit|3|UNLIMITED||ablate-rec|(null)|0|gpu\n"
      "1|RUNNING|None|1|10:00|n1|ablate-rec|ablate coordinator=rec pool=lab nodes=1 sweep=3|0|"
      "gpu\n");
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 3u);
  EXPECT_EQ((*jobs)[0].time_left_s, 300);
  EXPECT_EQ(ParsePilotTag((*jobs)[0].comment)->nodes, 2);
  EXPECT_EQ((*jobs)[1].time_left_s, std::nullopt);
  EXPECT_FALSE(ParsePilotTag((*jobs)[1].comment).has_value());
  EXPECT_TRUE((*jobs)[2].running());
  EXPECT_EQ((*jobs)[2].time_left_s, 600);
  EXPECT_EQ((*jobs)[2].node_list, "n1");
}

TEST(SqueueTest, EmptyOutputIsNoJobs) {
  absl::StatusOr<std::vector<SlurmJob>> jobs = ParseSqueue("");
  ASSERT_TRUE(jobs.ok());
  EXPECT_TRUE(jobs->empty());
}

TEST(SqueueTest, MalformedLineIsNamed) {
  absl::StatusOr<std::vector<SlurmJob>> jobs =
      ParseSqueue("12_3|PENDING|None|1|1:00||n|c|0|gpu|\n");
  ASSERT_FALSE(jobs.ok());
  EXPECT_NE(jobs.status().message().find("line 1"), std::string::npos) << jobs.status();
  EXPECT_NE(jobs.status().message().find("'12_3' is not a number"), std::string::npos);
  EXPECT_FALSE(ParseSqueue("12|RUNNING|None\n").ok());
}

TEST(SacctTest, FinalStatesOfAllocationsOnly) {
  // sacct -n -P -X -o JobID,State,ExitCode (and what it prints without -X), typed in the format
  // Slurm documents: the test cluster keeps no accounting (AccountingStorageType=
  // accounting_storage/none, as on many small clusters), so there is no recording of it.
  // What that cluster's sacct does print is below and in slurm_cluster_test.
  absl::StatusOr<std::map<int64_t, std::string>> states = ParseSacct(
      "41|COMPLETED|0:0\n42|CANCELLED by 0|0:15\n42.batch|CANCELLED|0:15\n43|NODE_FAIL|0:0\n"
      "44|PREEMPTED|0:15\n");
  ASSERT_TRUE(states.ok()) << states.status();
  EXPECT_EQ(*states, (std::map<int64_t, std::string>{
                         {41, "COMPLETED"}, {42, "CANCELLED"}, {43, "NODE_FAIL"}, {44, "PREEMPTED"}}));
}

TEST(SacctTest, RecognisesAClusterWithoutAccounting) {
  // Recorded (SlurmClusterTest.CoordinatorsSqueueAndSacctOutputsParse): SacctArgs' call exits 1
  // with nothing on stdout and this on stderr under AccountingStorageType=
  // accounting_storage/none. The coordinator then takes pilots that left the queue as ended.
  EXPECT_TRUE(AccountingDisabled("Slurm accounting storage is disabled\n"));
  EXPECT_FALSE(AccountingDisabled("sacct: error: Problem talking to the database\n"));
}

TEST(SlurmCommandsTest, OneCallForAllPilots) {
  EXPECT_EQ(SqueueArgs("ablate-c1"), (std::vector<std::string>{"squeue", "-h", "--name=ablate-c1",
                                                              "-O", kSqueueFormat}));
  EXPECT_EQ(SacctArgs({41, 42, 44}),
            (std::vector<std::string>{"sacct", "-n", "-P", "-X", "-j", "41,42,44", "-o",
                                      "JobID,State,ExitCode"}));
}

TEST(SbatchTest, ParsableJobId) {
  EXPECT_EQ(ParseSbatchJobId("17\n").value(), 17);
  EXPECT_EQ(ParseSbatchJobId("17;lab\n").value(), 17);
  EXPECT_FALSE(ParseSbatchJobId("sbatch: error: Batch job submission failed").ok());
}

TEST(SlurmTimeTest, EveryFormSlurmAccepts) {
  EXPECT_EQ(ParseSlurmTimeSeconds("90").value(), 90 * 60);
  EXPECT_EQ(ParseSlurmTimeSeconds("9:52").value(), 9 * 60 + 52);
  EXPECT_EQ(ParseSlurmTimeSeconds("2:00:00").value(), 7200);
  EXPECT_EQ(ParseSlurmTimeSeconds("1-12").value(), 36 * 3600);
  EXPECT_EQ(ParseSlurmTimeSeconds("1-00:30").value(), 24 * 3600 + 1800);
  EXPECT_EQ(ParseSlurmTimeSeconds("2-01:02:03").value(), 2 * 86400 + 3723);
  for (const char* bad : {"UNLIMITED", "INVALID", "", "1:2:3:4", "a-1", "-5"}) {
    EXPECT_FALSE(ParseSlurmTimeSeconds(bad).ok()) << bad;
  }
  EXPECT_EQ(SlurmTimeLeftSeconds("NOT_SET"), std::nullopt);
  EXPECT_EQ(FormatSlurmTime(2 * 86400 + 3723), "2-01:02:03");
  EXPECT_EQ(ParseSlurmTimeSeconds(FormatSlurmTime(7260)).value(), 7260);
}

TEST(PilotTagTest, RoundTripsAndRejectsForeignComments) {
  PilotTag tag{"deadbeef", "h100", 2, 7};
  std::optional<PilotTag> back = ParsePilotTag(FormatPilotTag(tag));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->coordinator, "deadbeef");
  EXPECT_EQ(back->pool, "h100");
  EXPECT_EQ(back->nodes, 2);
  EXPECT_EQ(back->sweep_id, 7);
  EXPECT_FALSE(ParsePilotTag("").has_value());
  EXPECT_FALSE(ParsePilotTag("someone else's job").has_value());
  EXPECT_FALSE(ParsePilotTag("ablate coordinator=c1 nodes=x pool=p").has_value());
}

}  // namespace
}  // namespace ablate
