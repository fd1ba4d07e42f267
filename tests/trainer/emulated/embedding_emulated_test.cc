// The embedding backward's kernels (trainer/cuda/embedding_kernels.cuh), run on the CPU emulator
// of their primitives (gpu_emulator.h) with the plan BuildEmbeddingPlan cuts: the same bits as
// the host in the plan's order (tests/trainer/embedding_reference.h), and within float rounding
// of the CPU twin's scatter-add. Text-like ids (ids split into many segments), ids of exactly one
// and just over one segment, channels over one block with a partial last one, and partial-sum
// rows poisoned with NaN so that a row the merge reads before the first pass wrote it shows.
// The GPU test (tests/trainer/cuda_ops_test.cc) runs the same kernels on a device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "tests/trainer/embedding_reference.h"
#include "tests/trainer/emulated/gpu_emulator.h"
#include "trainer/cpu/embedding.h"
#include "trainer/cuda/embedding_kernels.cuh"

namespace ablate {
namespace {

namespace ek = cuda::embedding_kernels;
using emulated::EmulatedPrimitives;
using emulated::EmulationMode;
using emulated::Schedule;

std::vector<float> EmbedRandom(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// Runs both passes on the emulator; returns "" or what went wrong.
std::string EmulatedBackward(std::vector<float>& dtable, const std::vector<float>& dout,
                             const cuda::EmbeddingPlan& plan, int64_t n, int64_t c,
                             EmulationMode mode) {
  std::vector<int32_t> packed(static_cast<size_t>(cuda::PackedEmbeddingPlanInts(n)));
  int64_t ints = cuda::PackEmbeddingPlan(plan, packed.data());
  if (ints > int64_t(packed.size())) return "the packed plan overran its bound";
  cuda::DeviceEmbeddingPlan dp = cuda::DeviceEmbeddingPlanAt(packed.data(), plan);
  if (dp.partial_rows > cuda::EmbeddingPartialRows(n)) return "more partial rows than the bound";
  std::vector<float> partials(static_cast<size_t>(cuda::EmbeddingPartialRows(n) * c),
                              std::numeric_limits<float>::quiet_NaN());
  ek::BackwardArgs args{dtable.data(), dout.data(), partials.data(), dp, c};
  std::string error = emulated::Launch(
      dim3(unsigned(dp.segments), ek::ChannelBlocks(c), 1), ek::kThreads, 0,
      [&] { ek::SegmentSumKernel<EmulatedPrimitives>(args); }, mode);
  if (!error.empty() || dp.multi == 0) return error;
  return emulated::Launch(
      dim3(unsigned(dp.multi), ek::ChannelBlocks(c), 1), ek::kThreads, 0,
      [&] { ek::MergeSegmentsKernel<EmulatedPrimitives>(args); }, mode);
}

void CheckEmulatedBackward(const std::vector<int32_t>& idx, int64_t ve, int64_t c) {
  int64_t n = int64_t(idx.size());
  SCOPED_TRACE("N " + std::to_string(n) + ", C " + std::to_string(c));
  cuda::EmbeddingPlan plan = cuda::BuildEmbeddingPlan(idx.data(), n);
  std::vector<float> dout = EmbedRandom(size_t(n * c), 71), start = EmbedRandom(size_t(ve * c), 72);
  std::vector<float> ordered = start, twin = start;
  testing::EmbeddingBackwardInPlanOrder(ordered, dout, plan, c);
  cpu::embedding_backward(twin.data(), dout.data(), idx.data(), n, c);
  for (Schedule schedule : {Schedule::kRoundRobin, Schedule::kLowestFirst}) {
    std::vector<float> got = start;
    EmulationMode mode;
    mode.schedule = schedule;
    ASSERT_EQ(EmulatedBackward(got, dout, plan, n, c, mode), "");
    EXPECT_EQ(got, ordered) << "not the plan's order of sums";
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      worst = std::max(
          worst, double(std::fabs(got[i] - twin[i])) / std::max(1.0, double(std::fabs(twin[i]))));
    }
    EXPECT_LT(worst, 1e-5) << "against the CPU twin";
  }
}

TEST(EmbeddingEmulated, TextLikeIdsAreSplitAndMergedInThePlansOrder) {
  std::vector<int32_t> idx = testing::ZipfLikeIds(3000, 400, 81);
  cuda::EmbeddingPlan plan = cuda::BuildEmbeddingPlan(idx.data(), int64_t(idx.size()));
  ASSERT_GT(plan.multi_row.size(), 3u) << "the case must split ids";
  CheckEmulatedBackward(idx, 400, 40);
}

TEST(EmbeddingEmulated, SegmentEdgesAndAPartialChannelBlock) {
  const int32_t r = cuda::kEmbeddingSegmentRows;
  std::vector<int32_t> idx;
  // One segment exactly, just over one, three, and a single row.
  for (auto [id, rows] :
       {std::pair{3, r}, std::pair{1, r + 1}, std::pair{4, 2 * r + 1}, std::pair{0, 1}}) {
    idx.insert(idx.end(), size_t(rows), id);
  }
  std::mt19937 rng(82);
  std::shuffle(idx.begin(), idx.end(), rng);
  CheckEmulatedBackward(idx, 6, 257);
}

TEST(EmbeddingEmulated, PlanCutsSegmentsOfAtMostTheRowsInPositionOrder) {
  const int32_t r = cuda::kEmbeddingSegmentRows;
  std::vector<int32_t> idx = testing::ZipfLikeIds(5000, 300, 83);
  cuda::EmbeddingPlan plan = cuda::BuildEmbeddingPlan(idx.data(), int64_t(idx.size()));
  ASSERT_EQ(plan.seg_offsets.size(), plan.seg_row.size() + 1);
  ASSERT_EQ(plan.seg_slot.size(), plan.seg_row.size());
  ASSERT_EQ(plan.multi_slots.size(), plan.multi_row.size() + 1);
  EXPECT_EQ(plan.seg_offsets.front(), 0);
  EXPECT_EQ(plan.seg_offsets.back(), int32_t(idx.size()));
  int32_t next_slot = 0;
  size_t m = 0;
  for (size_t u = 0; u < plan.ids.size(); ++u) {
    // The segments of ids[u] cover exactly its rows, each of 1 to R rows.
    std::vector<size_t> segs;
    for (size_t s = 0; s < plan.seg_row.size(); ++s) {
      if (plan.seg_row[s] == plan.ids[u]) segs.push_back(s);
    }
    ASSERT_FALSE(segs.empty());
    EXPECT_EQ(plan.seg_offsets[segs.front()], plan.offsets[u]);
    EXPECT_EQ(plan.seg_offsets[segs.back() + 1], plan.offsets[u + 1]);
    for (size_t s : segs) {
      int32_t rows = plan.seg_offsets[s + 1] - plan.seg_offsets[s];
      EXPECT_GE(rows, 1);
      EXPECT_LE(rows, r);
    }
    int32_t count = plan.offsets[u + 1] - plan.offsets[u];
    if (count <= r) {
      EXPECT_EQ(segs.size(), 1u);
      EXPECT_EQ(plan.seg_slot[segs[0]], -1);
      continue;
    }
    ASSERT_LT(m, plan.multi_row.size());
    EXPECT_EQ(plan.multi_row[m], plan.ids[u]);
    EXPECT_EQ(plan.multi_slots[m], next_slot);
    for (size_t s : segs) EXPECT_EQ(plan.seg_slot[s], next_slot++);
    EXPECT_EQ(plan.multi_slots[m + 1], next_slot);
    ++m;
  }
  EXPECT_EQ(m, plan.multi_row.size());
  EXPECT_LE(next_slot, cuda::EmbeddingPartialRows(int64_t(idx.size())));
}

// The bounds hold where they are tightest: every id just over one segment (the most partial
// rows per row), and every row its own id (the most segments).
TEST(EmbeddingEmulated, PackedPlanAndPartialRowsStayInsideTheirBounds) {
  const int32_t r = cuda::kEmbeddingSegmentRows;
  for (int64_t n : {int64_t(r + 1), int64_t(10 * (r + 1)), int64_t(1000)}) {
    for (bool distinct : {false, true}) {
      std::vector<int32_t> idx(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) idx[size_t(i)] = int32_t(distinct ? i : i / (r + 1));
      cuda::EmbeddingPlan plan = cuda::BuildEmbeddingPlan(idx.data(), n);
      std::vector<int32_t> packed(static_cast<size_t>(cuda::PackedEmbeddingPlanInts(n) + 64));
      EXPECT_LE(cuda::PackEmbeddingPlan(plan, packed.data()), cuda::PackedEmbeddingPlanInts(n))
          << n;
      EXPECT_LE(plan.multi_slots.back(), cuda::EmbeddingPartialRows(n)) << n;
    }
  }
}

}  // namespace
}  // namespace ablate
