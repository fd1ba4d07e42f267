// `ablate up`: the embedded default for one machine. Starts ablate-coordinator (with its web
// dashboard) and one ablate-worker as child processes (binaries next to `ablate`, or in the build
// tree beside it), prints where they listen, and stops both on Ctrl-C or SIGTERM.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <thread>

#include "cli/commands.h"
#include "cli/demo_spec.h"

namespace ablate {
namespace {

namespace fs = std::filesystem;

// `name` next to this binary, or in the build tree's sibling folder (cli/ -> server/, worker/).
std::string FindSibling(const std::string& name, const std::string& build_folder) {
  fs::path self = fs::read_symlink("/proc/self/exe").parent_path();
  for (const fs::path& p : {self / name, self.parent_path() / build_folder / name}) {
    if (fs::exists(p)) return p.string();
  }
  return "";
}

// `name` as an executable path: as given when it holds a '/', else the first match on $PATH;
// "" when there is none.
std::string OnPath(const std::string& name) {
  auto runnable = [](const fs::path& p) { return fs::is_regular_file(p) && access(p.c_str(), X_OK) == 0; };
  if (name.find('/') != std::string::npos) return runnable(name) ? fs::absolute(name).string() : "";
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  for (size_t start = 0; start <= dirs.size();) {
    size_t end = std::min(dirs.find(':', start), dirs.size());
    std::string dir = dirs.substr(start, end - start);
    if (!dir.empty() && runnable(fs::path(dir) / name)) return (fs::path(dir) / name).string();
    start = end + 1;
  }
  return "";
}

// The local worker's script flags: --allow-scripts --python PATH when the interpreter is found.
// nullopt (after saying why) when scripts were asked for and it is not.
std::optional<std::vector<std::string>> ScriptFlags(const UpOptions& o) {
  std::string python = OnPath(o.python);
  if (!python.empty()) return std::vector<std::string>{"--allow-scripts", "--python", python};
  if (o.allow_scripts || o.python_given) {
    std::cerr << "ablate up: --python " << o.python
              << ": not found (not an executable file, nor on $PATH); script runs need a Python "
                 "interpreter: install python3 or pass --python /path/to/python3\n";
    return std::nullopt;
  }
  std::cout << "ablate up: no " << o.python
            << " on $PATH: the local worker runs no script sweeps (--python PATH names one)"
            << std::endl;
  return std::vector<std::string>{};
}

pid_t Spawn(const std::vector<std::string>& argv, const std::string& log) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  FILE* f = std::fopen(log.c_str(), "a");
  if (f) {
    dup2(fileno(f), 1);
    dup2(fileno(f), 2);
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execv(args[0], args.data());
  _exit(127);
}

std::string WaitForPort(const std::string& port_file, pid_t coordinator) {
  for (int i = 0; i < 300; ++i) {
    std::ifstream in(port_file);
    std::string port;
    if (in >> port) return port;
    if (waitpid(coordinator, nullptr, WNOHANG) == coordinator) return "";
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return "";
}

// True when nothing listens on IPv4 `host`:`port` (a bind succeeds); true as well for hosts that
// are not IPv4 literals, which the coordinator then tries itself.
bool PortFree(const std::string& host, int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) return true;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return true;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  bool free = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return free;
}

// The dashboard address to ask for: as given, or the default unless its port is taken, in which
// case the OS picks one (the demo must not fail because 8080 is busy).
std::string DashboardAddress(const UpOptions& o) {
  if (o.http_given || o.http == "off") return o.http;
  std::string host = o.http.substr(0, o.http.rfind(':'));
  int port = std::atoi(o.http.substr(o.http.rfind(':') + 1).c_str());
  if (port == 0 || PortFree(host, port)) return o.http;
  std::cout << "ablate up: " << o.http << " is taken; the dashboard gets a free port" << std::endl;
  return host + ":0";
}

// Stops both children: SIGTERM, then SIGKILL after `grace`.
void StopAll(const std::vector<pid_t>& pids, std::chrono::seconds grace) {
  for (pid_t p : pids) kill(p, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + grace;
  for (pid_t p : pids) {
    while (waitpid(p, nullptr, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(p, SIGKILL);
        waitpid(p, nullptr, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
}

// Fortune files of Debian's fortunes-min package (text only, no .dat indexes or .u8 links).
std::vector<std::string> FortuneFiles() {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/usr/share/games/fortunes", ec)) {
    std::string ext = e.path().extension().string();
    if (e.is_regular_file() && !e.is_symlink() && ext != ".dat" && ext != ".u8") {
      files.push_back(e.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Encodes the demo dataset (debian-text) once; later runs of `ablate up` reuse it. Every
// `ablate up` has it, so that examples/demo-tiny.yaml (the README's first journey) runs; without
// --demo (`required` false) a machine that cannot encode it only gets a note.
bool EnsureDemoDataset(const std::string& datasets, bool required) {
  std::string out = datasets + "/debian-text";
  if (fs::exists(out + "/manifest.json")) return true;
  std::string tool = FindSibling("ablate-data", "trainer");
  std::vector<std::string> inputs = FortuneFiles();
  if (tool.empty() || inputs.empty()) {
    (required ? std::cerr : std::cout)
        << (required ? "ablate up --demo: needs" : "ablate up: no debian-text dataset (tiny-scale "
                                                   "sweeps such as examples/demo-tiny.yaml need it); "
                                                   "encoding it needs")
        << " ablate-data and Debian's fortunes-min package (apt-get install fortunes-min)\n";
    return false;
  }
  std::cout << "ablate up: encoding the demo dataset from " << inputs.size()
            << " fortune files into " << out << std::endl;
  std::vector<std::string> argv = {tool, "encode"};
  argv.insert(argv.end(), inputs.begin(), inputs.end());
  argv.insert(argv.end(), {"--out", out, "--val-fraction", "0.1"});
  pid_t pid = Spawn(argv, datasets + "/encode.log");
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::cerr << "ablate up --demo: encoding failed; see " << datasets << "/encode.log\n";
    return false;
  }
  return true;
}

// Submits the embedded demo sweep, follows it to the end and prints every run's result.
int RunDemo(const std::string& address, const std::string& dir) {
  ClientOptions co;
  co.server = address;
  std::string error;
  std::unique_ptr<Client> c = Client::Create(co, &error);
  if (!c) return kExitFailure;
  v1::SubmitSweepRequest req;
  req.set_spec_yaml(kDemoSpecYaml);
  req.set_file_name("examples/demo-tiny.yaml");
  v1::SubmitSweepResponse resp;
  grpc::Status s = c->stub().SubmitSweep(c->Context().get(), req, &resp);
  if (!s.ok()) return c->Fail(s, "demo sweep");
  int64_t id = resp.sweep().id();
  std::cout << "ablate up --demo: submitted sweep " << id << " '" << resp.sweep().name()
            << "' (" << resp.runs_size() << " runs); training on this machine's CPU\n"
            << std::endl;
  int watched = WatchCommand(*c, id);
  std::cout << "\nresults (final val loss, time to target " << resp.sweep().target_val_loss()
            << "):\n";
  RunsCommand(*c, id, "");
  std::cout << "\nwhich ablations change time to target or final val loss (`ablate compare " << id
            << "`):\n";
  CompareCommand(*c, id, "both", /*csv=*/false);
  std::cout << "\nstored in " << dir << "/ablate.db; to see it again in the dashboard, run `ablate up"
            << " --data-dir " << dir << "`, then `ablate sweep " << id << "` or `ablate compare " << id
            << "`" << std::endl;
  return watched;
}

}  // namespace

int UpCommand(const UpOptions& o) {
  std::string coordinator = FindSibling("ablate-coordinator", "server");
  std::string worker = FindSibling("ablate-worker", "worker");
  std::string trainer = FindSibling("ablate-train", "trainer");
  if (coordinator.empty() || worker.empty()) {
    std::cerr << "ablate up: ablate-coordinator and ablate-worker must be installed next to "
                 "ablate (or built in the same build tree)\n";
    return kExitFailure;
  }
  std::optional<std::vector<std::string>> script_flags = ScriptFlags(o);
  if (!script_flags) return kExitUsage;
  std::string dir = o.data_dir;
  fs::create_directories(dir + "/datasets");
  fs::create_directories(dir + "/worker");
  if (!EnsureDemoDataset(dir + "/datasets", /*required=*/o.demo) && o.demo) return kExitFailure;
  int cpu_slots = o.cpu_slots > 0 ? o.cpu_slots : int(std::max(1u, std::thread::hardware_concurrency()));
  std::string port_file = dir + "/coordinator.port";
  std::string http_port_file = dir + "/dashboard.port";
  fs::remove(port_file);
  fs::remove(http_port_file);
  std::string http = DashboardAddress(o);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigprocmask(SIG_BLOCK, &set, nullptr);
  pid_t coord = Spawn({coordinator, "--listen", o.listen, "--data-dir", dir, "--port-file",
                       port_file, "--lease-ms", std::to_string(o.lease_ms), "--http", http,
                       "--http-port-file", http_port_file},
                      dir + "/coordinator.log");
  std::string port = WaitForPort(port_file, coord);
  if (port.empty()) {
    std::cerr << "ablate up: the coordinator did not start; see " << dir << "/coordinator.log\n";
    StopAll({coord}, std::chrono::seconds(2));
    return kExitFailure;
  }
  std::string host = o.listen.substr(0, o.listen.rfind(':'));
  std::string address = host + ":" + port;
  std::string dashboard;
  if (http != "off") {
    std::string http_host = http.substr(0, http.rfind(':'));
    if (http_host == "0.0.0.0" || http_host == "[::]") http_host = "127.0.0.1";
    std::string http_port = WaitForPort(http_port_file, coord);
    if (!http_port.empty()) dashboard = "http://" + http_host + ":" + http_port + "/";
  }
  std::vector<std::string> wargv = {worker,      "--coordinator", address, "--work-dir",
                                    dir + "/worker", "--data-dir",  dir + "/datasets",
                                    "--cpu-slots", std::to_string(cpu_slots), "--gpus", o.gpus,
                                    "--name",      "local"};
  // One machine, one person: the local worker runs that person's scripts (issue 14).
  wargv.insert(wargv.end(), script_flags->begin(), script_flags->end());
  // Sweeps with checkpoint_every keep them in the data dir (issue 17).
  wargv.insert(wargv.end(), {"--checkpoint-dir", dir + "/checkpoints"});
  if (!trainer.empty()) wargv.insert(wargv.end(), {"--trainer", trainer});
  pid_t work = Spawn(wargv, dir + "/worker.log");
  std::cout << "ablate up: coordinator on " << address << " (data " << dir
            << "), local worker with " << cpu_slots << " CPU slots, GPUs " << o.gpus << "\n"
            << (dashboard.empty() ? "" : "  dashboard: " + dashboard + "\n")
            << "  export ABLATE_SERVER=" << address << "\n"
            << "  logs: " << dir << "/coordinator.log, " << dir << "/worker.log\n"
            << "  datasets: " << dir << "/datasets (one folder per dataset)\n"
            << "Ctrl-C stops both." << std::endl;
  std::ofstream(dir + "/server") << address << "\n";
  int code = kExitOk;
  if (o.demo) {
    sigprocmask(SIG_UNBLOCK, &set, nullptr);  // Ctrl-C ends the watch, then everything stops
    code = RunDemo(address, dir);
  } else {
    int sig = 0;
    sigwait(&set, &sig);
  }
  std::cout << "ablate up: stopping" << std::endl;
  StopAll({work, coord}, std::chrono::seconds(15));
  fs::remove(dir + "/server");
  return code;
}

}  // namespace ablate
