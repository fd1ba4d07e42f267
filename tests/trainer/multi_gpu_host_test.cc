// The host side of multi-GPU and multi-node training, on the CPU: --gpus lists, the NCCL id's
// file format, how distributed Muon deals out and gathers its matrices (the layout the CUDA
// backend shares with the CPU twin), and the options a multi-GPU run is refused for before any
// work.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <thread>
#include <vector>

#include "tests/trainer/train_fixture.h"
#include "trainer/collectives/in_process_communicator.h"
#include "trainer/collectives/nccl_id.h"
#include "trainer/optim/muon.h"
#include "trainer/tools/gpu_list.h"
#include "trainer/train/trainer.h"

namespace ablate {
namespace {

using J = nlohmann::json;

TEST(GpuList, RangesAndLists) {
  EXPECT_EQ(*ParseGpuList("0"), (std::vector<int>{0}));
  EXPECT_EQ(*ParseGpuList("0-7"), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(*ParseGpuList("0,2,4"), (std::vector<int>{0, 2, 4}));
  EXPECT_EQ(*ParseGpuList("4-5,0"), (std::vector<int>{4, 5, 0}));
  for (const char* bad : {"", "a", "0,", ",1", "1-", "3-1", "0,0", "0-2,1", "-1", "1.5"}) {
    Result<std::vector<int>> r = ParseGpuList(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.error().message.find("--gpus"), std::string::npos) << bad;
    }
  }
}

std::string SomeId() {
  std::string id(kNcclIdBytes, '\0');
  for (size_t i = 0; i < id.size(); ++i) id[i] = char(i * 37 + 11);
  return id;
}

TEST(NcclId, HexRoundTrip) {
  std::string id = SomeId();
  std::string hex = EncodeNcclId(id);
  EXPECT_EQ(hex.size(), 256u);
  EXPECT_EQ(hex.substr(0, 4), "0b30");
  EXPECT_EQ(*DecodeNcclId(" " + hex + "\n"), id);
  EXPECT_FALSE(DecodeNcclId(hex.substr(2)).ok());
  std::string bad = hex;
  bad[7] = 'g';
  EXPECT_FALSE(DecodeNcclId(bad).ok());
}

TEST(NcclId, FileIsWrittenWholeAndWaitedFor) {
  testing::TempDir dir;
  std::string path = dir.File("nccl_id");
  Result<std::string> missing = ReadNcclIdFile(path, std::chrono::milliseconds(0));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("does not exist"), std::string::npos);
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    ASSERT_TRUE(WriteNcclIdFile(path, SomeId()).ok());
  });
  Result<std::string> read = ReadNcclIdFile(path, std::chrono::seconds(10));
  writer.join();
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(*read, SomeId());
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  std::ofstream(path) << "not an id\n";
  EXPECT_FALSE(ReadNcclIdFile(path, std::chrono::milliseconds(0)).ok());
}

std::vector<MuonMatrix> Matrices() {
  // Shapes like a block's: qkv slices, proj, fc (4d × d), mlp proj (d × 4d); 7 matrices so
  // that the last round is short for world 3 and 4.
  std::vector<MuonMatrix> m;
  int64_t off = 0;
  for (auto [r, c] : std::vector<std::pair<int64_t, int64_t>>{
           {8, 8}, {8, 8}, {8, 8}, {8, 8}, {32, 8}, {8, 32}, {8, 8}}) {
    m.push_back({off, r, c});
    off += r * c + 3;  // gaps, as the padded device layout has
  }
  return m;
}

TEST(MuonGatherLayout, DealsRoundRobinIntoDisjointSlots) {
  std::vector<MuonMatrix> m = Matrices();
  for (int world : {1, 2, 3, 4, 8}) {
    MuonGatherLayout g = MuonGatherLayout::Make(m, world);
    ASSERT_EQ(g.round_offsets.size(), (m.size() + world - 1) / world) << world;
    std::vector<int> used(size_t(g.width * world), 0);
    for (int64_t i = 0; i < int64_t(m.size()); ++i) {
      EXPECT_EQ(g.Owner(i), int(i % world));
      EXPECT_EQ(g.GatheredOffset(i), g.Owner(i) * g.width + g.LocalOffset(i));
      for (int64_t k = 0; k < m[i].rows * m[i].cols; ++k) ++used[size_t(g.GatheredOffset(i) + k)];
    }
    for (int u : used) EXPECT_LE(u, 1) << "world " << world << ": two updates share a slot";
  }
  // World 3: rounds {0,1,2} {3,4,5} {6}, widths 64, 256, 64.
  MuonGatherLayout g3 = MuonGatherLayout::Make(m, 3);
  EXPECT_EQ(g3.round_offsets, (std::vector<int64_t>{0, 64, 320}));
  EXPECT_EQ(g3.width, 384);
  EXPECT_EQ(g3.GatheredOffset(5), 2 * 384 + 64);
}

// Distributed Muon on W ranks (threads) gives the very parameters one rank gives: each update
// is computed once, by its owner, and copied, not recomputed.
std::vector<float> MuonParams(int world, int steps) {
  std::vector<MuonMatrix> m = Matrices();
  int64_t total = m.back().offset + m.back().rows * m.back().cols;
  std::vector<std::vector<float>> params(static_cast<size_t>(world));
  InProcessGroup group(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      InProcessCommunicator comm(&group, r);
      Muon muon(MuonConfig{}, m, r, world);
      std::vector<float>& p = params[size_t(r)];
      p.assign(size_t(total), 0.5f);
      std::mt19937 rng(7);
      std::normal_distribution<float> normal;
      std::vector<float> g(static_cast<size_t>(total));
      for (int s = 0; s < steps; ++s) {
        for (float& x : g) x = normal(rng);  // the same mean gradient on every rank
        ASSERT_TRUE(muon.Step(p.data(), g.data(), 1.0, s, comm).ok());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int r = 1; r < world; ++r) EXPECT_EQ(params[size_t(r)], params[0]) << "rank " << r;
  return params[0];
}

TEST(DistributedMuon, ShardedStepsEqualOneRank) {
  std::vector<float> one = MuonParams(1, 3);
  for (int world : {2, 3, 4}) EXPECT_EQ(MuonParams(world, 3), one) << "world " << world;
}

TrainOutcome Refused(TrainOptions o, MemorySink& sink) {
  testing::TempDir dir;
  testing::WriteShards(dir);
  o.train_files = {dir.File("train_000.bin")};
  o.val_files = {dir.File("val_000.bin")};
  return Train(testing::TinyTrainConfig(), o, sink);
}

void ExpectRefused(const TrainOptions& o, const std::string& words) {
  MemorySink sink;
  TrainOutcome out = Refused(o, sink);
  EXPECT_EQ(out.status, TrainStatus::kInvalid);
  EXPECT_NE(out.message.find(words), std::string::npos) << out.message;
  ASSERT_EQ(sink.events().size(), 1u);
  EXPECT_EQ(sink.events()[0]["event"], "error");
}

TEST(MultiGpuOptions, RefusedBeforeAnyWork) {
  TrainOptions cpu;
  cpu.nnodes = 2;
  cpu.nccl_id_file = "/nonexistent/id";
  ExpectRefused(cpu, "several nodes need --backend cuda");
  TrainOptions cuda;
  cuda.backend = Backend::kCuda;
  cuda.gpus = {0, 1};
  cuda.world_size = 3;
  ExpectRefused(cuda, "disagrees with 1 node(s) × 2 GPU(s)");
  cuda.world_size = 1;
  cuda.gpus = {0, 0};
  ExpectRefused(cuda, "names a GPU twice");
  cuda.gpus = {0};
  cuda.nnodes = 2;
  ExpectRefused(cuda, "node rank 0 of a multi-node run needs --nccl-id-file");
  cuda.node_rank = 1;
  ExpectRefused(cuda, "node rank 1 needs the NCCL id");
  cuda.node_rank = 2;
  ExpectRefused(cuda, "node rank 2 is not in [0, 2)");
}

}  // namespace
}  // namespace ablate
