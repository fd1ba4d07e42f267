// Workers: registration round trip, re-registration, connection flag and heartbeats.
#include "common/clock.h"
#include "gtest/gtest.h"
#include "server/store/store.h"
#include "store_test_util.h"

namespace ablate {
namespace {

Worker MakeWorker(const std::string& id) {
  Worker w;
  w.id = id;
  w.host = id + ".lab";
  w.gpus = {{0, "NVIDIA H100 80GB HBM3", 81559}, {1, "NVIDIA H100 80GB HBM3", 81559}};
  w.cpu_slots = 16;
  w.trainer_version = "0.1.0";
  w.datasets = {"fineweb10B", "tinyshakespeare"};
  w.connected = true;
  return w;
}

TEST(StoreWorkersTest, UpsertListAndHeartbeat) {
  ManualClock clock{/*wall_ms=*/1'000'000};
  StoreOptions options;
  options.clock = &clock;
  auto store = testing::OpenOrDie(":memory:", options);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->UpsertWorker(MakeWorker("node-b")).ok());
  ASSERT_TRUE(store->UpsertWorker(MakeWorker("node-a")).ok());
  const TimestampMs registered = clock.WallMs();

  Worker a = store->GetWorker("node-a").value();
  EXPECT_EQ(a.host, "node-a.lab");
  ASSERT_EQ(a.gpus.size(), 2u);
  EXPECT_EQ(a.gpus[1].index, 1);
  EXPECT_EQ(a.gpus[1].model, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(a.gpus[1].memory_mb, 81559);
  EXPECT_EQ(a.datasets, (std::vector<std::string>{"fineweb10B", "tinyshakespeare"}));
  EXPECT_TRUE(a.connected);
  EXPECT_EQ(a.registered_ms, registered);

  clock.Advance(1000);
  Worker changed = MakeWorker("node-a");
  changed.gpus.pop_back();
  changed.trainer_version = "0.2.0";
  ASSERT_TRUE(store->UpsertWorker(changed).ok());
  ASSERT_TRUE(store->SetWorkerConnected("node-a", false).ok());
  ASSERT_TRUE(store->TouchWorker("node-a", clock.WallMs() + 5).ok());
  a = store->GetWorker("node-a").value();
  EXPECT_EQ(a.gpus.size(), 1u);
  EXPECT_EQ(a.trainer_version, "0.2.0");
  EXPECT_FALSE(a.connected);
  EXPECT_EQ(a.last_heartbeat_ms, clock.WallMs() + 5);
  EXPECT_EQ(a.registered_ms, registered) << "kept from the first registration";

  std::vector<Worker> workers = store->ListWorkers().value();
  ASSERT_EQ(workers.size(), 2u);
  EXPECT_EQ(workers[0].id, "node-a");

  EXPECT_EQ(store->SetWorkerConnected("ghost", true).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store->TouchWorker("ghost", 1).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store->GetWorker("ghost").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store->UpsertWorker(Worker{}).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ablate
