// End to end over real processes: ablate-coordinator on an OS-chosen loopback port with a SQLite
// file, driven by the real `ablate` binary. Covers submit, list, show, cancel, watch, tokens,
// exit codes, and a SIGKILL + restart that must keep every sweep.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "tests/util/subprocess.h"

namespace ablate::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kSpec = R"(name: itest
baseline: {preset: r9-shortcuts, scale: tiny}
seeds: 2
gpus_per_run: 0
tags: [integration]
ablations:
  - {name: softcap-15, set: {logit_softcap: 15}}
  - {name: no-shortcut, set: {embed_shortcut: false}}
)";

constexpr const char* kBadSpec = R"(name: bad
baseline: {preset: r9-shortcuts, scale: tiny}
seeds: 2
ablations:
  - {name: softcap-15, set: {logit_softcapp: 15}}
)";

class Coordinator {
 public:
  Coordinator(const std::string& data_dir, const std::string& log_dir,
              std::vector<std::string> extra = {}) {
    std::filesystem::remove(data_dir + "/port");
    std::vector<std::string> argv = {ABLATE_COORDINATOR_BIN, "--listen", "127.0.0.1:0",
                                     "--data-dir",           data_dir,   "--port-file",
                                     data_dir + "/port",     "--http",   "127.0.0.1:0"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    proc_ = std::make_unique<Subprocess>(argv, log_dir);
    for (int i = 0; i < 300 && !std::filesystem::exists(data_dir + "/port"); ++i) {
      std::this_thread::sleep_for(20ms);
    }
    std::string port = ReadFile(data_dir + "/port");
    address_ = "127.0.0.1:" + port.substr(0, port.find('\n'));
  }
  const std::string& address() const { return address_; }
  Subprocess& proc() { return *proc_; }

 private:
  std::unique_ptr<Subprocess> proc_;
  std::string address_;
};

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    coordinator_ = std::make_unique<Coordinator>(data_.path(), logs_.path());
    ASSERT_NE(coordinator_->address(), "127.0.0.1:") << coordinator_->proc().Stderr();
    WriteFile(data_.path() + "/spec.yaml", kSpec);
    WriteFile(data_.path() + "/bad.yaml", kBadSpec);
  }

  ProcessResult Cli(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
    std::vector<std::string> argv = {ABLATE_CLI_BIN, "--server", coordinator_->address()};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunProcess(argv, std::move(env));
  }

  json CliJson(std::vector<std::string> args) {
    args.insert(args.begin(), "--json");
    ProcessResult r = Cli(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out, nullptr, false);
  }

  // Rows in a table of the coordinator's database, read through SQLite directly.
  int CountRows(const std::string& table) {
    sqlite3* db = nullptr;
    std::string path = data_.path() + "/ablate.db";
    EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    std::string sql = "SELECT count(*) FROM " + table;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK);
    int n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
  }

  std::string Spec() { return data_.path() + "/spec.yaml"; }

  TempDir data_, logs_;
  std::unique_ptr<Coordinator> coordinator_;
};

TEST_F(CliTest, GridAroundTheBaselineMergesThatPoint) {
  WriteFile(Spec(),
            "name: grid\nbaseline: {preset: r20-sub3min, scale: tiny}\nseeds: 2\n"
            "gpus_per_run: 0\ngrid: {muon.lr: [0.03, 0.05, 0.07]}\n");
  ProcessResult dry = Cli({"submit", Spec(), "--dry-run"});
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_NE(dry.out.find("3 variants × 2 seeds = 6 runs"), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find("note: grid point 'muon.lr=0.05' is the baseline itself (muon.lr = "
                         "0.05): merged with the baseline"),
            std::string::npos)
      << dry.out;
  json resp = CliJson({"submit", Spec(), "--dry-run"});
  ASSERT_EQ(resp["sweep"]["variants"].size(), 3u);
  EXPECT_EQ(resp["sweep"]["variants"][0]["name"], "baseline");
  EXPECT_EQ(resp["notes"].size(), 1u);
}

// Issue 24 (12): a spec that is not UTF-8 cannot travel as a proto3 string; the reason and its
// file:line:column come from the CLI before anything is sent.
TEST_F(CliTest, InvalidUtf8SpecIsRejectedWithItsPosition) {
  WriteFile(Spec(), "name: bad\nbaseline: {preset: r20-sub3min, scale: tiny}\ntags: [ab\xFF]\n");
  for (bool dry : {true, false}) {
    std::vector<std::string> args = {"submit", Spec()};
    if (dry) args.push_back("--dry-run");
    ProcessResult r = Cli(args);
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_NE(r.err.find(Spec() + ":3:10: the spec is not valid UTF-8 (byte 0xFF)"),
              std::string::npos)
        << r.err;
  }
  EXPECT_EQ(CountRows("sweeps"), 0);
}

// Issue 24 (11): stored text (a tag stored before tags were checked, a worker's error) reaches the
// terminal with its control characters escaped.
TEST_F(CliTest, StoredControlCharactersAreEscapedOnOutput) {
  ASSERT_EQ(Cli({"submit", Spec()}).exit_code, 0);
  sqlite3* db = nullptr;
  const std::string path = data_.path() + "/ablate.db";
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "INSERT INTO sweep_tags (sweep_id, tag) VALUES "
                         "(1, 'red' || char(27) || '[31m' || char(7) || char(8238) || 'x')",
                         nullptr, nullptr, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"sweeps"}, std::vector<std::string>{"sweep", "1"}}) {
    ProcessResult r = Cli(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << args[0] << " printed a raw ESC";
    EXPECT_EQ(r.out.find('\x07'), std::string::npos) << args[0] << " printed a raw BEL";
    EXPECT_EQ(r.out.find("\xE2\x80\xAE"), std::string::npos) << args[0] << " printed U+202E";
    EXPECT_NE(r.out.find("red\\x1b[31m\\x07\\u202ex"), std::string::npos) << r.out;
  }
}

TEST_F(CliTest, SubmitListShowRuns) {
  ProcessResult dry = Cli({"submit", Spec(), "--dry-run"});
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_NE(dry.out.find("3 variants × 2 seeds = 6 runs"), std::string::npos) << dry.out;
  EXPECT_EQ(CountRows("sweeps"), 0);
  EXPECT_EQ(CountRows("runs"), 0);

  ProcessResult sub = Cli({"submit", Spec()});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  EXPECT_NE(sub.out.find("submitted sweep 1 'itest'"), std::string::npos) << sub.out;
  EXPECT_NE(sub.out.find("logit_softcap 30.0→15.0"), std::string::npos) << sub.out;
  EXPECT_EQ(CountRows("runs"), 6);

  json sweeps = CliJson({"sweeps"});
  ASSERT_EQ(sweeps["sweeps"].size(), 1u);
  EXPECT_EQ(sweeps["sweeps"][0]["name"], "itest");
  EXPECT_EQ(sweeps["sweeps"][0]["counts"]["total"], 6);
  EXPECT_EQ(sweeps["sweeps"][0]["counts"]["queued"], 6);

  json sweep = CliJson({"sweep", "1"});
  ASSERT_EQ(sweep["variants"].size(), 3u);
  EXPECT_EQ(sweep["variants"][0]["name"], "baseline");
  EXPECT_EQ(sweep["variants"][0]["diff_json"], "{}");
  EXPECT_EQ(sweep["scale"], "tiny");
  EXPECT_NE(sweep["spec_yaml"].get<std::string>().find("no-shortcut"), std::string::npos);
  // The dispatch order: block k = seed k of every variant, shuffled per block.
  ASSERT_EQ(sweep["dispatch_blocks"].size(), 2u);
  EXPECT_EQ(sweep["dispatch_blocks"][1]["block"], 1);
  EXPECT_EQ(sweep["dispatch_blocks"][1]["variants"].size(), 3u);
  ProcessResult shown = Cli({"sweep", "1"});
  EXPECT_NE(shown.out.find("run order: block k = seed k of every variant, shuffled per block"),
            std::string::npos)
      << shown.out;
  EXPECT_NE(shown.out.find("  block 1: "), std::string::npos) << shown.out;

  json runs = CliJson({"runs", "--sweep", "1"});
  ASSERT_EQ(runs["runs"].size(), 6u);
  json run = CliJson({"run", runs["runs"][1]["id"].get<std::string>()});  // int64 is a JSON string
  json config = json::parse(run["config_json"].get<std::string>());
  EXPECT_EQ(config["seed"], run["seed"]);
  EXPECT_EQ(config["vocab_size"], 512);

  ProcessResult table = Cli({"runs", "--sweep", "1", "--state", "queued"});
  EXPECT_EQ(table.exit_code, 0);
  EXPECT_NE(table.out.find("softcap-15"), std::string::npos);
}

TEST_F(CliTest, RejectedSpecNamesTheProblemAndStoresNothing) {
  ProcessResult r = Cli({"submit", data_.path() + "/bad.yaml"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("bad.yaml:5:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("logit_softcapp"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("logit_softcap'"), std::string::npos) << r.err;
  EXPECT_EQ(CountRows("sweeps"), 0);
  EXPECT_EQ(CountRows("variants"), 0);
  EXPECT_EQ(CountRows("runs"), 0);
  EXPECT_EQ(Cli({"submit", data_.path() + "/missing.yaml"}).exit_code, 3);
}

// Every malformed spec of the parser's suite, now through the real CLI and coordinator: each is
// rejected with exit code 3 and a file:line:column message, and nothing at all is stored.
TEST_F(CliTest, EveryMalformedSpecIsRejectedAndStoresNothing) {
  int checked = 0;
  for (const auto& e : std::filesystem::directory_iterator(ABLATE_SPECS_DIR)) {
    std::string path = e.path().string();
    ProcessResult r = Cli({"submit", path});
    EXPECT_EQ(r.exit_code, 3) << path << "\n" << r.out << r.err;
    std::string where = e.path().filename().string() + ":";
    EXPECT_NE(r.err.find(where), std::string::npos) << path << ": " << r.err;
    ++checked;
  }
  EXPECT_GE(checked, 25);
  for (const char* table : {"sweeps", "variants", "runs", "events"}) {
    EXPECT_EQ(CountRows(table), 0) << table;
  }
}

TEST_F(CliTest, ExitCodes) {
  EXPECT_EQ(Cli({"sweep", "99"}).exit_code, 4);
  EXPECT_EQ(Cli({"run", "99"}).exit_code, 4);
  EXPECT_EQ(Cli({"frobnicate"}).exit_code, 2);
  EXPECT_EQ(Cli({"runs", "--state", "sleeping"}).exit_code, 2);
  ProcessResult help = Cli({"submit", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--dry-run"), std::string::npos);
  ProcessResult gone = RunProcess({ABLATE_CLI_BIN, "--server", "127.0.0.1:1", "sweeps"});
  EXPECT_EQ(gone.exit_code, 5);
  EXPECT_NE(gone.err.find("cannot reach the coordinator"), std::string::npos) << gone.err;
}

TEST_F(CliTest, CancelSweep) {
  ASSERT_EQ(Cli({"submit", Spec()}).exit_code, 0);
  ProcessResult c = Cli({"cancel", "1"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  json sweep = CliJson({"sweep", "1"});
  EXPECT_EQ(sweep["state"], "SWEEP_CANCELLED");
  EXPECT_EQ(sweep["counts"]["cancelled"], 6);
  ProcessResult again = Cli({"cancel", "1"});
  EXPECT_EQ(again.exit_code, 3) << again.err;
  EXPECT_EQ(Cli({"cancel", "42"}).exit_code, 4);
}

TEST_F(CliTest, WatchEndsWhenTheSweepIsCancelled) {
  ASSERT_EQ(Cli({"submit", Spec()}).exit_code, 0);
  Subprocess watch({ABLATE_CLI_BIN, "--server", coordinator_->address(), "watch", "1"},
                   logs_.path());
  for (int i = 0; i < 200 && watch.Stdout().find("queued") == std::string::npos; ++i) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_NE(watch.Stdout().find("0/6 done"), std::string::npos) << watch.Stdout();
  ASSERT_EQ(Cli({"cancel", "1"}).exit_code, 0);
  std::optional<ProcessResult> r = watch.Wait(10s);
  ASSERT_TRUE(r.has_value()) << "watch did not end after the cancel";
  EXPECT_EQ(r->exit_code, 1);
  EXPECT_NE(r->out.find("cancelled"), std::string::npos) << r->out;
}

TEST_F(CliTest, WatchStopsOnCtrlC) {
  ASSERT_EQ(Cli({"submit", Spec()}).exit_code, 0);
  Subprocess watch({ABLATE_CLI_BIN, "--server", coordinator_->address(), "watch", "1"},
                   logs_.path());
  for (int i = 0; i < 200 && watch.Stdout().empty(); ++i) std::this_thread::sleep_for(20ms);
  watch.Signal(SIGINT);
  std::optional<ProcessResult> r = watch.Wait(10s);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->exit_code, 130);
  EXPECT_EQ(CliJson({"sweep", "1"})["state"], "SWEEP_QUEUED");
}

TEST_F(CliTest, SurvivesSigkillAndRestart) {
  ASSERT_EQ(Cli({"submit", Spec()}).exit_code, 0);
  ASSERT_EQ(Cli({"submit", Spec()}).exit_code, 0);
  ASSERT_EQ(Cli({"cancel", "2"}).exit_code, 0);
  json before = CliJson({"sweeps"});
  json runs_before = CliJson({"runs"});
  coordinator_->proc().Signal(SIGKILL);
  ASSERT_TRUE(coordinator_->proc().Wait(10s).has_value());
  coordinator_ = std::make_unique<Coordinator>(data_.path(), logs_.path());
  json after = CliJson({"sweeps"});
  EXPECT_EQ(before, after);
  EXPECT_EQ(runs_before, CliJson({"runs"}));
  ASSERT_EQ(Cli({"submit", Spec()}).exit_code, 0);
  EXPECT_EQ(CliJson({"sweeps"})["sweeps"].size(), 3u);
}

TEST_F(CliTest, SigtermShutsDownGracefully) {
  coordinator_->proc().Signal(SIGTERM);
  std::optional<ProcessResult> r = coordinator_->proc().Wait(15s);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->exit_code, 0) << r->err;
  EXPECT_NE(r->err.find("stopped"), std::string::npos);
}

class TokenTest : public CliTest {
 protected:
  void SetUp() override {
    WriteFile(data_.path() + "/client.token", "s3cret\n");
    WriteFile(data_.path() + "/worker.token", "w0rker\n");
    coordinator_ = std::make_unique<Coordinator>(
        data_.path(), logs_.path(),
        std::vector<std::string>{"--client-token-file", data_.path() + "/client.token",
                                 "--worker-token-file", data_.path() + "/worker.token"});
    WriteFile(data_.path() + "/spec.yaml", kSpec);
    WriteFile(data_.path() + "/wrong.token", "guess");
  }
};

TEST_F(TokenTest, WrongOrMissingTokenIsRefused) {
  ProcessResult none = Cli({"sweeps"});
  EXPECT_EQ(none.exit_code, 5);
  EXPECT_NE(none.err.find("missing client token"), std::string::npos) << none.err;
  ProcessResult wrong = Cli({"--token-file", data_.path() + "/wrong.token", "submit", Spec()});
  EXPECT_EQ(wrong.exit_code, 5);
  EXPECT_NE(wrong.err.find("wrong client token"), std::string::npos) << wrong.err;
  EXPECT_EQ(Cli({"sweeps"}, {{"ABLATE_TOKEN", "w0rker"}}).exit_code, 5);
  EXPECT_EQ(CountRows("sweeps"), 0);
  ProcessResult ok = Cli({"--token-file", data_.path() + "/client.token", "submit", Spec()});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(Cli({"sweeps"}, {{"ABLATE_TOKEN", "s3cret"}}).exit_code, 0);
}

// Issue 24 (14): ABLATE_TOKEN_FILE stands in for --token-file (a file), ABLATE_TOKEN is the
// token itself; both set at once is refused rather than guessed.
TEST_F(TokenTest, TokenFileAndTokenValueFromTheEnvironment) {
  const std::string file = data_.path() + "/client.token";
  ProcessResult by_file = Cli({"sweeps"}, {{"ABLATE_TOKEN_FILE", file}});
  EXPECT_EQ(by_file.exit_code, 0) << by_file.err;
  ProcessResult wrong_file =
      Cli({"sweeps"}, {{"ABLATE_TOKEN_FILE", data_.path() + "/wrong.token"}});
  EXPECT_EQ(wrong_file.exit_code, 5) << wrong_file.err;
  ProcessResult missing = Cli({"sweeps"}, {{"ABLATE_TOKEN_FILE", data_.path() + "/nope.token"}});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("nope.token"), std::string::npos) << missing.err;
  ProcessResult both = Cli({"sweeps"}, {{"ABLATE_TOKEN_FILE", file}, {"ABLATE_TOKEN", "s3cret"}});
  EXPECT_NE(both.exit_code, 0);
  EXPECT_NE(both.err.find("both ABLATE_TOKEN_FILE and ABLATE_TOKEN"), std::string::npos)
      << both.err;
  // A file name in ABLATE_TOKEN is taken as the token (and refused), as documented.
  ProcessResult name_as_token = Cli({"sweeps"}, {{"ABLATE_TOKEN", file}});
  EXPECT_EQ(name_as_token.exit_code, 5);
  EXPECT_NE(name_as_token.err.find("ABLATE_TOKEN_FILE"), std::string::npos) << name_as_token.err;
  ProcessResult flag_wins =
      Cli({"--token-file", file, "sweeps"}, {{"ABLATE_TOKEN", "guess"}});
  EXPECT_EQ(flag_wins.exit_code, 0) << flag_wins.err;
}

// The CLI, the worker and the coordinator read token files the same way (common/
// token_file.h): a missing or empty file is an error that names it, never an empty token.
TEST_F(TokenTest, MissingOrEmptyTokenFilesAreClearErrors) {
  WriteFile(data_.path() + "/empty.token", " \n");
  ProcessResult missing = Cli({"--token-file", data_.path() + "/nope.token", "sweeps"});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("cannot read token file " + data_.path() + "/nope.token"),
            std::string::npos)
      << missing.err;
  ProcessResult empty = Cli({"--token-file", data_.path() + "/empty.token", "sweeps"});
  EXPECT_NE(empty.exit_code, 0);
  EXPECT_NE(empty.err.find("token file " + data_.path() + "/empty.token is empty"),
            std::string::npos)
      << empty.err;
  ProcessResult worker = RunProcess({ABLATE_WORKER_BIN, "--coordinator", "127.0.0.1:1",
                                     "--work-dir", data_.path() + "/w", "--token-file",
                                     data_.path() + "/empty.token", "--gpus", "none"});
  EXPECT_EQ(worker.exit_code, 2) << worker.err;
  EXPECT_NE(worker.err.find("token file " + data_.path() + "/empty.token is empty"),
            std::string::npos)
      << worker.err;
}

class TlsTest : public CliTest {
 protected:
  void SetUp() override {
    std::string d = data_.path();
    ProcessResult gen =
        RunProcess({"/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                    d + "/key.pem", "-out", d + "/cert.pem", "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"});
    ASSERT_EQ(gen.exit_code, 0) << gen.err;
    coordinator_ = std::make_unique<Coordinator>(
        d, logs_.path(),
        std::vector<std::string>{"--tls-cert", d + "/cert.pem", "--tls-key", d + "/key.pem"});
    WriteFile(d + "/spec.yaml", kSpec);
  }
};

TEST_F(TlsTest, ClientsNeedTheCaToTalkToATlsCoordinator) {
  std::string ca = data_.path() + "/cert.pem";
  ProcessResult ok = Cli({"--tls-ca", ca, "submit", Spec()});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(Cli({"sweeps"}, {{"ABLATE_TLS_CA", ca}}).exit_code, 0);
  ProcessResult plain = Cli({"sweeps"});
  EXPECT_EQ(plain.exit_code, 5) << "a plaintext client must not get through";
  ProcessResult missing = Cli({"--tls-ca", data_.path() + "/nope.pem", "sweeps"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("cannot read TLS CA file"), std::string::npos);
  // A worker verifies the coordinator with the same CA and registers over TLS.
  Subprocess worker({ABLATE_WORKER_BIN, "--coordinator", coordinator_->address(), "--work-dir",
                     data_.path() + "/work", "--tls-ca", ca, "--gpus", "none", "--name", "tls-w"},
                    logs_.path());
  json workers;
  for (int i = 0; i < 100; ++i) {
    ProcessResult r = Cli({"--tls-ca", ca, "--json", "workers"});
    workers = json::parse(r.out, nullptr, false);
    if (workers.is_object() && workers["workers"].size() == 1) break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_EQ(workers["workers"].size(), 1u) << worker.Stderr();
  EXPECT_EQ(workers["workers"][0]["id"], "tls-w");
}

// Each command's --help ends with the guide's page that covers it, and that page exists
// (issue 40): a command added without a page fails here, naming it.
TEST(CliHelpTest, EveryCommandsHelpEndsWithItsGuidePage) {
  ProcessResult top = RunProcess({ABLATE_CLI_BIN, "--help"});
  ASSERT_EQ(top.exit_code, 0) << top.err;
  EXPECT_NE(top.out.find("docs/sweeps.md"), std::string::npos) << top.out;
  std::vector<std::string> commands;
  std::istringstream lines(top.out.substr(top.out.find("Subcommands:")));
  std::string line;
  std::getline(lines, line);
  while (std::getline(lines, line) && line.rfind("  ", 0) == 0) {
    commands.push_back(line.substr(2, line.find(' ', 2) - 2));
  }
  ASSERT_GE(commands.size(), 19u) << top.out;
  for (const std::string& command : commands) {
    ProcessResult help = RunProcess({ABLATE_CLI_BIN, command, "--help"});
    EXPECT_EQ(help.exit_code, 0) << command;
    std::string out = help.out;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    const std::string last = out.substr(out.rfind('\n') + 1);
    ASSERT_EQ(last.rfind("Guide: docs/", 0), 0u) << "ablate " << command << " --help ends: " << last;
    const std::string page = last.substr(7);
    EXPECT_TRUE(std::filesystem::is_regular_file(std::string(ABLATE_SOURCE_DIR) + "/" + page))
        << "ablate " << command << " names " << page << ", which is not in the source tree";
  }
}

}  // namespace
}  // namespace ablate::testing
