// Dispatcher: a worker is trusted with the attempts it holds on its own stream and nothing else
// (DESIGN §4, Trust), its Hello is bounded before anything of it is stored, and metric batches
// are acknowledged only as a committed prefix (DESIGN §4, the ack contract).
#include <algorithm>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "common/utf8_text.h"
#include "server/core/ssh_worker_id.h"
#include "server/dispatch/dispatcher.h"

namespace ablate {
namespace {

constexpr size_t kMaxIdBytes = 200;
constexpr size_t kMaxTextBytes = 1000;
constexpr int kMaxDatasets = 256;
constexpr int kMaxGpus = 64;
constexpr int kMaxCpuSlots = 1024;
constexpr int kMaxHeld = 1024;
constexpr int kMaxGpuIndex = 1023;

// Ids (worker ids, dataset names, Slurm pools): what a host name, a Slurm id and a folder name
// need, nothing a terminal or a log could misread.
bool IdChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("._:/@+=-_").find(c) != std::string_view::npos;
}

absl::Status CheckId(const std::string& what, const std::string& id, bool may_be_empty) {
  if (id.empty() && !may_be_empty) return absl::InvalidArgumentError(absl::StrCat(what, " is empty"));
  if (id.size() > kMaxIdBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " is ", id.size(), " bytes, over the limit of ", kMaxIdBytes));
  }
  for (size_t i = 0; i < id.size(); ++i) {
    if (!IdChar(id[i])) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, " has byte 0x", absl::Hex(static_cast<unsigned char>(id[i])), " at offset ", i,
          "; ids are letters, digits and ._:/@+=-_"));
    }
  }
  return absl::OkStatus();
}

// Free text (a host, a GPU model, a trainer version): valid UTF-8 without control characters
// (C0, DEL, C1) or bidirectional controls (U+200E/F, U+202A..E, U+2066..9).
absl::Status CheckText(const std::string& what, const std::string& text) {
  if (text.size() > kMaxTextBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " is ", text.size(), " bytes, over the limit of ", kMaxTextBytes));
  }
  if (!IsValidUtf8(text)) return absl::InvalidArgumentError(absl::StrCat(what, " is not UTF-8"));
  for (size_t i = 0; i < text.size();) {
    const size_t len = Utf8SequenceAt(text, i);
    std::string_view ch = std::string_view(text).substr(i, len);
    const unsigned char c0 = static_cast<unsigned char>(ch[0]);
    bool bad = c0 < 0x20 || c0 == 0x7F;
    if (len == 2 && c0 == 0xC2 && static_cast<unsigned char>(ch[1]) < 0xA0) bad = true;  // C1
    if (len == 3 && c0 == 0xE2) {
      const unsigned char c1 = static_cast<unsigned char>(ch[1]);
      const unsigned char c2 = static_cast<unsigned char>(ch[2]);
      bad = bad || (c1 == 0x80 && (c2 == 0x8E || c2 == 0x8F || (c2 >= 0xAA && c2 <= 0xAE))) ||
            (c1 == 0x81 && c2 >= 0xA6 && c2 <= 0xA9);
    }
    if (bad) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " has a control or bidirectional character at offset ", i));
    }
    i += len;
  }
  return absl::OkStatus();
}

absl::Status CheckCount(const std::string& what, int64_t n, int64_t max) {
  if (n >= 0 && n <= max) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(what, " is ", n, "; allowed 0..", max));
}

}  // namespace

absl::Status Dispatcher::CheckDatasets(const google::protobuf::RepeatedPtrField<std::string>& names) {
  if (names.size() > kMaxDatasets) {
    return absl::InvalidArgumentError(absl::StrCat(names.size(), " datasets, over the limit of ",
                                                   kMaxDatasets));
  }
  for (const std::string& name : names) {
    if (absl::Status s = CheckId("dataset name", name, false); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status Dispatcher::CheckHello(const v1::Hello& h) {
  absl::Status s = CheckId("Hello.worker_id", h.worker_id(), false);
  if (s.ok() && h.worker_id() == kImportedWorkerId) {
    s = absl::InvalidArgumentError(
        "Hello.worker_id 'imported' is reserved: it marks runs imported from record logs");
  }
  if (s.ok()) s = CheckText("Hello.host", h.host());
  if (s.ok()) s = CheckText("Hello.trainer_version", h.trainer_version());
  if (s.ok()) s = CheckCount("Hello.cpu_slots", h.cpu_slots(), kMaxCpuSlots);
  if (s.ok()) s = CheckCount("the number of GPUs", h.gpus_size(), kMaxGpus);
  if (s.ok()) s = CheckCount("the number of held attempts", h.running_size(), kMaxHeld);
  if (s.ok()) s = CheckDatasets(h.datasets());
  std::set<int> indices;
  for (const v1::Gpu& g : h.gpus()) {
    if (!s.ok()) break;
    s = CheckCount("a GPU index", g.index(), kMaxGpuIndex);
    if (s.ok() && !indices.insert(g.index()).second) {
      s = absl::InvalidArgumentError(absl::StrCat("GPU index ", g.index(), " appears twice"));
    }
    if (s.ok()) s = CheckText("a GPU model", g.model());
    if (s.ok() && g.memory_mb() < 0) s = absl::InvalidArgumentError("a GPU's memory_mb is negative");
  }
  if (s.ok() && h.has_slurm()) {
    s = CheckId("Hello.slurm.cluster", h.slurm().cluster(), true);
    if (s.ok()) s = CheckId("Hello.slurm.pool", h.slurm().pool(), true);
    if (s.ok()) s = CheckId("Hello.slurm.step_id", h.slurm().step_id(), true);
  }
  if (s.ok() && h.has_ssh()) {
    s = CheckId("Hello.ssh.pool", h.ssh().pool(), false);
    if (s.ok()) s = CheckId("Hello.ssh.host", h.ssh().host(), false);
    // A pool's host keys are [A-Za-z0-9._-] (pool_config.h): no '/' to make another id of.
    if (s.ok() && (h.ssh().host().find_first_of(":/@+=") != std::string::npos ||
                   h.ssh().pool().find_first_of(":/@+=") != std::string::npos)) {
      s = absl::InvalidArgumentError("Hello.ssh's pool and host are letters, digits and ._-");
    }
    if (s.ok() && h.has_slurm()) s = absl::InvalidArgumentError("Hello has both slurm and ssh");
    if (s.ok() && h.ssh().incarnation() <= 0) {
      s = absl::InvalidArgumentError("Hello.ssh.incarnation is not positive");
    }
    // The id says which node it is (as a Slurm pilot's says its allocation): no other may claim it.
    if (s.ok() && h.worker_id() != SshWorkerId(h.ssh().pool(), h.ssh().host())) {
      s = absl::InvalidArgumentError("Hello.worker_id '" + h.worker_id() + "' is not " +
                                     SshWorkerId(h.ssh().pool(), h.ssh().host()) +
                                     ", the id of the ssh node it names");
    }
  }
  return s;
}

bool Dispatcher::HoldsAttempt(const std::string& worker_id, int64_t attempt_id,
                              int64_t fencing_token, bool gang_result) {
  {
    absl::MutexLock lock(&mu_);
    auto w = workers_.find(worker_id);
    if (w != workers_.end()) {
      auto a = w->second.attempts.find(attempt_id);
      if (a != w->second.attempts.end()) return a->second.fencing_token == fencing_token;
    }
    for (const auto& [id, other] : workers_) {
      auto a = other.attempts.find(attempt_id);
      if (a == other.attempts.end()) continue;
      // Another worker's share: only a gang's node whose share is gone may still report.
      return gang_result && a->second.node.in_gang() && !a->second.restored &&
             a->second.fencing_token == fencing_token;
    }
  }
  absl::StatusOr<Attempt> a = store_->GetAttempt(attempt_id);
  return a.ok() && a->worker_id == worker_id && a->fencing_token == fencing_token;
}

std::vector<v1::CoordinatorMessage> Dispatcher::RefuseForeign(const std::string& worker_id,
                                                              int64_t attempt_id,
                                                              const std::string& what,
                                                              v1::CoordinatorMessage ack) {
  const std::string why = absl::StrCat(what, " for attempt ", attempt_id, " from worker ",
                                       worker_id, " refused: the worker does not hold that "
                                       "attempt with that fencing token; nothing changed");
  std::cerr << "ablate-coordinator: " << why << std::endl;
  v1::CoordinatorMessage cancel;
  cancel.mutable_cancel()->set_attempt_id(attempt_id);
  cancel.mutable_cancel()->set_grace_ms(options_.cancel_grace_ms);
  cancel.mutable_cancel()->set_reason(why);
  return {std::move(ack), std::move(cancel)};
}

std::optional<int64_t> Dispatcher::CommittedPrefix(int64_t attempt_id) {
  {
    absl::MutexLock lock(&ack_mu_);
    if (auto it = committed_.find(attempt_id); it != committed_.end()) return it->second.prefix;
  }
  absl::StatusOr<std::vector<int64_t>> seqs = store_->CommittedBatchSeqs(attempt_id);
  if (!seqs.ok()) return std::nullopt;
  absl::MutexLock lock(&ack_mu_);
  Committed& c = committed_[attempt_id];  // merged with what another thread may have added
  for (int64_t seq : *seqs) {
    if (seq > c.prefix) c.beyond.insert(seq);
  }
  while (!c.beyond.empty() && *c.beyond.begin() <= c.prefix + 1) {
    c.prefix = std::max(c.prefix, *c.beyond.begin());
    c.beyond.erase(c.beyond.begin());
  }
  return c.prefix;
}

std::optional<int64_t> Dispatcher::CommitBatch(int64_t attempt_id, int64_t seq) {
  if (!CommittedPrefix(attempt_id)) return std::nullopt;  // loads the attempt's committed seqs
  absl::MutexLock lock(&ack_mu_);
  Committed& c = committed_[attempt_id];
  if (seq > c.prefix) c.beyond.insert(seq);
  while (!c.beyond.empty() && *c.beyond.begin() <= c.prefix + 1) {
    c.prefix = std::max(c.prefix, *c.beyond.begin());
    c.beyond.erase(c.beyond.begin());
  }
  return c.prefix;
}

void Dispatcher::ForgetBatches(int64_t attempt_id) {
  absl::MutexLock lock(&ack_mu_);
  committed_.erase(attempt_id);
}

bool Dispatcher::StillOpen(int64_t attempt_id) const {
  absl::StatusOr<Attempt> a = store_->GetAttempt(attempt_id);
  if (!a.ok()) return false;
  if (a->state != AttemptState::kAssigned && a->state != AttemptState::kRunning) return false;
  absl::StatusOr<Run> r = store_->GetRun(a->run_id);
  return r.ok() && r->current_attempt_id == attempt_id;
}

std::vector<v1::CoordinatorMessage> Dispatcher::OnUnparsable(const std::string& worker_id,
                                                             int64_t attempt_id,
                                                             int64_t fencing_token,
                                                             const std::string& why) {
  v1::CoordinatorMessage ack;
  ack.mutable_ack()->set_attempt_id(attempt_id);
  ack.mutable_ack()->set_finished(true);
  ack.mutable_ack()->set_seq(0);
  if (attempt_id == 0 || !HoldsAttempt(worker_id, attempt_id, fencing_token)) {
    std::cerr << "ablate-coordinator: a message from worker " << worker_id
              << " could not be parsed (" << why << ") and names no attempt it holds; ignored"
              << std::endl;
    if (attempt_id == 0) return {};
    return RefuseForeign(worker_id, attempt_id, "an unparsable message", std::move(ack));
  }
  ForgetBatches(attempt_id);
  return RefuseInput(worker_id, attempt_id, fencing_token, "a message", absl::InvalidArgumentError(why),
                     std::move(ack));
}

}  // namespace ablate
