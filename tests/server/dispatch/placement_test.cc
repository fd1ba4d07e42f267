// PlanAssignments: priority then FIFO, backfill, CPU slots, datasets, max_concurrent, gangs, and
// the blocked, shuffled dispatch order of a sweep's runs.
#include "server/core/placement.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "server/core/run_order.h"

namespace ablate {
namespace {

NodeCapacity Node(std::string id, int gpus, int cpu, std::vector<std::string> datasets = {"d"}) {
  NodeCapacity n{std::move(id), gpus, {}, cpu, std::move(datasets), false, "", "", "", 0};
  for (int i = 0; i < gpus; ++i) n.free_gpus.push_back(i);
  return n;
}

QueuedRun R(int64_t id, int gpus, int priority = 0, int64_t sweep = 1, int max_concurrent = 0) {
  return {id, sweep, priority, gpus, "d", max_concurrent, false, 0, 0, "", 0};
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

// Issue 23: a run that asks for more GPUs than the connected nodes that may take it have, on one
// node or all together, says it is unschedulable (not "waiting for free GPUs" forever).
TEST(Placement, ARunNoConnectedNodeCanEverTakeIsUnschedulable) {
  PlanInput in;
  in.nodes = {Node("cpu", 0, 2)};
  QueuedRun gang = R(1, 2);
  gang.script = true;
  in.nodes[0].allow_scripts = true;
  in.queue = {gang, R(2, 2)};
  Plan p = PlanAssignments(in);
  EXPECT_TRUE(p.placements.empty());
  EXPECT_EQ(p.waiting.at(1),
            "unschedulable: needs 2 GPUs; the connected workers that can take it have CPU slots "
            "only (a torchrun gang on CPU: gpus_per_run: 0 with processes: N)");
  EXPECT_EQ(p.waiting.at(2),
            "unschedulable: needs 2 GPUs; the connected workers that can take it have CPU slots "
            "only");
  in.nodes = {Node("a", 4, 0), Node("b", 4, 0)};
  in.queue = {R(3, 16), R(4, 8)};
  p = PlanAssignments(in);
  EXPECT_EQ(p.waiting.at(3),
            "unschedulable: needs 16 GPUs; the connected workers that can take it have 8 in all "
            "(at most 4 on one node)");
  EXPECT_EQ(Placed(p), (std::vector<int64_t>{4})) << "8 GPUs: a gang of the two nodes";
  // Busy is not unschedulable: the same run waits while the GPUs are taken.
  in.nodes = {Node("a", 8, 0)};
  in.nodes[0].free_gpus.clear();
  in.queue = {R(5, 8)};
  EXPECT_EQ(PlanAssignments(in).waiting.at(5), "waiting for 8 free GPUs");
}

// Script runs (issue 14) go only to nodes started with --allow-scripts; others keep their runs
// but never take a script, and a script with nowhere to go says why.
TEST(Placement, ScriptRunsOnlyOnNodesThatAllowScripts) {
  PlanInput in;
  in.nodes = {Node("plain", 0, 2), Node("scripts", 0, 1)};
  in.nodes[1].allow_scripts = true;
  QueuedRun s1 = R(1, 0), s2 = R(2, 0), plain = R(3, 0);
  s1.script = s2.script = true;
  in.queue = {s1, s2, plain};
  Plan p = PlanAssignments(in);
  ASSERT_EQ(Placed(p), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(p.placements[0].nodes[0].worker_id, "scripts");
  EXPECT_EQ(p.placements[1].nodes[0].worker_id, "plain");
  EXPECT_EQ(p.waiting.at(2), "waiting for a free CPU slot");

  in.nodes = {Node("plain", 0, 2)};
  in.queue = {s1};
  p = PlanAssignments(in);
  EXPECT_TRUE(p.placements.empty());
  EXPECT_EQ(p.waiting.at(1),
            "no connected worker with dataset 'd' runs scripts (start ablate-worker with "
            "--allow-scripts)");
}

// One dispatched run: which sweep, variant and seed.
struct Dispatched {
  int64_t sweep = 0;
  int variant = 0;
  int seed = 0;
};

// The queue of a sweep of `variants` x `seeds` as the store holds it: run ids variant-major from
// `first_id` (submission order), each with its dispatch rank from `order_seed`.
std::vector<QueuedRun> SweepQueue(int64_t sweep, uint64_t order_seed, int variants, int seeds,
                                  int64_t first_id, int priority = 0) {
  std::vector<QueuedRun> queue;
  for (int v = 0; v < variants; ++v) {
    for (int seed = 0; seed < seeds; ++seed) {
      QueuedRun r = R(first_id + v * seeds + seed, 0, priority, sweep);
      r.dispatch_order = DispatchRank(order_seed, seed, v, variants);
      r.block = seed;
      queue.push_back(r);
    }
  }
  return queue;
}

// Dispatches `queue` on one CPU slot, one run per pass (the slot frees when the run ends), and
// returns the order the runs went out in.
std::vector<Dispatched> OneSlotOrder(std::vector<QueuedRun> queue, int seeds) {
  std::vector<Dispatched> order;
  while (!queue.empty()) {
    PlanInput in;
    in.nodes = {Node("w", 0, 1)};
    in.queue = queue;
    Plan p = PlanAssignments(in);
    if (p.placements.size() != 1u) {
      ADD_FAILURE() << "one slot places exactly one run per pass";
      break;
    }
    auto it = std::find_if(queue.begin(), queue.end(), [&](const QueuedRun& r) {
      return r.run_id == p.placements[0].run_id;
    });
    const int64_t first = it->sweep_id == 1 ? 1 : 1000;
    const int index = static_cast<int>(it->run_id - first);
    order.push_back({it->sweep_id, index / seeds, index % seeds});
    queue.erase(it);
  }
  return order;
}

// The variants of each block, in dispatch order.
std::vector<std::vector<int>> Blocks(const std::vector<Dispatched>& order, int variants) {
  std::vector<std::vector<int>> blocks;
  for (size_t i = 0; i < order.size(); ++i) {
    if (i % variants == 0) blocks.emplace_back();
    blocks.back().push_back(order[i].variant);
  }
  return blocks;
}

TEST(Placement, SixVariantsThreeSeedsGoOutInThreeShuffledBlocks) {
  constexpr int kVariants = 6, kSeeds = 3;
  const std::vector<Dispatched> order =
      OneSlotOrder(SweepQueue(1, /*order_seed=*/42, kVariants, kSeeds, 1), kSeeds);
  ASSERT_EQ(order.size(), 18u);
  for (size_t i = 0; i < order.size(); ++i) {
    EXPECT_EQ(order[i].seed, static_cast<int>(i) / kVariants) << "run " << i << " of the order";
  }
  const std::vector<std::vector<int>> blocks = Blocks(order, kVariants);
  ASSERT_EQ(blocks.size(), 3u);
  const std::vector<int> identity = {0, 1, 2, 3, 4, 5};
  int shuffled = 0;
  for (const std::vector<int>& block : blocks) {
    std::vector<int> sorted = block;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, identity) << "each block is a permutation of the six variants";
    shuffled += block != identity;
  }
  EXPECT_GE(shuffled, 2) << "blocks are shuffled, not in variant order";
  EXPECT_NE(blocks[0], blocks[1]);
  // The same sweep seed gives the same order; another seed another order.
  const std::vector<std::vector<int>> again =
      Blocks(OneSlotOrder(SweepQueue(1, 42, kVariants, kSeeds, 1), kSeeds), kVariants);
  EXPECT_EQ(again, blocks);
  const std::vector<std::vector<int>> other =
      Blocks(OneSlotOrder(SweepQueue(1, 43, kVariants, kSeeds, 1), kSeeds), kVariants);
  EXPECT_NE(other, blocks);
}

TEST(Placement, PriorityStillWinsOverTheBlockOrder) {
  // Sweep 2 is submitted after sweep 1: with equal priority it waits for all of sweep 1 (FIFO by
  // sweep); with a higher priority all of it goes first.
  for (int priority : {0, 5}) {
    std::vector<QueuedRun> queue = SweepQueue(1, 42, 6, 3, 1);
    for (const QueuedRun& r : SweepQueue(2, 7, 6, 3, 1000, priority)) queue.push_back(r);
    const std::vector<Dispatched> order = OneSlotOrder(queue, 3);
    ASSERT_EQ(order.size(), 36u);
    const int64_t first_sweep = priority > 0 ? 2 : 1;
    for (size_t i = 0; i < order.size(); ++i) {
      EXPECT_EQ(order[i].sweep, i < 18 ? first_sweep : 3 - first_sweep) << "priority " << priority;
    }
  }
}

TEST(Placement, ABlocksGpuRunsPreferTheModelItRunsOn) {
  PlanInput in;
  in.nodes = {Node("a", 8, 0), Node("b", 8, 0), Node("c", 8, 0)};
  in.nodes[0].gpu_model = "A100";
  in.nodes[1].gpu_model = "H100";
  in.nodes[2].gpu_model = "A100";
  // Block 0 of sweep 1 already runs on an H100 node; block 1 has nothing running yet.
  in.block_models[{1, 0}] = "H100";
  QueuedRun b0 = R(1, 4), b1_first = R(2, 4), b1_second = R(3, 4), b1_third = R(4, 8);
  b1_first.block = b1_second.block = b1_third.block = 1;
  b0.dispatch_order = 0;
  b1_first.dispatch_order = 1;
  b1_second.dispatch_order = 2;
  b1_third.dispatch_order = 3;
  in.queue = {b0, b1_first, b1_second, b1_third};
  Plan p = PlanAssignments(in);
  ASSERT_EQ(Placed(p), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(p.placements[0].nodes[0].worker_id, "b") << "block 0 stays on its H100 node";
  EXPECT_EQ(p.placements[1].nodes[0].worker_id, "a") << "block 1 starts on the first node";
  // b is half full now; block 1's second run still goes to an A100 like its first.
  EXPECT_EQ(p.placements[2].nodes[0].worker_id, "a");
  EXPECT_EQ(p.placements[3].nodes[0].worker_id, "c") << "a is full: the other A100 node";
  // A preference never makes a run wait: with only the H100 node free, block 1 goes there.
  PlanInput only_b;
  only_b.nodes = {Node("b", 8, 0)};
  only_b.nodes[0].gpu_model = "H100";
  only_b.block_models[{1, 1}] = "A100";
  only_b.queue = {b1_first};
  EXPECT_EQ(Placed(PlanAssignments(only_b)), (std::vector<int64_t>{2}));
}

TEST(RunOrder, ShuffleIsUnbiased) {
  // Where variant 0 lands in block 0 of a 4-variant sweep, over 8000 order seeds: each of the 4
  // positions should get 2000 +- a few standard deviations (sd = sqrt(8000 * 1/4 * 3/4) = 38.7).
  std::vector<int> count(4, 0);
  for (uint64_t seed = 0; seed < 8000; ++seed) {
    const std::vector<int> p = BlockPermutation(seed, 0, 4);
    ++count[std::find(p.begin(), p.end(), 0) - p.begin()];
  }
  for (int c : count) EXPECT_NEAR(c, 2000, 5 * 38.7);
  // Block k of the same seed is shuffled independently of block 0.
  std::set<std::vector<int>> distinct;
  for (int block = 0; block < 20; ++block) distinct.insert(BlockPermutation(9, block, 6));
  EXPECT_GT(distinct.size(), 15u);
}

TEST(RunOrder, DefaultOrderSeedIsAStableHashOfTheSpec) {
  EXPECT_EQ(DefaultOrderSeed("name: a"), DefaultOrderSeed("name: a"));
  EXPECT_NE(DefaultOrderSeed("name: a"), DefaultOrderSeed("name: b"));
  EXPECT_LT(DefaultOrderSeed("name: a"), int64_t{1} << 53);
}

}  // namespace
}  // namespace ablate
