// The scaler: submits at most what the runs want, never beyond max_nodes, one pilot per gang,
// one-node runs packed together, and cancels only pending allocations whose demand is gone.
#include "server/pools/scaler.h"

#include <gtest/gtest.h>

#include "server/pools/slurm_output.h"

namespace ablate {
namespace {

const ScalerPool kPool{/*gpus_per_node=*/8, /*cpu_slots=*/2, /*max_nodes=*/4};

TEST(ScalerTest, NothingQueuedNothingHeldNothingToDo) {
  ScalerDecision d = ScalePool(kPool, {}, {});
  EXPECT_TRUE(d.submit.empty());
  EXPECT_TRUE(d.cancel.empty());
}

TEST(ScalerTest, PacksOneNodeRunsIntoWholeNodes) {
  // 8+4+4+2+2+2+1 GPUs = 23: three nodes by first fit decreasing (8 | 4 4 | 2 2 2 1).
  ScalerDecision d = ScalePool(kPool, {4, 2, 8, 2, 1, 4, 2}, {});
  EXPECT_EQ(d.wanted, (std::map<int, int>{{1, 3}}));
  EXPECT_EQ(d.submit, (std::map<int, int>{{1, 3}}));
}

TEST(ScalerTest, CpuRunsShareANodesSlots) {
  ScalerDecision d = ScalePool(kPool, {0, 0, 0, 0, 0, 0}, {});  // six runs, two slots per node
  EXPECT_EQ(d.submit, (std::map<int, int>{{1, 3}}));
}

TEST(ScalerTest, AGangGetsAnAllocationOfItsNodeCount) {
  ScalerDecision d = ScalePool(kPool, {16}, {});
  EXPECT_EQ(d.submit, (std::map<int, int>{{2, 1}}));
}

TEST(ScalerTest, WhatIsHeldCountsRunningAndPending) {
  std::vector<HeldAllocation> held = {{10, 1, false}, {11, 1, true}};
  ScalerDecision d = ScalePool(kPool, {8, 8, 8}, held);
  EXPECT_EQ(d.submit, (std::map<int, int>{{1, 1}}));
  EXPECT_TRUE(d.cancel.empty());
}

TEST(ScalerTest, NeverMoreThanMaxNodes) {
  // Six 1-node runs and a 2-node gang want 8 nodes; 4 may be held, one already is.
  ScalerDecision d = ScalePool(kPool, {8, 8, 8, 8, 8, 8, 16}, {{5, 1, false}});
  int nodes = 0;
  for (const auto& [n, count] : d.submit) nodes += n * count;
  EXPECT_EQ(nodes, 3);
  EXPECT_EQ(d.submit.at(1), 3);
  EXPECT_FALSE(d.submit.count(2));
}

TEST(ScalerTest, CancelsNewestPendingBeyondDemandNeverRunning) {
  std::vector<HeldAllocation> held = {{20, 1, false}, {21, 1, true}, {22, 1, true},
                                      {30, 2, true}};
  ScalerDecision d = ScalePool(kPool, {8}, held);
  EXPECT_TRUE(d.submit.empty());
  EXPECT_EQ(d.cancel, (std::vector<int64_t>{22, 21, 30}));
  // No demand at all: pending ones go, the running one stays (it leaves when idle).
  d = ScalePool(kPool, {}, {{20, 1, false}, {21, 1, true}});
  EXPECT_EQ(d.cancel, (std::vector<int64_t>{21}));
}

TEST(ScalerTest, CancelledPendingNodesFreeRoomUnderMaxNodes) {
  // A pending 2-node allocation nobody wants makes room for two 1-node ones.
  ScalerDecision d = ScalePool({8, 1, 2}, {8, 8}, {{40, 2, true}});
  EXPECT_EQ(d.cancel, (std::vector<int64_t>{40}));
  EXPECT_EQ(d.submit, (std::map<int, int>{{1, 2}}));
}

TEST(ScalerTest, GangsThatAreNotWholeNodesAreReportedNotAskedFor) {
  ScalerDecision d = ScalePool(kPool, {12, 8}, {});
  EXPECT_EQ(d.unplaceable, (std::vector<int>{12}));
  EXPECT_EQ(d.submit, (std::map<int, int>{{1, 1}}));
  EXPECT_EQ(NodesPerRun(kPool, 12), 0);
  EXPECT_EQ(NodesPerRun(kPool, 32), 4);
  EXPECT_EQ(NodesPerRun({0, 0, 1}, 0), 0);  // no CPU slots, no GPUs
}

TEST(ScalerTest, DecidesFromWhatSqueuePrinted) {
  // squeue's lines in the coordinator's format as Slurm 22.05 prints them (slurm_output_test):
  // a running 1-node pilot, a 2-node pilot pending on Resources, and one COMPLETING (on its way
  // out: it holds nothing).
  absl::StatusOr<std::vector<SlurmJob>> jobs = ParseSqueue(
      "5|RUNNING|None|1|9:41|n1|ablate-c1|ablate coordinator=c1 pool=lab nodes=1 sweep=2|0|gpu\n"
      "6|PENDING|Resources|2|5:00||ablate-c1|ablate coordinator=c1 pool=lab nodes=2 sweep=2|0|gpu\n"
      "4|COMPLETING|None|1|0:00|n2|ablate-c1|ablate coordinator=c1 pool=lab nodes=1 sweep=2|0|gpu\n");
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  std::vector<HeldAllocation> held = HeldAllocations(*jobs);
  ASSERT_EQ(held.size(), 2u);
  EXPECT_EQ(held[0].job_id, 5);
  EXPECT_FALSE(held[0].pending);
  EXPECT_EQ(held[1].nodes, 2);
  EXPECT_TRUE(held[1].pending);
  // Two one-node runs want two nodes: the running pilot is one, one more is asked for; the
  // 2-node pilot is no longer wanted and, pending, is cancelled (which frees room under
  // max_nodes 2 for the one-node pilot).
  ScalerDecision d = ScalePool({8, 1, 2}, {8, 8}, held);
  EXPECT_EQ(d.cancel, (std::vector<int64_t>{6}));
  EXPECT_EQ(d.submit, (std::map<int, int>{{1, 1}}));
  // The gang's demand comes back: the pending 2-node pilot is kept, nothing more fits.
  d = ScalePool({8, 1, 4}, {16, 8}, held);
  EXPECT_TRUE(d.cancel.empty());
  EXPECT_TRUE(d.submit.empty());
}

}  // namespace
}  // namespace ablate
