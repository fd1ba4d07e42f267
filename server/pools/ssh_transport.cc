// OpenSSH's ssh and scp, as the pool's options say, and what their failures mean.
#include "server/pools/ssh_transport.h"

#include <openssl/evp.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <fstream>
#include <memory>
#include <thread>

#include "common/script_command.h"

namespace ablate {
namespace {

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  if (s.size() > 2000) s = s.substr(s.size() - 2000);  // the end says what failed
  return s;
}

bool Has(const std::string& text, const char* what) { return text.find(what) != std::string::npos; }

}  // namespace

SshTransport::SshTransport(SshHost host, SshOptions options, ProcessRunner* runner)
    : host_(std::move(host)), options_(std::move(options)), runner_(runner) {}

std::string SshTransport::Destination() const {
  return host_.user.empty() ? host_.host : host_.user + "@" + host_.host;
}

std::vector<std::string> SshTransport::CommonArgs() const {
  std::vector<std::string> a = {
      "-o", "BatchMode=yes",  // never a password prompt: a daemon has nobody to answer it
      "-o", std::string("StrictHostKeyChecking=") + (options_.accept_new_host_keys ? "accept-new" : "yes"),
      // A host accepted new is written as itself, so that the file shows which hosts it holds.
      "-o", "HashKnownHosts=no",
      "-o", "ConnectTimeout=" + std::to_string(options_.connect_timeout_s),
      "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3"};
  if (!options_.known_hosts.empty()) a.insert(a.end(), {"-o", "UserKnownHostsFile=" + options_.known_hosts});
  if (!options_.identity_file.empty()) {
    a.insert(a.end(), {"-o", "IdentitiesOnly=yes", "-i", options_.identity_file});
  }
  if (host_.port != 0) a.insert(a.end(), {"-o", "Port=" + std::to_string(host_.port)});
  if (!options_.control_dir.empty()) {
    // One connection per host: the first call starts the master, the others ride on it.
    a.insert(a.end(), {"-o", "ControlMaster=auto", "-o", "ControlPath=" + options_.control_dir + "/%C",
                       "-o", "ControlPersist=60"});
  }
  a.insert(a.end(), options_.ssh_args.begin(), options_.ssh_args.end());
  return a;
}

CommandOutput SshTransport::Run(const std::string& command, const std::string& input) {
  std::vector<std::string> argv = {"ssh"};
  for (std::string& a : CommonArgs()) argv.push_back(std::move(a));
  argv.insert(argv.end(), {"--", Destination(), command});
  return runner_->Run(argv, input);
}

CommandOutput SshTransport::RunArgv(const std::vector<std::string>& argv, const std::string& input) {
  std::string line;
  for (const std::string& a : argv) line += (line.empty() ? "" : " ") + ShellQuote(a);
  return Run(line, input);
}

absl::Status SshTransport::Check(const CommandOutput& out, const std::string& what) const {
  if (out.exit_code == 0) return absl::OkStatus();
  const std::string said = Trimmed(out.err.empty() ? out.out : out.err);
  const std::string host = "host " + host_.text + ": ";
  const std::string known = options_.known_hosts.empty() ? "~/.ssh/known_hosts" : options_.known_hosts;
  if (out.exit_code == 127 && out.err.empty()) {
    return absl::FailedPreconditionError(host + "cannot run ssh: install OpenSSH's client "
                                         "(apt-get install openssh-client)");
  }
  if (Has(said, "REMOTE HOST IDENTIFICATION HAS CHANGED")) {
    return absl::FailedPreconditionError(
        host + "its host key is not the one in " + known +
        ": the host was reinstalled, or this is not the host; check its fingerprint, then "
        "remove the old key (ssh-keygen -R) and add the new one");
  }
  if (Has(said, "Host key verification failed") || Has(said, "No ED25519 host key is known") ||
      Has(said, "host key is known")) {
    return absl::FailedPreconditionError(
        host + "its host key is not in " + known +
        " (host_keys: strict): check the host's fingerprint and add its key (ssh-keyscan" +
        (host_.port ? " -p " + std::to_string(host_.port) : std::string()) + " " + host_.host +
        " >> " + known + "), or set host_keys: accept-new to trust it on first contact");
  }
  if (Has(said, "Permission denied")) {
    return absl::FailedPreconditionError(
        host + "refused the key " +
        (options_.identity_file.empty() ? std::string("(ssh's defaults)") : options_.identity_file) +
        ": add its public key to ~/.ssh/authorized_keys of " +
        (host_.user.empty() ? std::string("the login user") : host_.user) +
        " on the host, or name the right key in identity_file (" + said + ")");
  }
  if (Has(said, "No space left on device")) {
    return absl::FailedPreconditionError(host + what + ": the node's disk is full: free space " +
                                         "there and the host is tried again (" + said + ")");
  }
  if (out.exit_code == 255) {
    return absl::UnavailableError(host + "does not answer over SSH (" + said + ")");
  }
  return absl::FailedPreconditionError(host + what + " failed (exit " +
                                       std::to_string(out.exit_code) + "): " + said);
}

absl::StatusOr<PushedBundle> SshTransport::PushBundle(const std::string& local_tgz,
                                                      const std::string& bundle_dir) {
  absl::StatusOr<std::string> sha = FileSha256(local_tgz);
  if (!sha.ok()) return sha.status();
  PushedBundle b{bundle_dir + "/" + *sha, *sha, false};
  const std::string marker = b.dir + "/.complete";
  CommandOutput has = RunArgv({"test", "-f", marker});
  if (has.exit_code == 0) return b;
  if (has.exit_code == 255) return Check(has, "checking the bundle");
  if (absl::Status s = Check(RunArgv({"mkdir", "-p", bundle_dir}), "making " + bundle_dir); !s.ok()) {
    return s;
  }
  // The archive and what it unpacks to (about three times its size) must fit at once: say so
  // before copying, as scp's own words for a full disk are only "Failure".
  std::error_code ec;
  const auto tgz_bytes = std::filesystem::file_size(local_tgz, ec);
  CommandOutput df = RunArgv({"df", "-Pk", bundle_dir});
  if (!ec && df.exit_code == 0) {
    std::istringstream lines(df.out);
    std::string line, last;
    while (std::getline(lines, line)) {
      if (!line.empty()) last = line;
    }
    std::istringstream fields(last);
    std::string fs_name, total, used, avail;
    fields >> fs_name >> total >> used >> avail;
    const uint64_t need_kb = 4 * (tgz_bytes / 1024 + 1);
    if (!avail.empty() && avail.find_first_not_of("0123456789") == std::string::npos &&
        std::stoull(avail) < need_kb) {
      return absl::FailedPreconditionError(
          "host " + host_.text + ": copying the bundle to " + bundle_dir +
          ": the node's disk is full: " + std::to_string(std::stoull(avail) / 1024) +
          " MiB free there, the bundle needs about " + std::to_string(need_kb / 1024) +
          " MiB; free space there (or choose another worker.bundle_dir) and the host is tried "
          "again");
    }
  }
  const std::string part = b.dir + ".tar.gz.part";
  std::vector<std::string> argv = {"scp", "-q"};
  for (std::string& a : CommonArgs()) argv.push_back(std::move(a));
  const std::string where = host_.host.find(':') != std::string::npos ? "[" + host_.host + "]" : host_.host;
  argv.insert(argv.end(), {"--", local_tgz, (host_.user.empty() ? "" : host_.user + "@") + where + ":" + part});
  if (absl::Status s = Check(runner_->Run(argv), "copying the bundle to " + part); !s.ok()) {
    RunArgv({"rm", "-f", part});
    return s;
  }
  // Unpacked beside its final name and renamed into place, the marker last: a copy cut short
  // is never taken for a whole one.
  const std::string q = ShellQuote(b.dir), qp = ShellQuote(part);
  CommandOutput unpack = Run("rm -rf " + q + ".tmp && mkdir " + q + ".tmp && tar -xzf " + qp +
                             " -C " + q + ".tmp --strip-components=1 && touch " + q +
                             ".tmp/.complete && rm -rf " + q + " && mv " + q + ".tmp " + q +
                             "; status=$?; rm -f " + qp + "; exit $status");
  if (absl::Status s = Check(unpack, "unpacking the bundle in " + bundle_dir); !s.ok()) return s;
  b.copied = true;
  return b;
}

absl::Status SshTransport::WriteSecret(const std::string& path, const std::string& text) {
  const std::string q = ShellQuote(path);
  CommandOutput out = Run("umask 077 && mkdir -p \"$(dirname " + q + ")\" && cat > " + q +
                              ".tmp && mv " + q + ".tmp " + q,
                          text);
  return Check(out, "writing " + path);
}

void SshTransport::Close() {
  if (options_.control_dir.empty()) return;
  std::vector<std::string> argv = {"ssh"};
  for (std::string& a : CommonArgs()) argv.push_back(std::move(a));
  std::vector<std::string> where = argv;
  argv.insert(argv.end(), {"-O", "exit", "--", Destination()});
  if (runner_->Run(argv).exit_code != 0) return;  // no master was running
  // The master answers the exit request before it removes its socket; wait for that (briefly),
  // so that a closed transport leaves nothing behind for the next one to trip on.
  where.insert(where.end(), {"-G", "--", Destination()});
  std::istringstream config(runner_->Run(where).out);
  std::string path;
  for (std::string line; std::getline(config, line);) {
    if (line.rfind("controlpath ", 0) == 0) path = line.substr(12);
  }
  if (path.empty()) return;
  for (int i = 0; i < 250 && std::filesystem::exists(path); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

absl::StatusOr<std::string> FileSha256(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError("bundle " + path + ": cannot be read");
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    EVP_DigestUpdate(ctx.get(), buf, static_cast<size_t>(in.gcount()));
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx.get(), digest, &n);
  std::string hex;
  char two[3];
  for (unsigned int i = 0; i < n; ++i) {
    std::snprintf(two, sizeof two, "%02x", digest[i]);
    hex += two;
  }
  return hex;
}

}  // namespace ablate
