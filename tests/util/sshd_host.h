// A real OpenSSH server (Debian's openssh-server) on a loopback port, for the ssh pool tests
// (issue 38): a host key of its own, one authorized client key, logging to its folder. sshd
// switches to the login user itself, so it needs root; Unavailable() says why a test must skip.
#ifndef ABLATE_TESTS_UTIL_SSHD_HOST_H_
#define ABLATE_TESTS_UTIL_SSHD_HOST_H_

#include <memory>
#include <string>

#include "tests/util/subprocess.h"

namespace ablate::testing {

class SshdHost {
 public:
  // "" when sshd can run here; else why not (not root, no /usr/sbin/sshd).
  static std::string Unavailable();
  // Keys and configuration under `dir` (made); nothing runs until Start.
  explicit SshdHost(std::string dir);
  ~SshdHost();  // Stop()

  // Starts sshd on a free loopback port (after a Stop or Kill: the port it had) and waits until
  // it accepts connections; false with `*error` (sshd's own log) when it did not.
  bool Start(std::string* error);
  // Stops the listener; sessions already open (a master connection) go on.
  void Stop();
  // The host stops answering: the listener and every session it started (not the processes
  // that left them for a session of their own, as a detached worker does).
  void Kill();
  // Uses `key` (and key.pub) as the authorized client key instead of a key of its own; before
  // Start.
  void UseClientKey(const std::string& key);
  // Sessions run chrooted in `root` (sshd's ChrootDirectory: it and every folder above it
  // root-owned and writable by root alone): a node with another system's files; before Start.
  void UseChroot(const std::string& root) { chroot_ = root; }

  int port() const { return port_; }
  // "root@127.0.0.1:PORT", as a pools file lists it.
  std::string host_text() const { return "root@127.0.0.1:" + std::to_string(port_); }
  const std::string& client_key() const { return client_key_; }  // private key file
  // A known_hosts line for this host ("[127.0.0.1]:PORT TYPE KEY").
  std::string known_hosts_line() const;

 private:
  std::string dir_, client_key_, chroot_;
  int port_ = 0;
  std::unique_ptr<Subprocess> sshd_;
};

// Makes an ed25519 key pair at `path` (and path.pub); false if ssh-keygen failed.
bool MakeSshKey(const std::string& path);

}  // namespace ablate::testing

#endif  // ABLATE_TESTS_UTIL_SSHD_HOST_H_
