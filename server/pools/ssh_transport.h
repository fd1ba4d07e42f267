// One node of an ssh pool as OpenSSH reaches it (issue 38): the ssh and scp command lines for its
// host (one master connection per host, ControlMaster), host keys checked strictly against
// known_hosts unless the pool accepts new ones, a secret written to a 0600 file through the SSH
// channel's stdin (never a command line), the bundle copied only when the node lacks its
// checksum, and every failure OpenSSH reports turned into an error naming the host and what to
// do. Nothing here is written by hand that OpenSSH does. Thread-compatible: one per host.
#ifndef ABLATE_SERVER_POOLS_SSH_TRANSPORT_H_
#define ABLATE_SERVER_POOLS_SSH_TRANSPORT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/pools/command_runner.h"
#include "server/pools/pool_config.h"

namespace ablate {

struct SshOptions {
  std::string identity_file;  // "" = ssh's defaults
  std::string known_hosts;    // "" = ssh's default file
  bool accept_new_host_keys = false;
  std::vector<std::string> ssh_args;  // the pool's, passed to ssh and scp alike
  std::string control_dir;            // master sockets live here (short path: sockets <108 B)
  int connect_timeout_s = 10;
};

// What PushBundle did.
struct PushedBundle {
  std::string dir;    // BUNDLE_DIR/SHA256 on the node: bin/, lib/, ...
  std::string sha256;
  bool copied = false;  // false: the node had it already
};

class SshTransport {
 public:
  // `runner` must outlive the transport.
  SshTransport(SshHost host, SshOptions options, ProcessRunner* runner);

  // `command` (a shell line) run by the remote user's shell, `input` on its stdin.
  CommandOutput Run(const std::string& command, const std::string& input = "");
  // The words of `argv` quoted for the remote shell and run as Run does.
  CommandOutput RunArgv(const std::vector<std::string>& argv, const std::string& input = "");
  // OK for exit 0. Otherwise: ssh's own failures (exit 255) as UNAVAILABLE (no answer) or
  // FAILED_PRECONDITION (a host key, a refused key: retrying does not help), the remote
  // command's as FAILED_PRECONDITION naming `what`; each message starts with the host.
  absl::Status Check(const CommandOutput& out, const std::string& what) const;

  // Copies the local bundle (.tar.gz) to BUNDLE_DIR/SHA256/ on the node unless a whole copy is
  // there already (a marker written last), unpacked with its top folder stripped.
  absl::StatusOr<PushedBundle> PushBundle(const std::string& local_tgz,
                                          const std::string& bundle_dir);
  // `text` into the node's `path` (mode 0600, its folder made), through stdin.
  absl::Status WriteSecret(const std::string& path, const std::string& text);
  // Ends the master connection, if one is up.
  void Close();

  const SshHost& host() const { return host_; }
  // The options every ssh and scp call gets (-o ..., -i, known hosts, the master socket).
  std::vector<std::string> CommonArgs() const;

 private:
  std::string Destination() const;  // [user@]host
  const SshHost host_;
  const SshOptions options_;
  ProcessRunner* const runner_;
};

// The SHA-256 of a file as 64 hex digits.
absl::StatusOr<std::string> FileSha256(const std::string& path);

}  // namespace ablate

#endif  // ABLATE_SERVER_POOLS_SSH_TRANSPORT_H_
