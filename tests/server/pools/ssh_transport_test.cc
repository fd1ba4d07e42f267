// ssh pools' transport (issue 38) against a real sshd on a loopback port (tests/util/
// sshd_host.h): commands over one master connection, host keys checked strictly unless the pool
// accepts new ones, a wrong key and a stopped sshd told apart, a secret written 0600 through
// stdin, and the bundle copied once per checksum.
#include "server/pools/ssh_transport.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "tests/util/sshd_host.h"
#include "tests/util/subprocess.h"

namespace ablate {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::ReadFile;
using testing::RunProcess;
using testing::WriteFile;

class SshTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = testing::SshdHost::Unavailable(); !why.empty()) GTEST_SKIP() << why;
    sshd_ = std::make_unique<testing::SshdHost>(root_.path() + "/sshd");
    std::string error;
    ASSERT_TRUE(sshd_->Start(&error)) << error;
    WriteFile(Known(), sshd_->known_hosts_line());
    fs::create_directories(root_.path() + "/cm");
  }

  std::string Known() const { return root_.path() + "/known_hosts"; }

  SshTransport Transport(SshOptions o = {}) {
    if (o.identity_file.empty()) o.identity_file = sshd_->client_key();
    if (o.known_hosts.empty()) o.known_hosts = Known();
    o.connect_timeout_s = 5;
    absl::StatusOr<SshHost> host = ParseSshHost(sshd_->host_text());
    EXPECT_TRUE(host.ok()) << host.status();
    return SshTransport(*host, o, &runner_);
  }

  testing::TempDir root_;
  std::unique_ptr<testing::SshdHost> sshd_;
  ProcessRunner runner_{std::chrono::seconds(30)};
};

TEST_F(SshTransportTest, RunsCommandsOverOneMasterConnection) {
  SshOptions o;
  o.control_dir = root_.path() + "/cm";
  SshTransport ssh = Transport(o);
  CommandOutput out = ssh.RunArgv({"echo", "it's here"});
  ASSERT_TRUE(ssh.Check(out, "echo").ok()) << ssh.Check(out, "echo");
  EXPECT_EQ(out.out, "it's here\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(o.control_dir), fs::directory_iterator()), 1)
      << "one master socket for the host";
  out = ssh.Run("exit 3");
  absl::Status s = ssh.Check(out, "the probe");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("host " + sshd_->host_text() + ": the probe failed (exit 3)"));
  ssh.Close();
  EXPECT_TRUE(fs::is_empty(o.control_dir)) << "the master ended";
}

TEST_F(SshTransportTest, AnUnknownHostKeyIsRefusedUnlessTheyAreAcceptedNew) {
  WriteFile(Known(), "");
  SshTransport strict = Transport();
  absl::Status s = strict.Check(strict.Run("true"), "probe");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("its host key is not in " + Known()));
  EXPECT_THAT(s.message(), HasSubstr("ssh-keyscan -p " + std::to_string(sshd_->port())));
  EXPECT_EQ(ReadFile(Known()), "") << "strict checking adds nothing";
  SshOptions o;
  o.accept_new_host_keys = true;
  SshTransport accepting = Transport(o);
  EXPECT_TRUE(accepting.Check(accepting.Run("true"), "probe").ok());
  EXPECT_THAT(ReadFile(Known()), HasSubstr("[127.0.0.1]:" + std::to_string(sshd_->port())));
  // A changed key is refused even so.
  WriteFile(root_.path() + "/other.pub", "");
  ASSERT_TRUE(testing::MakeSshKey(root_.path() + "/other"));
  std::string other = ReadFile(root_.path() + "/other.pub");
  WriteFile(Known(), "[127.0.0.1]:" + std::to_string(sshd_->port()) + " " +
                         other.substr(0, other.rfind(' ')) + "\n");
  s = accepting.Check(accepting.Run("true"), "probe");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("is not the one in"));
}

TEST_F(SshTransportTest, AWrongKeyAndAStoppedSshdAreToldApart) {
  ASSERT_TRUE(testing::MakeSshKey(root_.path() + "/wrong"));
  SshOptions o;
  o.identity_file = root_.path() + "/wrong";
  SshTransport wrong = Transport(o);
  absl::Status s = wrong.Check(wrong.Run("true"), "probe");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("refused the key " + o.identity_file));
  sshd_->Stop();
  SshTransport right = Transport();
  s = right.Check(right.Run("true"), "probe");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_THAT(s.message(), HasSubstr("does not answer over SSH"));
}

TEST_F(SshTransportTest, ASecretGoesThroughStdinIntoA0600File) {
  SshTransport ssh = Transport();
  const std::string path = root_.path() + "/node/etc/worker.token";
  ASSERT_TRUE(ssh.WriteSecret(path, "s3cret-token\n").ok());
  EXPECT_EQ(ReadFile(path), "s3cret-token\n");
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // Nothing of it is on any command line sshd logged (LogLevel VERBOSE logs commands' starts).
  EXPECT_EQ(ReadFile(root_.path() + "/sshd/" + "proc0.err").find("s3cret"), std::string::npos);
}

TEST_F(SshTransportTest, TheBundleIsCopiedOncePerChecksum) {
  fs::create_directories(root_.path() + "/ablate-9.9/bin");
  WriteFile(root_.path() + "/ablate-9.9/bin/hello", "#!/bin/sh\necho hello from the bundle\n");
  fs::permissions(root_.path() + "/ablate-9.9/bin/hello", fs::perms::owner_all);
  const std::string tgz = root_.path() + "/bundle.tar.gz";
  ASSERT_EQ(RunProcess({"/bin/tar", "-czf", tgz, "-C", root_.path(), "ablate-9.9"}).exit_code, 0);
  SshTransport ssh = Transport();
  const std::string remote = root_.path() + "/node/opt/ablate";
  absl::StatusOr<PushedBundle> first = ssh.PushBundle(tgz, remote);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->copied);
  EXPECT_EQ(first->dir, remote + "/" + first->sha256);
  EXPECT_EQ(first->sha256, RunProcess({"/bin/sh", "-c", "sha256sum " + tgz + " | cut -c1-64"})
                               .out.substr(0, 64));
  EXPECT_EQ(ssh.RunArgv({first->dir + "/bin/hello"}).out, "hello from the bundle\n");
  absl::StatusOr<PushedBundle> again = ssh.PushBundle(tgz, remote);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->copied) << "the node had that version";
  // A copy cut short (no marker) is copied again.
  fs::remove(first->dir + "/.complete");
  absl::StatusOr<PushedBundle> redo = ssh.PushBundle(tgz, remote);
  ASSERT_TRUE(redo.ok()) << redo.status();
  EXPECT_TRUE(redo->copied);
  EXPECT_EQ(std::distance(fs::directory_iterator(remote), fs::directory_iterator()), 1)
      << "no part files left";
}

}  // namespace
}  // namespace ablate
