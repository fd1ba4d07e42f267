// sshd -D on 127.0.0.1 with a configuration of the test's own.
#include "tests/util/sshd_host.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

namespace ablate::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
constexpr const char* kSshd = "/usr/sbin/sshd";

bool Accepts(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return ok;
}

}  // namespace

bool MakeSshKey(const std::string& path) {
  fs::remove(path);
  fs::remove(path + ".pub");
  return RunProcess({"/usr/bin/ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ablate-test",
                     "-f", path})
             .exit_code == 0;
}

std::string SshdHost::Unavailable() {
  if (geteuid() != 0) return "sshd needs root to switch to the login user";
  if (access(kSshd, X_OK) != 0) return "no /usr/sbin/sshd (apt-get install openssh-server)";
  return "";
}

SshdHost::SshdHost(std::string dir) : dir_(std::move(dir)), client_key_(dir_ + "/client_key") {
  fs::create_directories(dir_);
}

SshdHost::~SshdHost() { Stop(); }

std::string SshdHost::known_hosts_line() const {
  std::string key = ReadFile(dir_ + "/host_key.pub");
  key = key.substr(0, key.rfind(' '));  // type and key, without the comment
  return "[127.0.0.1]:" + std::to_string(port_) + " " + key + "\n";
}

bool SshdHost::Start(std::string* error) {
  if (!fs::exists(dir_ + "/host_key") && !MakeSshKey(dir_ + "/host_key")) {
    *error = "ssh-keygen failed for the host key";
    return false;
  }
  if (!fs::exists(client_key_) && !MakeSshKey(client_key_)) {
    *error = "ssh-keygen failed for the client key";
    return false;
  }
  WriteFile(dir_ + "/authorized_keys", ReadFile(client_key_ + ".pub"));
  fs::create_directories("/run/sshd");  // its privilege separation folder
  const int again = port_;
  for (int tries = 0; tries < 5; ++tries) {
    port_ = again != 0 ? again : FreeLoopbackPort();
    WriteFile(dir_ + "/sshd_config",
              "Port " + std::to_string(port_) + "\nListenAddress 127.0.0.1\nHostKey " + dir_ +
                  "/host_key\nPidFile " + dir_ + "/sshd.pid\nAuthorizedKeysFile " + dir_ +
                  "/authorized_keys\nPermitRootLogin prohibit-password\n"
                  "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
                  "StrictModes no\nSubsystem sftp internal-sftp\nLogLevel VERBOSE\n" +
                  (chroot_.empty() ? "" : "ChrootDirectory " + chroot_ + "\n"));
    sshd_ = std::make_unique<Subprocess>(
        std::vector<std::string>{kSshd, "-D", "-e", "-f", dir_ + "/sshd_config"}, dir_);
    for (int i = 0; i < 100; ++i) {
      if (Accepts(port_)) return true;
      if (sshd_->Wait(50ms)) break;  // exited: the port was taken, or a bad configuration
    }
    *error = sshd_->Stderr();
    sshd_.reset();
  }
  return false;
}

void SshdHost::UseClientKey(const std::string& key) { client_key_ = key; }

void SshdHost::Kill() {
  if (!sshd_) return;
  // Its descendants, found by their parents in /proc; a process that moved to a session of its
  // own (setsid) was re-parented and is not among them.
  std::vector<pid_t> tree = {sshd_->pid()};
  for (size_t at = 0; at < tree.size(); ++at) {
    for (const auto& e : fs::directory_iterator("/proc")) {
      const std::string name = e.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::string status = ReadFile(e.path().string() + "/status");
      size_t p = status.find("\nPPid:");
      if (p == std::string::npos) continue;
      if (std::stol(status.substr(p + 7)) == tree[at]) tree.push_back(std::stoi(name));
    }
  }
  for (size_t i = tree.size(); i-- > 1;) ::kill(tree[i], SIGKILL);
  sshd_->Signal(SIGKILL);
  sshd_->Wait(5s);
  sshd_.reset();
}

void SshdHost::Stop() {
  if (!sshd_) return;
  sshd_->Signal(SIGTERM);
  sshd_->Wait(5s);
  sshd_.reset();
}

}  // namespace ablate::testing
