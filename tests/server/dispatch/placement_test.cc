// PlanAssignments: priority then FIFO, backfill, CPU slots, datasets, max_concurrent, gangs.
#include "server/core/placement.h"

#include <gtest/gtest.h>

namespace ablate {
namespace {

NodeCapacity Node(std::string id, int gpus, int cpu, std::vector<std::string> datasets = {"d"}) {
  NodeCapacity n{std::move(id), gpus, {}, cpu, std::move(datasets), "", "", 0};
  for (int i = 0; i < gpus; ++i) n.free_gpus.push_back(i);
  return n;
}

QueuedRun R(int64_t id, int gpus, int priority = 0, int64_t sweep = 1, int max_concurrent = 0) {
  return {id, sweep, priority, gpus, "d", max_concurrent, "", 0};
}

std::vector<int64_t> Placed(const Plan& p) {
  std::vector<int64_t> ids;
  for (const Placement& pl : p.placements) ids.push_back(pl.run_id);
  return ids;
}

TEST(Placement, PriorityThenFifo) {
  PlanInput in;
  in.nodes = {Node("w", 8, 0)};
  in.queue = {R(3, 4), R(1, 4), R(2, 4, /*priority=*/5)};
  Plan p = PlanAssignments(in);
  EXPECT_EQ(Placed(p), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(p.waiting.at(3), "waiting for 4 free GPUs");
  EXPECT_EQ(p.placements[0].nodes[0].gpus, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(p.placements[1].nodes[0].gpus, (std::vector<int>{4, 5, 6, 7}));
}

TEST(Placement, BackfillsSmallerRuns) {
  PlanInput in;
  in.nodes = {Node("w", 8, 0)};
  in.nodes[0].free_gpus = {0, 1};
  in.queue = {R(1, 8, 1), R(2, 2)};
  EXPECT_EQ(Placed(PlanAssignments(in)), (std::vector<int64_t>{2}));
}

TEST(Placement, CpuSlots) {
  PlanInput in;
  in.nodes = {Node("a", 0, 2), Node("b", 0, 1)};
  in.queue = {R(1, 0), R(2, 0), R(3, 0), R(4, 0)};
  Plan p = PlanAssignments(in);
  EXPECT_EQ(Placed(p), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(p.placements[2].nodes[0].worker_id, "b");
  EXPECT_TRUE(p.placements[0].nodes[0].gpus.empty());
  EXPECT_EQ(p.waiting.at(4), "waiting for a free CPU slot");
}

TEST(Placement, OnlyNodesWithTheDataset) {
  PlanInput in;
  in.nodes = {Node("a", 0, 4, {"other"}), Node("b", 0, 1, {"d"})};
  in.queue = {R(1, 0), R(2, 0)};
  QueuedRun missing = R(3, 0);
  missing.dataset = "fineweb10B";
  in.queue.push_back(missing);
  Plan p = PlanAssignments(in);
  ASSERT_EQ(Placed(p), (std::vector<int64_t>{1}));
  EXPECT_EQ(p.placements[0].nodes[0].worker_id, "b");
  EXPECT_EQ(p.waiting.at(3), "no connected worker has dataset 'fineweb10B'");
}

TEST(Placement, MaxConcurrentPerSweep) {
  PlanInput in;
  in.nodes = {Node("w", 0, 8)};
  in.active_per_sweep[1] = 1;
  in.queue = {R(1, 0, 0, 1, 2), R(2, 0, 0, 1, 2), R(3, 0, 0, 2, 1), R(4, 0, 0, 2, 1)};
  Plan p = PlanAssignments(in);
  EXPECT_EQ(Placed(p), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(p.waiting.at(2), "sweep is at max_concurrent 2");
}

TEST(Placement, GangTakesWholeIdleNodesAllOrNothing) {
  PlanInput in;
  in.nodes = {Node("a", 8, 0), Node("b", 8, 0), Node("c", 8, 0)};
  in.nodes[1].free_gpus.pop_back();  // b is partly busy
  in.queue = {R(1, 16), R(2, 16)};
  Plan p = PlanAssignments(in);
  ASSERT_EQ(Placed(p), (std::vector<int64_t>{1}));
  ASSERT_EQ(p.placements[0].nodes.size(), 2u);
  EXPECT_EQ(p.placements[0].nodes[0].worker_id, "a");
  EXPECT_EQ(p.placements[0].nodes[1].worker_id, "c");
  EXPECT_EQ(p.placements[0].nodes[1].gpus.size(), 8u);
  EXPECT_EQ(p.waiting.at(2), "waiting for 16 free GPUs");
}

}  // namespace
}  // namespace ablate
