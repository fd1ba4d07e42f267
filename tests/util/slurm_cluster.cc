// Config files and daemon lifecycle of the test Slurm cluster. The recipe (and why each setting
// is there) is reference/slurm.md §3; differences: munged is our own, on a socket in the folder,
// and every port is chosen free at start, so clusters of parallel tests never meet.
#include "tests/util/slurm_cluster.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <thread>

namespace ablate::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string HostName() {
  char buf[256] = {};
  return gethostname(buf, sizeof buf - 1) == 0 ? buf : "localhost";
}

bool Executable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

int Count(const std::string& text, const std::string& word) {
  int n = 0;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) n += line.find(word) != std::string::npos;
  return n;
}

}  // namespace

std::string SlurmCluster::UnavailableReason() {
  for (const char* bin : {"/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/sbin/munged",
                          "/usr/sbin/mungekey", "/usr/bin/sbatch"}) {
    if (!Executable(bin)) {
      return std::string(bin) + " is not installed (./dev.sh installs slurmctld slurmd " +
             "slurm-client munge)";
    }
  }
  if (geteuid() != 0) return "slurmd must run as root, and this test is not root";
  return "";
}

SlurmCluster::SlurmCluster(std::string dir, SlurmClusterOptions options)
    : dir_(std::move(dir)), options_(options) {}

SlurmCluster::~SlurmCluster() { Stop(); }

std::unique_ptr<SlurmCluster> SlurmCluster::Start(const std::string& dir,
                                                  SlurmClusterOptions options,
                                                  std::string* error) {
  std::unique_ptr<SlurmCluster> c(new SlurmCluster(dir, options));
  if (!c->WriteConfig(error) || !c->StartDaemons(error)) return nullptr;
  if (!c->WaitAllIdle(20s)) {
    *error = "Slurm nodes did not become idle within 20 s; sinfo says:\n" +
             c->Run({"sinfo", "-N", "-h", "-o", "%N %T"}).out + c->LogTails();
    return nullptr;
  }
  return c;
}

bool SlurmCluster::WriteConfig(std::string* error) {
  const std::string& d = dir_;
  // munged refuses a socket in a folder that others cannot traverse (mkdtemp makes 0700).
  fs::permissions(d, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                         fs::perms::others_read | fs::perms::others_exec);
  for (const char* sub : {"spool", "log", "fakedev"}) fs::create_directories(d + "/" + sub);
  for (int g = 0; g < options_.gpus_per_node; ++g) {
    // Slurm refuses regular files as GPU devices; a character device like /dev/null will do.
    std::string dev = d + "/fakedev/gpu" + std::to_string(g);
    if (mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) {
      *error = "mknod " + dev + " failed";
      return false;
    }
  }
  const std::string host = HostName();
  cluster_name_ = "lab";
  std::ostringstream conf;
  // The controller's address given with its name: slurmd then never resolves the host name,
  // which a container or a fresh chroot often cannot (no /etc/hosts line for it).
  conf << "ClusterName=" << cluster_name_ << "\nSlurmctldHost=" << host << "(127.0.0.1)"
       << "\nSlurmctldPort=" << FreeLoopbackPort() << "\nSlurmUser=root\nAuthType=auth/munge\n"
       << "AuthInfo=socket=" << d << "/munge.sock,cred_expire=10\n"
       << "CredType=cred/munge\nStateSaveLocation=" << d << "/spool/ctld\n"
       << "SlurmdSpoolDir=" << d << "/spool/d-%n\nSlurmctldPidFile=" << d
       << "/slurmctld.pid\nSlurmdPidFile=" << d << "/slurmd-%n.pid\nSlurmctldLogFile=" << d
       << "/log/slurmctld.log\nSlurmdLogFile=" << d << "/log/slurmd-%n.log\n"
       << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
       << "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\nGresTypes=gpu\n"
       << "ReturnToService=2\nSlurmdTimeout=" << options_.slurmd_timeout_s
       << "\nMpiDefault=none\nJobCompType=jobcomp/filetxt\nJobCompLoc=" << d
       << "/log/jobcomp.txt\nAccountingStorageType=accounting_storage/none\n"
       << "JobAcctGatherType=jobacct_gather/none\nPreemptType=preempt/partition_prio\n"
       << "PreemptMode=REQUEUE\nSlurmctldParameters=preempt_send_user_signal\n"
       << "KillWait=5\nMinJobAge=30\n";
  for (int i = 0; i < options_.nodes; ++i) {
    conf << "NodeName=" << NodeName(i) << " NodeHostname=" << host
         << " NodeAddr=127.0.0.1 Port=" << FreeLoopbackPort() << " CPUs=" << options_.cpus_per_node
         << " RealMemory=10000 Gres=gpu:" << options_.gpus_per_node << "\n";
  }
  const std::string nodes = "n[1-" + std::to_string(options_.nodes) + "]";
  conf << "PartitionName=gpu Nodes=" << nodes
       << " Default=YES MaxTime=INFINITE State=UP PriorityTier=1 PreemptMode=REQUEUE"
          " GraceTime=15\n"
       << "PartitionName=urgent Nodes=" << nodes
       << " MaxTime=INFINITE State=UP PriorityTier=2 PreemptMode=OFF\n";
  conf_path_ = d + "/slurm.conf";
  WriteFile(conf_path_, conf.str());
  WriteFile(d + "/gres.conf", "AutoDetect=off\nNodeName=" + nodes + " Name=gpu File=" + d +
                                  "/fakedev/gpu[0-" +
                                  std::to_string(options_.gpus_per_node - 1) + "]\n");
  return true;
}

bool SlurmCluster::StartDaemons(std::string* error) {
  const std::string& d = dir_;
  ProcessResult key = RunProcess({"/usr/sbin/mungekey", "-c", "-k", d + "/munge.key"});
  if (key.exit_code != 0) {
    *error = "mungekey failed: " + key.err;
    return false;
  }
  munged_ = std::make_unique<Subprocess>(
      std::vector<std::string>{"/usr/sbin/munged", "-F", "--socket=" + d + "/munge.sock",
                               "--key-file=" + d + "/munge.key", "--pid-file=" + d + "/munged.pid",
                               "--log-file=" + d + "/log/munged.log",
                               "--seed-file=" + d + "/munged.seed"},
      d + "/log");
  for (int i = 0; i < 100 && !fs::exists(d + "/munge.sock"); ++i) std::this_thread::sleep_for(20ms);
  if (!fs::exists(d + "/munge.sock")) {
    *error = "munged did not create its socket: " + munged_->Stderr();
    return false;
  }
  slurmctld_ = std::make_unique<Subprocess>(
      std::vector<std::string>{"/usr/sbin/slurmctld", "-D", "-i"}, d + "/log", Env());
  for (int i = 0; i < options_.nodes; ++i) slurmd_.push_back(StartSlurmd(i));
  return true;
}

std::unique_ptr<Subprocess> SlurmCluster::StartSlurmd(int i) {
  return std::make_unique<Subprocess>(
      std::vector<std::string>{"/usr/sbin/slurmd", "-D", "-N", NodeName(i)}, dir_ + "/log",
      Env());
}

bool SlurmCluster::WaitAllIdle(std::chrono::milliseconds timeout) const {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    ProcessResult r = Run({"sinfo", "-N", "-h", "-p", "gpu", "-o", "%T"}, 5s);
    if (r.exit_code == 0 && Count(r.out, "idle") == options_.nodes) return true;
    std::this_thread::sleep_for(100ms);
  }
  return false;
}

std::string SlurmCluster::LogTails() const {
  std::string out;
  for (const auto& e : fs::directory_iterator(dir_ + "/log")) {
    std::string text = ReadFile(e.path().string());
    if (text.size() > 1500) text = text.substr(text.size() - 1500);
    out += "---- " + e.path().string() + "\n" + text + "\n";
  }
  return out;
}

ProcessResult SlurmCluster::Run(std::vector<std::string> argv,
                                std::chrono::milliseconds timeout) const {
  // Subprocess execs without a PATH search; Debian installs the commands in /usr/bin.
  if (!argv.empty() && argv[0].find('/') == std::string::npos) argv[0] = "/usr/bin/" + argv[0];
  return RunProcess(std::move(argv), Env(), timeout);
}

void SlurmCluster::KillNode(int i) {
  if (i < static_cast<int>(slurmd_.size()) && slurmd_[i]) {
    slurmd_[i]->Signal(SIGKILL);
    slurmd_[i]->Wait(5s);
  }
}

void SlurmCluster::RestartNode(int i) {
  if (i < static_cast<int>(slurmd_.size())) slurmd_[i] = StartSlurmd(i);
}

bool SlurmCluster::WaitNodeState(int i, const std::string& state,
                                 std::chrono::milliseconds timeout) const {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    ProcessResult r = Run({"sinfo", "-h", "-n", NodeName(i), "-o", "%T"}, 5s);
    if (r.out.find(state) != std::string::npos) return true;
    std::this_thread::sleep_for(200ms);
  }
  return false;
}

void SlurmCluster::StopProcess(std::unique_ptr<Subprocess>& p, std::chrono::milliseconds grace) {
  if (!p) return;
  p->Signal(SIGTERM);
  if (!p->Wait(grace)) {
    p->Signal(SIGKILL);
    p->Wait(5s);
  }
  p.reset();
}

void SlurmCluster::Stop() {
  if (slurmctld_) {
    // Jobs first, so that no slurmstepd (nor what it runs) outlives the cluster.
    Run({"scancel", "--full", "-u", "root"}, 10s);
    auto deadline = std::chrono::steady_clock::now() + 15s;
    while (std::chrono::steady_clock::now() < deadline) {
      ProcessResult q = Run({"squeue", "-h", "-o", "%i"}, 5s);
      if (q.exit_code != 0 || q.out.empty()) break;
      std::this_thread::sleep_for(100ms);
    }
  }
  for (auto& d : slurmd_) StopProcess(d, 5s);
  slurmd_.clear();
  StopProcess(slurmctld_, 5s);
  StopProcess(munged_, 5s);
}

}  // namespace ablate::testing
