// ssh pools end to end (issue 38): real sshd daemons from Debian's openssh-server on loopback
// ports (tests/util/sshd_host.h), each with its own host key, a real coordinator started with
// --pools naming them, and the bundle that scripts/dist.sh makes from this build, copied to the
// "nodes" and run there by the coordinator itself (the built-in CPU trainer at tiny scale). The
// hosts share this machine's file system, so each keeps its files under its own folder (the
// provider's ssh-KEY/), and the second host finds the bundle the first one received (a warm
// start). Skipped, naming the reason, where sshd cannot run (not root, not installed).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>

#include <cerrno>
#include <cstring>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "tests/hardening/small_disk.h"
#include "tests/util/cli_client.h"
#include "tests/util/sqlite_query.h"
#include "tests/util/sshd_host.h"
#include "tests/util/subprocess.h"

namespace ablate::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace std::chrono_literals;

constexpr int kIterations = 150;  // a few seconds a run: long enough to be killed mid-run

// 2 variants x 3 seeds of the tiny r9 model on the CPU, on pool `rented`.
std::string Spec() {
  return "name: rented-sweep\nbaseline: {preset: r20-sub3min, scale: tiny, set: "
         "{num_iterations: " + std::to_string(kIterations) +
         ", muon.momentum_warmup_steps: 32}}\n"
         "ablations:\n  - {name: no-unet, set: {unet_skips: false}}\n"
         "seeds: 3\ngpus_per_run: 0\ndataset: debian-text\nmax_attempts: 1\npool: rented\n";
}

// The pids of processes whose command line has every one of `words`.
std::vector<pid_t> Processes(const std::vector<std::string>& words) {
  std::vector<pid_t> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmd = ReadFile(e.path().string() + "/cmdline");
    std::replace(cmd.begin(), cmd.end(), '\0', ' ');
    bool all = !cmd.empty();
    for (const std::string& w : words) all = all && cmd.find(w) != std::string::npos;
    if (all) out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

class SshPoolE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!SshdHost::Unavailable().empty()) return;
    bundle_dir_ = new TempDir();
    ProcessResult dist = RunProcess(
        {ABLATE_SOURCE_DIR "/scripts/dist.sh", ABLATE_BUILD_DIR, bundle_dir_->path()}, {}, 300s);
    if (dist.exit_code == 0) {
      std::string out = dist.out;
      while (!out.empty() && out.back() == '\n') out.pop_back();
      bundle_ = out.substr(out.rfind('\n') == std::string::npos ? 0 : out.rfind('\n') + 1);
    } else {
      bundle_error_ = dist.err;
    }
  }
  static void TearDownTestSuite() {
    delete bundle_dir_;
    bundle_dir_ = nullptr;
  }

  void SetUp() override {
    if (std::string why = SshdHost::Unavailable(); !why.empty()) GTEST_SKIP() << why;
    ASSERT_FALSE(bundle_.empty()) << "scripts/dist.sh failed: " << bundle_error_;
    ASSERT_TRUE(MakeSshKey(Root() + "/id")) << "ssh-keygen";
    ProcessResult data =
        RunProcess({"/bin/bash", ABLATE_SOURCE_DIR "/tests/data/make_debian_text.sh",
                    Root() + "/datasets/debian-text"},
                   {{"ABLATE_DATA", ABLATE_DATA_BIN}}, 120s);
    ASSERT_EQ(data.exit_code, 0) << data.err;
  }

  void TearDown() override {
    if (coordinator_) {
      coordinator_->Signal(SIGTERM);
      coordinator_->Wait(10s);
      if (HasFailure()) std::cerr << "---- coordinator\n" << coordinator_->Stderr() << "\n";
    }
    // Whatever a failed test left running on the "nodes".
    for (pid_t p : Processes({"run.sh", Root()})) ::kill(p, SIGKILL);
    for (pid_t p : Processes({"--ssh-host", Root()})) ::kill(p, SIGKILL);
  }

  const std::string& Root() const { return root_.path(); }

  SshdHost* AddHost(bool authorize = true) {
    hosts_.push_back(std::make_unique<SshdHost>(Root() + "/sshd" + std::to_string(hosts_.size())));
    SshdHost* h = hosts_.back().get();
    if (authorize) h->UseClientKey(Root() + "/id");
    std::string error;
    EXPECT_TRUE(h->Start(&error)) << error;
    return h;
  }

  // A pool of `hosts`; known_hosts lists those in `known` (all when empty).
  std::string Pool(const std::string& name, const std::vector<SshdHost*>& hosts,
                   const std::string& extra = "", const std::string& bundle_dir = "",
                   const std::string& worker_args = "") {
    std::string list, known;
    for (SshdHost* h : hosts) {
      list += (list.empty() ? "" : ", ") + h->host_text();
      known += h->known_hosts_line();
    }
    WriteFile(Root() + "/known_hosts-" + name, known);
    return "  - name: " + name + "\n    kind: ssh\n    hosts: [" + list + "]\n" +
           "    identity_file: " + Root() + "/id\n    known_hosts: known_hosts-" + name + "\n" +
           "    gpus_per_node: 0\n    idle_exit: 3s\n    bundle: " + bundle_ + "\n" + extra +
           "    worker: {bundle_dir: " + (bundle_dir.empty() ? Root() + "/node/opt" : bundle_dir) +
           ", work_dir: " + Root() + "/node/work, data_dir: " + Root() +
           "/datasets, cpu_slots: 1, args: [--grace-ms, '2000'" + worker_args + "]}\n";
  }

  // `listen` "127.0.0.1:0" picks a free port; a restart passes the one it had (workers dial it).
  void StartCoordinator(const std::string& pools, const std::string& listen = "127.0.0.1:0") {
    WriteFile(Root() + "/pools.yaml", "pools:\n" + pools);
    fs::remove(Root() + "/port");
    coordinator_ = std::make_unique<Subprocess>(
        std::vector<std::string>{ABLATE_COORDINATOR_BIN, "--listen", listen, "--data-dir",
                                 Root() + "/coord", "--port-file", Root() + "/port", "--http",
                                 "off", "--lease-ms", "10000", "--heartbeat-ms", "500",
                                 "--pools", Root() + "/pools.yaml"},
        Root());
    for (int i = 0; i < 500 && !fs::exists(Root() + "/port"); ++i) std::this_thread::sleep_for(20ms);
    std::string port = ReadFile(Root() + "/port");
    ASSERT_FALSE(port.empty()) << coordinator_->Stderr();
    address_ = "127.0.0.1:" + port.substr(0, port.find('\n'));
    cli_ = CliClient(ABLATE_CLI_BIN, address_);
  }

  // The pool's hosts as `ablate pools --json` shows them.
  json Hosts(const std::string& pool) {
    json pools = cli_.Json({"pools"});
    for (const json& p : pools["pools"]) {
      if (p["name"] == pool) return p.value("hosts", json::array());
    }
    return json::array();
  }
  // Waits until `done` holds for the pool's hosts.
  json WaitHosts(const std::string& pool, const std::function<bool(const json&)>& done,
                 std::chrono::seconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    json h;
    while (std::chrono::steady_clock::now() < deadline) {
      h = Hosts(pool);
      if (done(h)) return h;
      std::this_thread::sleep_for(200ms);
    }
    ADD_FAILURE() << "timed out waiting on pool " << pool << "'s hosts; last: " << h.dump(1);
    return h;
  }

  json Run(int id) { return cli_.Json({"run", std::to_string(id)}); }
  static bool Running(const json& r) { return r["state"] == "RUN_RUNNING"; }
  static bool Succeeded(const json& r) { return r["state"] == "RUN_SUCCEEDED"; }
  // A run that runs now on `worker`, or 0. One call: under a loaded machine's slow CLI calls the
  // answer must still hold when the caller acts on it.
  int RunningOn(const std::string& worker) {
    json runs = cli_.Json({"runs", "--state", "running"});
    for (const json& r : runs.value("runs", json::array())) {
      if (r.value("worker_id", "") == worker) return std::stoi(r.value("id", "0"));  // int64: a string
    }
    return 0;
  }
  int WaitRunningOn(const std::string& worker, std::chrono::seconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (int id = RunningOn(worker)) return id;
      std::this_thread::sleep_for(100ms);
    }
    return 0;
  }

  static TempDir* bundle_dir_;
  static std::string bundle_, bundle_error_;
  TempDir root_;
  std::vector<std::unique_ptr<SshdHost>> hosts_;
  std::unique_ptr<Subprocess> coordinator_;
  std::string address_;
  CliClient cli_;
};

TempDir* SshPoolE2eTest::bundle_dir_ = nullptr;
std::string SshPoolE2eTest::bundle_;
std::string SshPoolE2eTest::bundle_error_;

std::string Key(const SshdHost* h) { return "root-at-127.0.0.1-" + std::to_string(h->port()); }

TEST_F(SshPoolE2eTest, TwoHostsRunASweepThroughAKilledWorkerAndALostHost) {
  SshdHost* a = AddHost();
  SshdHost* b = AddHost();
  StartCoordinator(Pool("rented", {a, b}));
  const std::string wa = "ssh/rented/" + Key(a), wb = "ssh/rented/" + Key(b);
  const auto submitted = std::chrono::steady_clock::now();
  cli_.Submit(Root() + "/spec.yaml", Spec());

  // Both hosts come up; the first copies the bundle, the second finds it there.
  json hosts = WaitHosts("rented", [](const json& h) {
    return h.size() == 2 && h[0]["state"] == "up" && h[1]["state"] == "up";
  }, 120s);
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_TRUE(hosts[0].value("last_start_copied", false)) << hosts.dump(1);
  EXPECT_FALSE(hosts[1].value("last_start_copied", false)) << hosts.dump(1);
  // These loopback nodes have no lingering systemd user manager: the worker gets its own session.
  EXPECT_EQ(hosts[0].value("started_as", ""), "own session") << hosts.dump(1);
  const int first = WaitRunningOn(wa, 120s);
  ASSERT_GT(first, 0) << "no run started on " << wa;
  std::cerr << "sweep submitted -> first run started on the pool: "
            << std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - submitted)
                   .count()
            << " ms; host starts: " << hosts[0].value("last_start_ms", "?") << " ms (copied), "
            << hosts[1].value("last_start_ms", "?") << " ms (warm)\n";

  // SIGKILL of host a's worker: its run is requeued uncharged, the worker started again. A run
  // lasts seconds, so on a loaded machine it may end between the look and the kill; then the
  // restarted worker takes another run and the kill is tried on that one.
  int on_a = 0, incarnation = 1;
  json killed;
  for (int tries = 0; tries < 4 && on_a == 0; ++tries) {
    const int r = WaitRunningOn(wa, 120s);
    ASSERT_GT(r, 0) << "no run running on " << wa;
    std::vector<pid_t> worker = Processes({"libexec/ablate-worker", "--ssh-host", Key(a)});
    ASSERT_EQ(worker.size(), 1u) << "the worker of host a";
    std::cerr << "killing " << wa << " (pid " << worker[0] << ") while it runs run " << r << "\n";
    ASSERT_EQ(::kill(worker[0], SIGKILL), 0);
    ++incarnation;
    WaitHosts("rented", [&](const json& h) {
      return h.size() == 2 && h[0]["state"] == "up" &&
             h[0].value("incarnation", "") == std::to_string(incarnation);
    }, 60s);
    json after = cli_.WaitFor({"run", std::to_string(r)}, [](const json& j) {
      return j["attempts"].size() >= 2 || Succeeded(j);
    }, 60s);
    if (after["attempts"].size() >= 2) {
      on_a = r;
      killed = after;
    } else {
      std::cerr << "run " << r << " had ended before the kill landed; again\n";
    }
  }
  ASSERT_GT(on_a, 0) << "no kill of host a's worker landed mid-run";
  EXPECT_EQ(killed.value("attempts_used", 0), 0) << "a killed worker's attempt is not charged";

  // Host b stops answering mid-run: its runs are requeued and the host marked; when it answers
  // again its worker is started afresh.
  const int on_b = WaitRunningOn(wb, 120s);
  ASSERT_GT(on_b, 0) << "no run started on " << wb;
  b->Kill();
  json lost = WaitHosts("rented", [](const json& h) {
    return h.size() == 2 && h[1]["state"] == "unreachable";
  }, 60s);
  EXPECT_NE(lost[1].value("error", "").find("does not answer over SSH"), std::string::npos)
      << lost.dump(1);
  // The run it held (or, had that one just finished, the next it took) is tried again.
  auto deadline = std::chrono::steady_clock::now() + 60s;
  bool requeued = false;
  while (!requeued && std::chrono::steady_clock::now() < deadline) {
    for (int id = 1; id <= 6 && !requeued; ++id) {
      json r = Run(id);
      const json& at = r.value("attempts", json::array());
      for (size_t i = 0; i + 1 < at.size(); ++i) {
        requeued = requeued || (at[i].value("worker_id", "") == wb && at[i]["state"] != "succeeded");
      }
    }
    if (!requeued) std::this_thread::sleep_for(200ms);
  }
  EXPECT_TRUE(requeued) << "no run of the lost host was tried again";
  std::string error;
  ASSERT_TRUE(b->Start(&error)) << error;
  // Back: its fenced worker is stopped (a new one starts when runs want the host).
  WaitHosts("rented", [](const json& h) {
    return h.size() == 2 && (h[1]["state"] == "up" || h[1]["state"] == "down");
  }, 90s);

  // Every run succeeds with every step stored once.
  for (int id = 1; id <= 6; ++id) {
    json r = cli_.WaitFor({"run", std::to_string(id)}, Succeeded, 300s);
    ASSERT_TRUE(Succeeded(r)) << r.dump();
    EXPECT_TRUE(r.value("worker_id", "").starts_with("ssh/rented/")) << r.dump();
    // Each attempt's points are its own (a requeued run's first attempt keeps what it sent);
    // the succeeded one has every step, once (the table's key is attempt and step).
    EXPECT_EQ(QueryInt(Root() + "/coord/ablate.db",
                       "SELECT count(*) FROM metrics m JOIN attempts a ON a.id = m.attempt_id "
                       "WHERE a.run_id = " + std::to_string(id) +
                           " AND a.state = 'succeeded' AND m.train_loss IS NOT NULL"),
              kIterations)
        << "run " << id;
  }

  // Idle exit: nothing waits, so both workers are stopped and no process is left on a host.
  WaitHosts("rented", [](const json& h) {
    return h.size() == 2 && h[0]["state"] == "down" && h[1]["state"] == "down";
  }, 60s);
  deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline &&
         !(Processes({"--ssh-host", Root()}).empty() && Processes({"run.sh", Root()}).empty())) {
    std::this_thread::sleep_for(200ms);
  }
  EXPECT_TRUE(Processes({"--ssh-host", Root()}).empty()) << "a worker outlived idle_exit";
  EXPECT_TRUE(Processes({"run.sh", Root()}).empty()) << "a wrapper outlived idle_exit";

  // A second sweep on the now warm hosts (the bundle there, no worker up): how long to its first
  // run, for the closing note beside the fresh start above.
  const auto again = std::chrono::steady_clock::now();
  cli_.Submit(Root() + "/spec2.yaml",
              "name: warm\nbaseline: {preset: r20-sub3min, scale: tiny, set: {num_iterations: "
              "20, muon.momentum_warmup_steps: 4}}\nseeds: 1\ngpus_per_run: 0\n"
              "dataset: debian-text\nmax_attempts: 1\npool: rented\n");
  json warm = cli_.WaitFor({"run", "7"}, [](const json& r) {
    return r["state"] == "RUN_RUNNING" || r["state"] == "RUN_SUCCEEDED";
  }, 120s);
  std::cerr << "warm hosts: sweep submitted -> first run started: "
            << std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - again)
                   .count()
            << " ms\n";
  EXPECT_TRUE(cli_.WaitFor({"run", "7"}, Succeeded, 120s).is_object());
}

// A restarted coordinator finds the worker it started and adopts it (no second start).
TEST_F(SshPoolE2eTest, ARestartedCoordinatorAdoptsItsWorkers) {
  SshdHost* a = AddHost();
  const std::string pools = Pool("rented", {a}, "    min_nodes: 1\n");
  StartCoordinator(pools);
  WaitHosts("rented", [](const json& h) { return h.size() == 1 && h[0]["state"] == "up"; }, 120s);
  coordinator_->Signal(SIGTERM);
  ASSERT_TRUE(coordinator_->Wait(10s));
  ASSERT_EQ(Processes({"libexec/ablate-worker", "--ssh-host", Key(a)}).size(), 1u) << "the worker outlives its coordinator";
  StartCoordinator(pools, address_);
  json h = WaitHosts("rented", [](const json& h) {
    return h.size() == 1 && h[0]["state"] == "up" && h[0].value("connected", false);
  }, 60s);
  EXPECT_EQ(h[0].value("incarnation", ""), "1") << "adopted, not started again: " << h.dump(1);
  EXPECT_NE(coordinator_->Stderr().find("adopted worker ssh/rented/" + Key(a)), std::string::npos)
      << coordinator_->Stderr();
}

// `ablate pools release|resume|drain`: a released host's worker stops and it stays down even
// with min_nodes; resumed, it comes up again; drained (idle), it stops as well.
TEST_F(SshPoolE2eTest, ReleaseResumeAndDrainHoldAHost) {
  SshdHost* a = AddHost();
  StartCoordinator(Pool("rented", {a}, "    min_nodes: 1\n"));
  auto state_is = [](const std::string& want) {
    return [want](const json& h) { return h.size() == 1 && h[0]["state"] == want; };
  };
  WaitHosts("rented", state_is("up"), 120s);
  ProcessResult r = cli_.Run({"pools", "release", "rented"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(a->host_text() + ": released"), std::string::npos) << r.out;
  WaitHosts("rented", state_is("released"), 60s);
  std::this_thread::sleep_for(6s);  // a pass later it is still held, min_nodes or not
  EXPECT_EQ(Hosts("rented")[0]["state"], "released");
  EXPECT_TRUE(Processes({"libexec/ablate-worker", "--ssh-host", Key(a)}).empty());
  ASSERT_EQ(cli_.Run({"pools", "resume", "rented", a->host_text()}).exit_code, 0);
  json h = WaitHosts("rented", state_is("up"), 60s);
  EXPECT_EQ(h[0].value("incarnation", ""), "2") << h.dump(1);
  ASSERT_EQ(cli_.Run({"pools", "drain", "rented", Key(a)}).exit_code, 0);
  WaitHosts("rented", state_is("drained"), 60s);
  r = cli_.Run({"pools", "drain", "rented", "nobody@nowhere"});
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.err.find("'nobody@nowhere' is not a host of ssh pool 'rented' (its hosts: " +
                       a->host_text() + ")"),
            std::string::npos)
      << r.err;
  r = cli_.Run({"pools", "evict", "rented"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
}

// Bad hosts: each is marked bad with an error that names it and says what to do; no sweep,
// no run is stored for them.
TEST_F(SshPoolE2eTest, BadHostsAreMarkedWithWhatToDo) {
  SshdHost* unknown = AddHost();
  SshdHost* wrong_key = AddHost(/*authorize=*/false);
  SshdHost* no_python = AddHost();
  SshdHost* full = AddHost();
  SmallDisk disk(1);
  std::string pools = Pool("unknown", {unknown}, "    min_nodes: 1\n") +
                      Pool("wrongkey", {wrong_key}, "    min_nodes: 1\n") +
                      Pool("nopython", {no_python}, "    min_nodes: 1\n", "",
                           ", --allow-scripts, --python, /nonexistent/python3");
  if (disk.mounted()) pools += Pool("full", {full}, "    min_nodes: 1\n", disk.path());
  WriteFile(Root() + "/known_hosts-unknown", "");  // nothing known: strict refuses it
  StartCoordinator(pools);

  json h = WaitHosts("unknown", [](const json& h) { return h.size() == 1 && h[0]["state"] == "bad"; }, 60s);
  EXPECT_NE(h[0].value("error", "").find("host " + unknown->host_text() + ": its host key is not in"),
            std::string::npos) << h.dump(1);
  EXPECT_NE(h[0].value("error", "").find("ssh-keyscan -p " + std::to_string(unknown->port())),
            std::string::npos) << h.dump(1);
  h = WaitHosts("wrongkey", [](const json& h) { return h.size() == 1 && h[0]["state"] == "bad"; }, 60s);
  EXPECT_NE(h[0].value("error", "").find("refused the key " + Root() + "/id"), std::string::npos)
      << h.dump(1);
  h = WaitHosts("nopython", [](const json& h) { return h.size() == 1 && h[0]["state"] == "bad"; }, 120s);
  EXPECT_NE(h[0].value("error", "").find("ablate-worker --check failed there: python"),
            std::string::npos) << h.dump(1);
  if (disk.mounted()) {
    h = WaitHosts("full", [](const json& h) {
      return h.size() == 1 && !h[0].value("error", "").empty();
    }, 120s);
    EXPECT_NE(h[0].value("error", "").find("the node's disk is full"), std::string::npos)
        << h.dump(1);
  }
  EXPECT_TRUE(Processes({"--ssh-host", Root()}).empty()) << "a worker started on a bad host";
  ProcessResult table = cli_.Run({"pools"});
  EXPECT_NE(table.out.find("bad"), std::string::npos) << table.out;
  json sweeps = cli_.Json({"sweeps"});
  EXPECT_TRUE(sweeps["sweeps"].empty()) << sweeps.dump();
}

// A node on an older system: the host's sessions run in a Debian 11 root filesystem (glibc
// 2.31, none of the build's libraries), where the copied bundle must run the worker and a run.
TEST_F(SshPoolE2eTest, ANodeOnDebian11RunsTheCopiedBundle) {
  ProcessResult tar = RunProcess({ABLATE_SOURCE_DIR "/scripts/debian11_rootfs.sh"}, {}, 600s);
  if (tar.exit_code == 77) GTEST_SKIP() << tar.err;
  ASSERT_EQ(tar.exit_code, 0) << tar.err;
  std::string tar_path = tar.out.substr(0, tar.out.find('\n'));
  // ChrootDirectory wants every folder above the root owned by root and writable by it alone,
  // which /tmp is not: the node lives beside the cached tarball.
  std::string base = fs::path(tar_path).parent_path().string() + "/ssh-node-XXXXXX";
  ASSERT_NE(::mkdtemp(base.data()), nullptr);
  const std::string node = base;
  struct Cleanup {
    std::string node;
    ~Cleanup() {
      // What still runs in the tree (a session, a worker shutting down) goes first.
      for (const auto& e : fs::directory_iterator("/proc")) {
        std::error_code ec;
        if (fs::read_symlink(e.path() / "root", ec).string() == node) {
          ::kill(std::stoi(e.path().filename().string()), SIGKILL);
        }
      }
      std::this_thread::sleep_for(200ms);
      // Unmounted first; never removed while /proc is mounted in it.
      if (::umount2((node + "/proc").c_str(), MNT_DETACH) == 0 || errno == EINVAL) {
        std::error_code ec;
        fs::remove_all(node, ec);
      }
    }
  } cleanup{node};
  ASSERT_EQ(RunProcess({"/bin/tar", "-C", node, "-xf", tar_path}, {}, 300s).exit_code, 0);
  fs::permissions(node, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                            fs::perms::others_read | fs::perms::others_exec);
  ASSERT_EQ(::mount("proc", (node + "/proc").c_str(), "proc", 0, nullptr), 0)
      << std::strerror(errno);
  fs::copy(Root() + "/datasets", node + "/srv/datasets", fs::copy_options::recursive);
  hosts_.push_back(std::make_unique<SshdHost>(Root() + "/sshd-old"));
  SshdHost* old = hosts_.back().get();
  old->UseClientKey(Root() + "/id");
  old->UseChroot(node);
  std::string error;
  ASSERT_TRUE(old->Start(&error)) << error;
  // Paths on the node are the chroot's own.
  std::string pool = Pool("rented", {old});
  for (auto [from, to] : {std::pair<std::string, std::string>{Root() + "/node/opt", "/opt/ablate"},
                          {Root() + "/node/work", "/srv/work"},
                          {Root() + "/datasets", "/srv/datasets"}}) {
    pool.replace(pool.find(from), from.size(), to);
  }
  StartCoordinator(pool);
  WriteFile(Root() + "/spec.yaml",
            "name: old-node\nbaseline: {preset: r20-sub3min, scale: tiny, set: "
            "{num_iterations: 20, muon.momentum_warmup_steps: 4}}\nseeds: 1\ngpus_per_run: 0\n"
            "dataset: debian-text\nmax_attempts: 1\npool: rented\n");
  ProcessResult submit = cli_.Run({"submit", Root() + "/spec.yaml"});
  ASSERT_EQ(submit.exit_code, 0) << submit.err;
  json r = cli_.WaitFor({"run", "1"}, Succeeded, 240s);
  EXPECT_TRUE(Succeeded(r)) << r.dump() << "\n" << Hosts("rented").dump(1);
  EXPECT_EQ(r.value("worker_id", ""), "ssh/rented/" + Key(old));
  // It ran from the copy in the Debian 11 tree, on its loader and glibc.
  EXPECT_TRUE(ReadFile(node + "/etc/debian_version").starts_with("11")) << "not a Debian 11 tree";
  bool copied = false;
  for (const auto& e : fs::directory_iterator(node + "/opt/ablate")) {
    copied = copied || fs::exists(e.path() / ".complete");
  }
  EXPECT_TRUE(copied) << "no bundle under the node's /opt/ablate";
  WaitHosts("rented", [](const json& h) { return h.size() == 1 && h[0]["state"] == "down"; }, 60s);
}

TEST_F(SshPoolE2eTest, APoolsFileWithABadHostIsRefusedAtStart) {
  WriteFile(Root() + "/pools.yaml",
            "pools:\n  - name: r\n    kind: ssh\n    hosts: [root@127.0.0.1:99999]\n"
            "    bundle: " + bundle_ + "\n    worker: {bundle_dir: /opt/a, work_dir: /w}\n");
  ProcessResult r = RunProcess({ABLATE_COORDINATOR_BIN, "--listen", "127.0.0.1:0", "--data-dir",
                                Root() + "/coord", "--http", "off", "--pools",
                                Root() + "/pools.yaml"},
                               {}, 30s);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("pools.yaml:4:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("99999"), std::string::npos) << r.err;
}

// The README's example pools file parses; started from a fresh clone (no ./dev.sh dist yet), the
// coordinator says which bundle it lacks and how to make it.
TEST_F(SshPoolE2eTest, TheExamplePoolsFileNamesTheBundleItNeeds) {
  // A copy in a fresh folder: the bundle it names (../dist/...) is not there, whatever this
  // checkout has built.
  fs::create_directories(Root() + "/clone/examples");
  const std::string example = Root() + "/clone/examples/pools-rented.yaml";
  fs::copy_file(ABLATE_SOURCE_DIR "/examples/pools-rented.yaml", example);
  ProcessResult r = RunProcess({ABLATE_COORDINATOR_BIN, "--listen", "127.0.0.1:0", "--data-dir",
                                Root() + "/coord", "--http", "off", "--pools", example},
                               {}, 30s);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("pool 'rented': bundle " + Root() +
                       "/clone/dist/ablate-0.1.0-linux-x86_64.tar.gz cannot be read (make it "
                       "with ./dev.sh dist)"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace ablate::testing
