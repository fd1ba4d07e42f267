// The coordinator's store under misuse, over real processes: a second coordinator on a data dir
// that one already serves, the restart after SIGKILL, a damaged database file, an online backup
// taken while a client keeps submitting sweeps, and a data dir whose disk fills up (a real
// size-limited tmpfs; skipped, saying so, where the test may not mount one).
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "ablate/v1/client.grpc.pb.h"
#include "common/thread_annotations.h"
#include "tests/hardening/small_disk.h"
#include "tests/util/subprocess.h"

namespace ablate::testing {
namespace {

using namespace std::chrono_literals;

// A real ablate-coordinator on OS-chosen loopback ports over `data_dir`.
class Coordinator {
 public:
  Coordinator(const std::string& data_dir, const std::string& log_dir,
              const std::vector<std::string>& extra_args = {})
      : data_dir_(data_dir) {
    std::filesystem::remove(PortFile());
    std::vector<std::string> argv = {ABLATE_COORDINATOR_BIN, "--listen", "127.0.0.1:0",
                                     "--data-dir",           data_dir,   "--port-file",
                                     PortFile(),             "--http",   "off"};
    argv.insert(argv.end(), extra_args.begin(), extra_args.end());
    proc_ = std::make_unique<Subprocess>(argv, log_dir);
  }
  std::string PortFile() const { return data_dir_ + "/port"; }
  // Waits for the port file; "" when the process exited or 10 s passed first.
  std::string WaitAddress() {
    for (int i = 0; i < 500; ++i) {
      if (std::filesystem::exists(PortFile())) {
        std::string port = ReadFile(PortFile());
        return "127.0.0.1:" + port.substr(0, port.find('\n'));
      }
      std::this_thread::sleep_for(20ms);
    }
    return "";
  }
  Subprocess& proc() { return *proc_; }

 private:
  std::string data_dir_;
  std::unique_ptr<Subprocess> proc_;
};

TEST(OneCoordinatorPerStore, SecondCoordinatorRefusesNamingDirAndHolder) {
  TempDir data, logs_a, logs_b;
  Coordinator first(data.path(), logs_a.path());
  ASSERT_NE(first.WaitAddress(), "") << first.proc().Stderr();
  Coordinator second(data.path(), logs_b.path());
  std::optional<ProcessResult> r = second.proc().Wait(10s);
  ASSERT_TRUE(r.has_value()) << "the second coordinator is still running";
  EXPECT_EQ(r->exit_code, 1);
  EXPECT_NE(r->err.find("data dir " + data.path() + " is in use"), std::string::npos) << r->err;
  EXPECT_NE(r->err.find("PID " + std::to_string(first.proc().pid())), std::string::npos)
      << r->err;
  // The first one is untouched and still serving.
  EXPECT_FALSE(first.proc().Wait(0ms).has_value());
}

// Issue 24 (15): the guarantee must not rest on the lock file surviving.
TEST(OneCoordinatorPerStore, DeletedLockFileDoesNotLetASecondOneIn) {
  TempDir data, logs_a, logs_b;
  Coordinator first(data.path(), logs_a.path());
  ASSERT_NE(first.WaitAddress(), "") << first.proc().Stderr();
  ASSERT_TRUE(std::filesystem::remove(data.path() + "/ablate.lock"));
  Coordinator second(data.path(), logs_b.path());
  std::optional<ProcessResult> r = second.proc().Wait(10s);
  ASSERT_TRUE(r.has_value()) << "a second coordinator serves the same database";
  EXPECT_EQ(r->exit_code, 1);
  EXPECT_NE(r->err.find("database " + data.path() + "/ablate.db is in use"), std::string::npos)
      << r->err;
  EXPECT_NE(r->err.find("PID " + std::to_string(first.proc().pid())), std::string::npos)
      << r->err;
  EXPECT_FALSE(first.proc().Wait(0ms).has_value());
}

TEST(OneCoordinatorPerStore, RestartAfterSigkillIsNotBlocked) {
  TempDir data, logs_a, logs_b;
  Coordinator first(data.path(), logs_a.path());
  ASSERT_NE(first.WaitAddress(), "") << first.proc().Stderr();
  first.proc().Signal(SIGKILL);
  ASSERT_TRUE(first.proc().Wait(10s).has_value());
  Coordinator again(data.path(), logs_b.path());
  EXPECT_NE(again.WaitAddress(), "") << again.proc().Stderr();
  EXPECT_FALSE(again.proc().Wait(0ms).has_value()) << again.proc().Stderr();
}

// A valid SQLite database of a few pages, then `garbage` written over page 3 (a b-tree page of
// table t, whose rows fill several pages).
void WriteDamagedDatabase(const std::string& path) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "PRAGMA page_size = 4096; CREATE TABLE t (x TEXT);"
                         "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
                         "WHERE i < 200) INSERT INTO t SELECT printf('%0100d', i) FROM n;",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  std::string bytes = ReadFile(path);
  ASSERT_GT(bytes.size(), 4u * 4096);
  for (size_t i = 2 * 4096; i < 2 * 4096 + 200; ++i) bytes[i] = static_cast<char>(0xA5 ^ i);
  WriteFile(path, bytes);
}

void ExpectRefusedAndUnchanged(const std::string& dir, const std::string& log_dir) {
  const std::string db = dir + "/ablate.db";
  const std::string before = ReadFile(db);
  Coordinator c(dir, log_dir);
  std::optional<ProcessResult> r = c.proc().Wait(20s);
  ASSERT_TRUE(r.has_value()) << "a coordinator serves a damaged database";
  EXPECT_EQ(r->exit_code, 1);
  EXPECT_NE(r->err.find("database " + db + " is damaged"), std::string::npos) << r->err;
  EXPECT_NE(r->err.find("it was not changed"), std::string::npos) << r->err;
  EXPECT_EQ(ReadFile(db), before) << "the damaged file was written to";
  EXPECT_FALSE(std::filesystem::exists(dir + "/ablate.db-wal"));
}

TEST(DamagedDatabase, NotADatabaseIsRefusedAndKept) {
  TempDir data, logs;
  std::string junk(3 * 4096, '\0');
  for (size_t i = 0; i < junk.size(); ++i) junk[i] = static_cast<char>((i * 7919) % 251);
  WriteFile(data.path() + "/ablate.db", junk);
  ExpectRefusedAndUnchanged(data.path(), logs.path());
}

TEST(DamagedDatabase, DamagedPageIsRefusedAndKept) {
  TempDir data, logs;
  WriteDamagedDatabase(data.path() + "/ablate.db");
  ExpectRefusedAndUnchanged(data.path(), logs.path());
}

constexpr const char* kSpec = R"(name: backup-load
baseline: {preset: r9-shortcuts, scale: tiny}
seeds: 3
gpus_per_run: 0
ablations:
  - {name: softcap-15, set: {logit_softcap: 15}}
)";
constexpr int kRunsPerSweep = 6;  // 2 variants x 3 seeds

// Submits sweeps over gRPC until stopped; remembers every id whose submit had returned (was
// committed) and when.
class SubmitLoad {
 public:
  explicit SubmitLoad(const std::string& address)
      : stub_(v1::AblateService::NewStub(
            grpc::CreateChannel(address, grpc::InsecureChannelCredentials()))),
        thread_([this] { Loop(); }) {}
  ~SubmitLoad() {
    stop_ = true;
    thread_.join();
  }
  // Ids committed so far.
  std::vector<int64_t> Committed() {
    AnnotatedMutexLock lock(&mu_);
    return committed_;
  }
  int errors() const { return errors_; }

 private:
  void Loop() {
    while (!stop_) {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + 10s);
      v1::SubmitSweepRequest req;
      req.set_spec_yaml(kSpec);
      v1::SubmitSweepResponse resp;
      if (stub_->SubmitSweep(&ctx, req, &resp).ok()) {
        AnnotatedMutexLock lock(&mu_);
        committed_.push_back(resp.sweep().id());
      } else {
        ++errors_;
      }
    }
  }
  std::unique_ptr<v1::AblateService::Stub> stub_;
  std::atomic<bool> stop_{false};
  std::atomic<int> errors_{0};
  AnnotatedMutex mu_;
  std::vector<int64_t> committed_ ABLATE_GUARDED_BY(mu_);
  std::thread thread_;
};

// A field of /proc/PID/status in KiB ("VmRSS", "VmHWM"); -1 when absent.
int64_t StatusKib(int pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1));
  }
  return -1;
}

// Issue 24 (6): a caller without the client token must not make the coordinator buffer big
// messages: every method takes at most 4 MiB, and only UploadSweep takes more, after the token.
TEST(MessageLimits, UnauthenticatedBigMessagesAreNotBuffered) {
  TempDir data, logs;
  WriteFile(data.path() + "/client.token", "s3cret\n");
  Coordinator c(data.path(), logs.path(),
                {"--client-token-file", data.path() + "/client.token"});
  const std::string address = c.WaitAddress();
  ASSERT_NE(address, "") << c.proc().Stderr();
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(-1);
  auto stub = v1::AblateService::NewStub(
      grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args));
  {
    grpc::ClientContext ctx;  // warm up: the coordinator's threads and caches exist
    v1::ListSweepsResponse resp;
    ctx.AddMetadata("authorization", "Bearer s3cret");
    ASSERT_TRUE(stub->ListSweeps(&ctx, {}, &resp).ok());
  }
  const int64_t before_kib = StatusKib(c.proc().pid(), "VmRSS");
  v1::SubmitSweepRequest big;
  big.set_spec_yaml(std::string(90 << 20, 'a'));
  std::vector<std::thread> callers;
  std::atomic<int> refused{0};
  for (int i = 0; i < 4; ++i) {
    callers.emplace_back([&, i] {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + 60s);
      ctx.AddMetadata("authorization", "Bearer guess");
      v1::SubmitSweepResponse resp;
      grpc::Status s;
      if (i % 2 == 0) {
        s = stub->SubmitSweep(&ctx, big, &resp);
      } else {  // the chunked path, refused before its first chunk is read
        auto writer = stub->UploadSweep(&ctx, &resp);
        const std::string bytes = big.SerializeAsString();
        v1::SubmitSweepChunk chunk;
        for (size_t at = 0; at < bytes.size(); at += 1 << 20) {
          chunk.set_data(bytes.substr(at, 1 << 20));
          if (!writer->Write(chunk)) break;
        }
        writer->WritesDone();
        s = writer->Finish();
      }
      if (!s.ok()) ++refused;
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(refused.load(), 4);
  const int64_t peak_kib = StatusKib(c.proc().pid(), "VmHWM");
  EXPECT_LT(peak_kib - before_kib, 100 * 1024)
      << "four 90 MB calls with a wrong token took the coordinator from " << before_kib / 1024
      << " MB to a peak of " << peak_kib / 1024 << " MB";
  EXPECT_FALSE(c.proc().Wait(0ms).has_value()) << c.proc().Stderr();
}

// The big path still works with the token: a spec with a 10 MB script goes up in chunks.
TEST(MessageLimits, BigSubmitsGoUpInChunksWithTheToken) {
  TempDir data, logs;
  WriteFile(data.path() + "/client.token", "s3cret\n");
  Coordinator c(data.path(), logs.path(),
                {"--client-token-file", data.path() + "/client.token"});
  const std::string address = c.WaitAddress();
  ASSERT_NE(address, "") << c.proc().Stderr();
  v1::SubmitSweepRequest req;
  req.set_spec_yaml("name: big\nbaseline: {script: big.py}\ndataset: bench\ngpus_per_run: 0\n");
  req.set_file_name("big.yaml");
  req.set_dry_run(true);
  v1::ScriptUpload* u = req.add_scripts();
  u->set_script("big.py");
  v1::SnapshotFile* f = u->add_files();
  f->set_path("big.py");
  f->set_content(std::string(10 << 20, '#'));
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(-1);
  auto stub = v1::AblateService::NewStub(
      grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args));
  {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer s3cret");
    v1::SubmitSweepResponse resp;
    grpc::Status s = stub->SubmitSweep(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  }
  grpc::ClientContext ctx;
  ctx.AddMetadata("authorization", "Bearer s3cret");
  v1::SubmitSweepResponse resp;
  auto writer = stub->UploadSweep(&ctx, &resp);
  const std::string bytes = req.SerializeAsString();
  v1::SubmitSweepChunk chunk;
  for (size_t at = 0; at < bytes.size(); at += 1 << 20) {
    chunk.set_data(bytes.substr(at, 1 << 20));
    ASSERT_TRUE(writer->Write(chunk));
  }
  writer->WritesDone();
  grpc::Status s = writer->Finish();
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.sweep().name(), "big");
  EXPECT_EQ(resp.runs_size(), 1);
}

// (sweeps, runs of sweep `id`) in the backup, and its integrity_check answer.
struct CopyFacts {
  std::string integrity;
  std::vector<int64_t> sweep_ids;
  std::map<int64_t, int> runs_per_sweep;
};

CopyFacts ReadCopy(const std::string& path) {
  CopyFacts facts;
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  auto each_row = [db](const char* sql, auto on_row) {
    sqlite3_stmt* stmt = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    while (sqlite3_step(stmt) == SQLITE_ROW) on_row(stmt);
    sqlite3_finalize(stmt);
  };
  each_row("PRAGMA integrity_check", [&](sqlite3_stmt* s) {
    facts.integrity += reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
  });
  each_row("SELECT id FROM sweeps ORDER BY id",
           [&](sqlite3_stmt* s) { facts.sweep_ids.push_back(sqlite3_column_int64(s, 0)); });
  each_row("SELECT sweep_id, COUNT(*) FROM runs GROUP BY sweep_id", [&](sqlite3_stmt* s) {
    facts.runs_per_sweep[sqlite3_column_int64(s, 0)] = sqlite3_column_int(s, 1);
  });
  sqlite3_close(db);
  return facts;
}

TEST(Backup, ConsistentCopyUnderWriteLoad) {
  TempDir data, logs, out;
  Coordinator c(data.path(), logs.path());
  std::string address = c.WaitAddress();
  ASSERT_NE(address, "") << c.proc().Stderr();
  SubmitLoad load(address);
  while (load.Committed().size() < 20) std::this_thread::sleep_for(10ms);
  const std::string copy = out.path() + "/ablate-backup.db";
  std::vector<int64_t> before = load.Committed();
  ProcessResult r = RunProcess(
      {ABLATE_COORDINATOR_BIN, "backup", "--data-dir", data.path(), "--to", copy});
  size_t during = load.Committed().size();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("integrity_check ok"), std::string::npos) << r.out;
  EXPECT_GT(during, before.size()) << "no writes went on while the backup ran";
  EXPECT_EQ(load.errors(), 0);

  CopyFacts facts = ReadCopy(copy);
  EXPECT_EQ(facts.integrity, "ok");
  std::set<int64_t> in_copy(facts.sweep_ids.begin(), facts.sweep_ids.end());
  for (int64_t id : before) EXPECT_TRUE(in_copy.count(id)) << "committed sweep " << id << " lost";
  // A snapshot: no sweep without all of its runs.
  for (int64_t id : facts.sweep_ids) EXPECT_EQ(facts.runs_per_sweep[id], kRunsPerSweep) << id;
  EXPECT_FALSE(std::filesystem::exists(copy + ".tmp"));
  EXPECT_FALSE(std::filesystem::exists(copy + "-wal"));
}

TEST(Backup, RestoredCopyServes) {
  TempDir data, logs, restored;
  {
    Coordinator c(data.path(), logs.path());
    std::string address = c.WaitAddress();
    ASSERT_NE(address, "") << c.proc().Stderr();
    { SubmitLoad load(address); while (load.Committed().size() < 3) std::this_thread::sleep_for(10ms); }
    ProcessResult r = RunProcess({ABLATE_COORDINATOR_BIN, "backup", "--data-dir", data.path(),
                                  "--to", restored.path() + "/ablate.db"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  // README's restore: the copy becomes ablate.db of a data dir.
  Coordinator again(restored.path(), logs.path());
  EXPECT_NE(again.WaitAddress(), "") << again.proc().Stderr();
}

TEST(Backup, RefusesToOverwriteTheDatabaseItself) {
  TempDir data, logs;
  {
    Coordinator c(data.path(), logs.path());
    ASSERT_NE(c.WaitAddress(), "") << c.proc().Stderr();
  }
  ProcessResult r = RunProcess({ABLATE_COORDINATOR_BIN, "backup", "--data-dir", data.path(),
                                "--to", data.path() + "/ablate.db"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("is the database itself"), std::string::npos) << r.err;
}

grpc::Status Submit(v1::AblateService::Stub& stub, int64_t* id) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 20s);
  v1::SubmitSweepRequest req;
  req.set_spec_yaml(kSpec);
  v1::SubmitSweepResponse resp;
  grpc::Status s = stub.SubmitSweep(&ctx, req, &resp);
  *id = resp.sweep().id();
  return s;
}

int ListedSweeps(v1::AblateService::Stub& stub) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 20s);
  v1::ListSweepsResponse resp;
  grpc::Status s = stub.ListSweeps(&ctx, v1::ListSweepsRequest(), &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return resp.sweeps_size();
}

TEST(FullDisk, WritesRefusedNamingTheDataDirReadsGoOnWritesResume) {
  SmallDisk disk(8);
  if (!disk.mounted()) GTEST_SKIP() << "cannot mount a size-limited tmpfs here: " << disk.error();
  TempDir logs;
  std::set<int64_t> committed;
  {
    Coordinator c(disk.path(), logs.path());
    std::string address = c.WaitAddress();
    ASSERT_NE(address, "") << c.proc().Stderr();
    auto stub = v1::AblateService::NewStub(
        grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
    int64_t id = 0;
    for (int i = 0; i < 5; ++i) {
      ASSERT_TRUE(Submit(*stub, &id).ok());
      committed.insert(id);
    }
    disk.Fill("filler");
    grpc::Status full;
    for (int i = 0; i < 200 && full.ok(); ++i) {
      full = Submit(*stub, &id);
      if (full.ok()) committed.insert(id);  // fitted in pages SQLite had already
    }
    ASSERT_EQ(full.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << full.error_message();
    EXPECT_NE(full.error_message().find("no space left in data dir " + disk.path()),
              std::string::npos)
        << full.error_message();
    EXPECT_EQ(ListedSweeps(*stub), static_cast<int>(committed.size())) << "reads go on";
    EXPECT_NE(c.proc().Stderr().find("no space left in data dir " + disk.path()),
              std::string::npos)
        << c.proc().Stderr();
    // Space comes back: the next write succeeds without a restart.
    std::filesystem::remove(disk.path() + "/filler");
    ASSERT_TRUE(Submit(*stub, &id).ok());
    committed.insert(id);
    EXPECT_EQ(ListedSweeps(*stub), static_cast<int>(committed.size()));
    c.proc().Signal(SIGTERM);
    ASSERT_TRUE(c.proc().Wait(20s).has_value());
  }
  CopyFacts facts = ReadCopy(disk.path() + "/ablate.db");
  EXPECT_EQ(facts.integrity, "ok");
  EXPECT_EQ(std::set<int64_t>(facts.sweep_ids.begin(), facts.sweep_ids.end()), committed);
  for (int64_t id : facts.sweep_ids) EXPECT_EQ(facts.runs_per_sweep[id], kRunsPerSweep) << id;
}

}  // namespace
}  // namespace ablate::testing
