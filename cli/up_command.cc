// `ablate up`: the embedded default for one machine. Starts ablate-coordinator and one
// ablate-worker as child processes (binaries next to `ablate`, or in the build tree beside it),
// prints where they listen, and stops both on Ctrl-C or SIGTERM.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "cli/commands.h"

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
  std::string dir = o.data_dir;
  fs::create_directories(dir + "/datasets");
  fs::create_directories(dir + "/worker");
  std::string port_file = dir + "/coordinator.port";
  fs::remove(port_file);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigprocmask(SIG_BLOCK, &set, nullptr);
  pid_t coord = Spawn({coordinator, "--listen", o.listen, "--data-dir", dir, "--port-file",
                       port_file, "--lease-ms", std::to_string(o.lease_ms)},
                      dir + "/coordinator.log");
  std::string port = WaitForPort(port_file, coord);
  if (port.empty()) {
    std::cerr << "ablate up: the coordinator did not start; see " << dir << "/coordinator.log\n";
    StopAll({coord}, std::chrono::seconds(2));
    return kExitFailure;
  }
  std::string host = o.listen.substr(0, o.listen.rfind(':'));
  std::string address = host + ":" + port;
  std::vector<std::string> wargv = {worker,      "--coordinator", address, "--work-dir",
                                    dir + "/worker", "--data-dir",  dir + "/datasets",
                                    "--cpu-slots", std::to_string(o.cpu_slots), "--gpus", o.gpus,
                                    "--name",      "local"};
  if (!trainer.empty()) wargv.insert(wargv.end(), {"--trainer", trainer});
  pid_t work = Spawn(wargv, dir + "/worker.log");
  std::cout << "ablate up: coordinator on " << address << " (data " << dir
            << "), local worker with " << o.cpu_slots << " CPU slots, GPUs " << o.gpus << "\n"
            << "  export ABLATE_SERVER=" << address << "\n"
            << "  logs: " << dir << "/coordinator.log, " << dir << "/worker.log\n"
            << "  datasets: " << dir << "/datasets (one folder per dataset)\n"
            << "Ctrl-C stops both." << std::endl;
  std::ofstream(dir + "/server") << address << "\n";
  int sig = 0;
  sigwait(&set, &sig);
  std::cout << "ablate up: stopping" << std::endl;
  StopAll({work, coord}, std::chrono::seconds(15));
  fs::remove(dir + "/server");
  return kExitOk;
}

}  // namespace ablate
