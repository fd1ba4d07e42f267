// ablate-coordinator: the gRPC coordinator. Opens (or creates) the SQLite store under --data-dir,
// serves the client and worker APIs plus gRPC health and reflection, and shuts down gracefully on
// SIGTERM or SIGINT.
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "common/cli_path_flag.h"
#include "common/message_limits.h"
#include "common/token_file.h"
#include "server/core/change_feed.h"
#include "server/http/dashboard_server.h"
#include "server/http/web_root.h"
#include "server/pools/pilot_job.h"
#include "server/pools/pools_setup.h"
#include "server/rpc/ablate_service.h"
#include "server/rpc/token_auth.h"
#include "server/rpc/worker_service.h"
#include "server/store/data_dir_lock.h"
#include "server/store/database_file.h"
#include "server/store/store.h"

namespace ablate {
namespace {

struct Flags {
  std::string listen = "127.0.0.1:7070";
  std::string data_dir;
  std::string client_token_file;
  std::string worker_token_file;
  std::string tls_cert;
  std::string tls_key;
  std::string port_file;
  std::string http = "127.0.0.1:8080";  // "off" = no dashboard
  std::string http_port_file;
  bool http_insecure = false;
  int http_max_live_streams = DashboardOptions().max_live_streams;
  int http_max_connections_per_address = DashboardOptions().gate.max_per_address;
  std::string web_root;
  int64_t lease_ms = 10000;
  int64_t heartbeat_ms = 1000;
  int64_t cancel_grace_ms = 10000;
  std::string pools_file;  // issue 15: --pools
  std::string coordinator_id;
  std::string advertise;
  int64_t pools_poll_ms = 20000;
  int grpc_buffer_mib = static_cast<int>(kGrpcBufferBytes >> 20);
};

std::string DefaultDataDir() {
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg) {
    return std::string(xdg) + "/ablate";
  }
  const char* home = std::getenv("HOME");
  return std::string(home ? home : ".") + "/.local/share/ablate";
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> Credentials(const Flags& f) {
  if (f.tls_cert.empty() != f.tls_key.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key must be given together");
  }
  if (f.tls_cert.empty()) return grpc::InsecureServerCredentials();
  absl::StatusOr<std::string> cert = ReadTokenFile(f.tls_cert);
  absl::StatusOr<std::string> key = ReadTokenFile(f.tls_key);
  if (!cert.ok()) return cert.status();
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions opts;
  opts.pem_key_cert_pairs.push_back({*key + "\n", *cert + "\n"});
  return grpc::SslServerCredentials(opts);
}

// Blocks SIGTERM and SIGINT in the calling thread, and so in every thread started after it
// (gRPC's included): they are then taken only by sigwait in WaitForSignal.
sigset_t BlockShutdownSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

// A thread that waits for one of `set` and then runs `on_signal`.
std::thread WaitForSignal(sigset_t set, std::function<void(int)> on_signal) {
  return std::thread([set, on_signal] {
    int sig = 0;
    sigwait(&set, &sig);
    on_signal(sig);
  });
}

// Every worker stream and watcher may read at once; keep their reader connections open.
StoreOptions CoordinatorStoreOptions() {
  StoreOptions o;
  o.max_idle_readers = 64;
  return o;
}

// Writes `port` to `path` atomically (readers never see a partial file); no-op for "".
void WritePortFile(const std::string& path, int port) {
  if (path.empty()) return;
  std::error_code ec;
  std::ofstream(path + ".tmp") << port << "\n";
  std::filesystem::rename(path + ".tmp", path, ec);
}

// The dashboard (HTTP, JSON API, live updates) unless --http off; null then.
absl::StatusOr<std::unique_ptr<DashboardServer>> StartDashboard(const Flags& f, Store* store,
                                                                ChangeFeed* feed,
                                                                const ServiceHooks& hooks,
                                                                const std::string& client_token) {
  if (f.http == "off") return nullptr;
  DashboardOptions options;
  options.listen = f.http;
  options.client_token = client_token;
  options.tls_cert_file = f.tls_cert;  // HTTPS with the gRPC certificate
  options.tls_key_file = f.tls_key;
  options.insecure = f.http_insecure;
  options.max_live_streams = f.http_max_live_streams;
  options.gate.max_per_address = f.http_max_connections_per_address;
  std::vector<std::string> roots = {f.web_root};
  if (f.web_root.empty()) {
    roots = DefaultWebRoots(std::filesystem::read_symlink("/proc/self/exe").string(),
                            ABLATE_SOURCE_WEB_DIR);
  }
  absl::StatusOr<std::string> root = FindWebRoot(roots);
  if (root.ok()) {
    options.web_root = *root;
    if (std::string w = MissingVendorWarning(*root); !w.empty()) {
      std::cerr << "ablate-coordinator: " << w << "\n";
    }
  } else if (!f.web_root.empty()) {
    return root.status();  // asked for explicitly: a mistake worth stopping for
  } else {
    std::cerr << "ablate-coordinator: serving the JSON API without pages: "
              << root.status().message() << "\n";
  }
  absl::StatusOr<std::unique_ptr<DashboardServer>> server =
      DashboardServer::Start(options, store, feed, hooks);
  if (!server.ok()) return server.status();
  std::cout << "ablate-coordinator dashboard on " << (*server)->scheme() << "://"
            << (*server)->host() << ":" << (*server)->port() << "/" << std::endl;
  WritePortFile(f.http_port_file, (*server)->port());
  return server;
}

// Prints "ablate-coordinator: <message>" and returns `exit_code`.
int Fail(const absl::Status& s, int exit_code) {
  std::cerr << "ablate-coordinator: " << s.message() << "\n";
  return exit_code;
}

// What the flags name on disk before anything starts: tokens, TLS credentials, pools.
struct Inputs {
  std::string client_token;
  std::string worker_token;
  std::shared_ptr<grpc::ServerCredentials> creds;
  std::vector<PoolConfig> pools;
};

absl::StatusOr<Inputs> ReadInputs(const Flags& f) {
  absl::StatusOr<std::string> client_token = ReadTokenFile(f.client_token_file);
  absl::StatusOr<std::string> worker_token = ReadTokenFile(f.worker_token_file);
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> creds = Credentials(f);
  for (const absl::Status& s : {client_token.status(), worker_token.status(), creds.status()}) {
    if (!s.ok()) return s;
  }
  absl::StatusOr<std::vector<PoolConfig>> pools = ReadPoolsFile(f.pools_file);
  if (!pools.ok()) return pools.status();
  return Inputs{*client_token, *worker_token, *creds, *std::move(pools)};
}

// The data dir, locked for this process, and its store.
struct DataDir {
  std::string path;
  std::unique_ptr<DataDirLock> lock;  // held until Serve returns (or the process dies)
  std::unique_ptr<Store> store;
};

absl::StatusOr<DataDir> OpenDataDir(const Flags& f) {
  DataDir d;
  d.path = f.data_dir.empty() ? DefaultDataDir() : f.data_dir;
  std::error_code ec;
  std::filesystem::create_directories(d.path, ec);
  if (ec) {
    return absl::FailedPreconditionError("cannot create data dir " + d.path + ": " +
                                         ec.message());
  }
  absl::StatusOr<std::unique_ptr<DataDirLock>> lock = DataDirLock::Acquire(d.path);
  if (!lock.ok()) return lock.status();
  d.lock = *std::move(lock);
  // Before anything opens it for writing: a damaged file is refused, never migrated or written.
  if (absl::Status s = CheckDatabaseFile(d.path + "/ablate.db"); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<Store>> store =
      Store::Open(d.path + "/ablate.db", CoordinatorStoreOptions());
  if (!store.ok()) return store.status();
  d.store = *std::move(store);
  return d;
}

DispatcherOptions DispatchOptions(const Flags& f) {
  DispatcherOptions o;
  o.lease_ms = f.lease_ms;
  o.heartbeat_interval_ms = f.heartbeat_ms;
  o.cancel_grace_ms = f.cancel_grace_ms;
  return o;
}

// The client service's and the dashboard's view of the scheduler.
ServiceHooks DispatcherHooks(Dispatcher& dispatcher) {
  ServiceHooks hooks;
  hooks.on_cancel = [&](const std::vector<int64_t>& runs) { dispatcher.CancelRuns(runs); };
  hooks.runs_by_worker = [&] { return dispatcher.RunsByWorker(); };
  hooks.worker_allocations = [&] { return dispatcher.WorkerAllocations(); };
  hooks.waiting_reasons = [&] { return dispatcher.WaitingReasons(); };
  hooks.on_submit = [&] { dispatcher.Kick(); };
  return hooks;
}

// The gRPC server with both services, health and reflection, listening on --listen; null when it
// cannot listen. `*port` is the bound port.
std::unique_ptr<grpc::Server> StartGrpc(const Flags& f, const Inputs& in,
                                        AblateServiceImpl* client_service,
                                        WorkerServiceImpl* worker_service, int* port) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(f.listen, in.creds, port);
  builder.RegisterService(client_service);
  builder.RegisterService(worker_service);
  // Applied by gRPC before any handler checks a token: small for every method (issue 24). Big
  // submits (scripts' files) come in chunks through UploadSweep, after its token check.
  builder.SetMaxReceiveMessageSize(static_cast<int>(kMaxMessageBytes));
  // gRPC 1.51 assembles a whole message before it compares it with that limit: without a
  // quota, four 90 MB calls with no token still cost ~280 MB. Under the quota the transport
  // refuses (RST_STREAM, ENHANCE_YOUR_CALM) streams that would buffer past it.
  builder.SetResourceQuota(grpc::ResourceQuota("ablate-coordinator")
                               .Resize(static_cast<size_t>(f.grpc_buffer_mib) << 20));
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || *port == 0) return nullptr;
  return server;
}

// The Slurm pools' manager, started, once the port that pilots dial is known.
std::unique_ptr<PoolManager> StartPools(const Flags& f, const std::vector<PoolConfig>& pools,
                                        const std::string& dir, int port, CommandRunner* runner,
                                        Store* store, Dispatcher* dispatcher) {
  PoolManagerOptions o;
  o.coordinator_id = f.coordinator_id.empty() ? DefaultCoordinatorId(dir) : f.coordinator_id;
  o.coordinator_address = PilotCoordinatorAddress(f.advertise, f.listen, port);
  o.poll_ms = f.pools_poll_ms;
  auto manager = std::make_unique<PoolManager>(pools, runner, store, dispatcher, o);
  manager->Start();
  std::cout << "ablate-coordinator pools: " << pools.size() << " (pilot jobs '"
            << PilotJobName(o.coordinator_id) << "', workers dial " << o.coordinator_address
            << ")" << std::endl;
  return manager;
}

int Serve(const Flags& f) {
  sigset_t signals = BlockShutdownSignals();
  absl::StatusOr<Inputs> in = ReadInputs(f);
  if (!in.ok()) return Fail(in.status(), 2);
  absl::StatusOr<DataDir> dir = OpenDataDir(f);
  if (!dir.ok()) return Fail(dir.status(), 1);
  Store* store = dir->store.get();
  ChangeFeed feed;
  TokenAuth auth(in->client_token, in->worker_token);
  Dispatcher dispatcher(store, &feed, DispatchOptions(f));
  if (absl::Status s = dispatcher.Start(); !s.ok()) return Fail(s, 1);
  ServiceHooks hooks = DispatcherHooks(dispatcher);
  std::unique_ptr<PoolManager> pool_manager;  // started once the port is known
  AddPoolHooks(&pool_manager, !in->pools.empty(), &hooks);
  AblateServiceImpl client_service(store, &feed, &auth, hooks);
  WorkerServiceImpl worker_service(&dispatcher, &auth, store);
  absl::StatusOr<std::unique_ptr<DashboardServer>> dashboard =
      StartDashboard(f, store, &feed, hooks, in->client_token);
  if (!dashboard.ok()) {
    const int code = Fail(dashboard.status(), 1);
    dispatcher.Stop();
    return code;
  }
  int port = 0;
  std::unique_ptr<grpc::Server> server =
      StartGrpc(f, *in, &client_service, &worker_service, &port);
  if (!server) return Fail(absl::UnavailableError("cannot listen on " + f.listen), 1);
  std::string host = f.listen.substr(0, f.listen.rfind(':'));
  std::cout << "ablate-coordinator listening on " << host << ":" << port << " (data "
            << dir->path << "/ablate.db, schema v" << store->SchemaVersion() << ")" << std::endl;
  ProcessRunner slurm_commands;
  if (!in->pools.empty()) {
    pool_manager =
        StartPools(f, in->pools, dir->path, port, &slurm_commands, store, &dispatcher);
  }
  WritePortFile(f.port_file, port);
  std::thread waiter = WaitForSignal(signals, [&](int sig) {
    std::cerr << "ablate-coordinator: signal " << sig << ", shutting down" << std::endl;
    feed.Close();
    if (*dashboard) (*dashboard)->Stop();
    server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  });
  server->Wait();
  waiter.join();
  if (pool_manager) pool_manager->Stop();
  dispatcher.Stop();
  std::cerr << "ablate-coordinator: stopped" << std::endl;
  return 0;
}

struct BackupFlags {
  std::string data_dir;
  std::string to;
};

// `ablate-coordinator backup`: an online copy of the data dir's database, safe while a
// coordinator serves it. Exit codes as the serve command's: 0 ok, 1 failed.
int Backup(const BackupFlags& f) {
  std::string from = (f.data_dir.empty() ? DefaultDataDir() : f.data_dir) + "/ablate.db";
  absl::StatusOr<BackupStats> stats = BackupDatabase(from, f.to);
  if (!stats.ok()) {
    std::cerr << "ablate-coordinator backup: " << stats.status().message() << "\n";
    return 1;
  }
  std::cout << "ablate-coordinator backup: " << from << " -> " << f.to << " (" << stats->pages
            << " pages, " << stats->bytes << " bytes, integrity_check ok)" << std::endl;
  return 0;
}

// --listen, --data-dir, tokens, TLS, --port-file, --grpc-buffer-mib.
void AddServeOptions(CLI::App& app, Flags& f) {
  app.add_option("--listen", f.listen, "HOST:PORT for gRPC; port 0 picks a free one")
      ->capture_default_str();
  app.add_option("--data-dir", f.data_dir,
                 "directory of ablate.db (default $XDG_DATA_HOME/ablate or "
                 "~/.local/share/ablate)")->transform(ablate::PathFlag());
  app.add_option("--client-token-file", f.client_token_file,
                 "file holding the token clients must present (default: none required)")
      ->transform(ablate::PathFlag());
  app.add_option("--worker-token-file", f.worker_token_file,
                 "file holding the token workers must present (default: none required)")
      ->transform(ablate::PathFlag());
  app.add_option("--tls-cert", f.tls_cert,
                 "PEM certificate: serve gRPC over TLS and the dashboard over HTTPS (needs "
                 "--tls-key)")->transform(ablate::PathFlag());
  app.add_option("--tls-key", f.tls_key, "PEM private key for --tls-cert")
      ->transform(ablate::PathFlag());
  app.add_option("--port-file", f.port_file, "write the bound port here once listening")
      ->transform(ablate::PathFlag());
  app.add_option("--grpc-buffer-mib", f.grpc_buffer_mib,
                 "memory gRPC's transport may hold for received messages, all callers together "
                 "(every message is at most 4 MiB; beyond this, streams are refused)")
      ->capture_default_str()
      ->check(CLI::Range(8, 65536));
}

// The dashboard's --http* and --web-root.
void AddHttpOptions(CLI::App& app, Flags& f) {
  app.add_option("--http", f.http,
                 "HOST:PORT of the web dashboard and its JSON API; port 0 picks a free one; "
                 "'off' serves none")
      ->capture_default_str();
  app.add_flag("--http-insecure", f.http_insecure,
               "allow --http on a non-loopback address without --client-token-file (anyone who "
               "can reach the port sees and changes every sweep)");
  app.add_option("--http-max-live-streams", f.http_max_live_streams,
                 "dashboard live-update streams (open pages) served at once; more are answered "
                 "503. Over HTTP a page holds no thread; under HTTPS each holds one, and at most "
                 "64 are served")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--http-max-connections-per-address", f.http_max_connections_per_address,
                 "dashboard connections one client address may hold at once (a reverse proxy in "
                 "front counts as one address); more are answered 503")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  app.add_option("--http-port-file", f.http_port_file,
                 "write the dashboard's bound port here once listening")
      ->transform(ablate::PathFlag());
  app.add_option("--web-root", f.web_root,
                 "folder with the dashboard's static/ and node_modules/ (default: installed "
                 "share/ablate/web, or the source tree's web/)")->transform(ablate::PathFlag());
}

// Leases, heartbeats, cancel grace, and the Slurm pools.
void AddSchedulingOptions(CLI::App& app, Flags& f) {
  app.add_option("--lease-ms", f.lease_ms,
                 "a worker silent this long loses its runs (requeued, not counted as failures)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--heartbeat-ms", f.heartbeat_ms, "how often workers must heartbeat")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--cancel-grace-ms", f.cancel_grace_ms,
                 "SIGTERM to SIGKILL delay when a run is cancelled")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--pools", f.pools_file,
                 "YAML file of pools for sweeps that say `pool: NAME`: Slurm pools (the "
                 "coordinator asks Slurm for allocations running ablate-worker --slurm) and ssh "
                 "pools (it starts ablate-worker on rented nodes over SSH); see the README")
      ->transform(ablate::PathFlag());
  app.add_option("--coordinator-id", f.coordinator_id,
                 "names this coordinator's pilot jobs (ablate-ID); default: a hash of the host "
                 "name and the data dir, stable across restarts");
  app.add_option("--advertise", f.advertise,
                 "HOST:PORT that pilots' workers dial (default: the --listen host, the host "
                 "name for 0.0.0.0, with the bound port)");
  app.add_option("--pools-poll-ms", f.pools_poll_ms,
                 "how often Slurm is asked about the pilots (one squeue per poll)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
}

// `ablate-coordinator backup`.
CLI::App* AddBackupCommand(CLI::App& app, BackupFlags* f) {
  CLI::App* backup = app.add_subcommand(
      "backup",
      "copy the database consistently while a coordinator may be running (SQLite online "
      "backup), check the copy with PRAGMA integrity_check, then rename it into place.\n"
      "Example: ablate-coordinator backup --data-dir /srv/ablate --to /backup/ablate-$(date +%F).db");
  backup->add_option("--data-dir", f->data_dir,
                     "directory of ablate.db (default as for serving)")
      ->transform(ablate::PathFlag());
  backup->add_option("--to", f->to, "file to write the copy to (replaced atomically)")
      ->transform(ablate::PathFlag())
      ->required();
  return backup;
}

}  // namespace
}  // namespace ablate

int main(int argc, char** argv) {
#ifdef NDEBUG
  // Debian's abseil checks every mutex acquisition for lock-order cycles (~1% of the
  // coordinator's cycles under load); debug builds keep the check.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
#endif
  ablate::Flags f;
  CLI::App app{
      "ablate-coordinator: stores sweeps in SQLite and hands their runs to ablate-worker "
      "daemons.\nExample: ablate-coordinator --listen 0.0.0.0:7070 --data-dir /srv/ablate "
      "--client-token-file client.token --worker-token-file worker.token"};
  ablate::AddServeOptions(app, f);
  ablate::AddHttpOptions(app, f);
  ablate::AddSchedulingOptions(app, f);
  ablate::BackupFlags backup_flags;
  CLI::App* backup = ablate::AddBackupCommand(app, &backup_flags);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (backup->parsed()) return ablate::Backup(backup_flags);
  return ablate::Serve(f);
}
