// `ablate decompose`: build the spec, check every variant locally, print or submit.
#include "cli/decompose_command.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "cli/record_logs.h"
#include "cli/table.h"
#include "common/code_snapshot.h"
#include "common/decompose/decompose_scripts.h"
#include "common/plan_power.h"
#include "common/spec/yaml_values.h"
#include "common/stats/record_rule.h"

extern char** environ;

namespace ablate {
namespace {

namespace fs = std::filesystem;
using J = nlohmann::json;

std::string ReadText(const std::string& path, bool* ok) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  *ok = static_cast<bool>(in) || in.eof();
  return ss.str();
}

// A sweep name from the two file names: characters outside [A-Za-z0-9._-] become '-'.
std::string DefaultName(const DecomposeOptions& o) {
  std::string name = "decompose-" + fs::path(o.from).stem().string() + "-" +
                     fs::path(o.to).stem().string();
  for (char& ch : name) {
    if (!IsValidName(std::string(1, ch))) ch = '-';
  }
  return name.substr(0, 100);
}

// The base spec (or name + seeds: 3) with decompose: {from, to, groups}.
absl::StatusOr<std::string> BuildSpec(const DecomposeOptions& o) {
  YAML::Node root;
  if (!o.spec.empty()) {
    bool ok = false;
    const std::string text = ReadText(o.spec, &ok);
    if (!ok) return absl::NotFoundError("cannot read spec file " + o.spec);
    try {
      root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      return absl::InvalidArgumentError(o.spec + ": " + e.what());
    }
    if (!root.IsMap()) return absl::InvalidArgumentError(o.spec + ": expected a map of keys");
    if (root["decompose"]) {
      return absl::InvalidArgumentError(o.spec + " already has decompose:; submit it with "
                                        "ablate submit, or remove the key");
    }
  } else {
    root["name"] = DefaultName(o);
    root["seeds"] = 3;
  }
  YAML::Node d;
  d["from"] = o.from;
  d["to"] = o.to;
  for (const std::string& g : o.groups) {
    absl::StatusOr<ChangeGroup> group = ParseChangeGroup(g);
    if (!group.ok()) return group.status();
    d["groups"][group->name] = g.substr(g.find('=') + 1);
  }
  root["decompose"] = d;
  YAML::Emitter out;
  out << root;
  return std::string(out.c_str()) + "\n";
}

// The script a stored sweep's variant ran, by its snapshot: "sweep:ID" (a sweep of one variant)
// or "sweep:ID/VARIANT", e.g. a record imported with `ablate import`, or a script sweep's variant.
absl::StatusOr<ScriptUpload> StoredScript(Client& c, const std::string& ref) {
  const std::string rest = ref.substr(std::string_view("sweep:").size());
  const size_t slash = rest.find('/');
  const std::string id_text = rest.substr(0, slash);
  int64_t id = 0;
  if (!id_text.empty() && id_text.size() <= 18 &&
      std::all_of(id_text.begin(), id_text.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
    id = std::stoll(id_text);
  }
  if (id <= 0) {
    return absl::InvalidArgumentError("'" + ref + "' is not sweep:ID or sweep:ID/VARIANT");
  }
  v1::GetSweepRequest sreq;
  sreq.set_id(id);
  v1::Sweep sweep;
  grpc::Status st = c.stub().GetSweep(c.Context().get(), sreq, &sweep);
  if (!st.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(st.error_code()),
                        "sweep " + std::to_string(id) + ": " + st.error_message());
  }
  std::string variant = slash == std::string::npos ? "" : rest.substr(slash + 1);
  std::string names;
  for (const v1::Variant& v : sweep.variants()) names += (names.empty() ? "" : ", ") + v.name();
  if (variant.empty()) {
    if (sweep.variants_size() != 1) {
      return absl::InvalidArgumentError("sweep " + std::to_string(id) + " has " +
                                        std::to_string(sweep.variants_size()) +
                                        " variants: name one, sweep:ID/VARIANT (" + names + ")");
    }
    variant = sweep.variants(0).name();
  }
  const v1::Variant* chosen = nullptr;
  for (const v1::Variant& v : sweep.variants()) {
    if (v.name() == variant) chosen = &v;
  }
  if (chosen == nullptr) {
    return absl::NotFoundError("sweep " + std::to_string(id) + " has no variant '" + variant +
                               "' (it has " + names + ")");
  }
  const J config = J::parse(chosen->config_json(), nullptr, false);
  const J* hash = nullptr;
  if (config.is_object() && config.contains("script") && config["script"].is_object() &&
      config["script"].contains("snapshot") && config["script"]["snapshot"].is_string()) {
    hash = &config["script"]["snapshot"];
  }
  if (hash == nullptr) {
    return absl::InvalidArgumentError(
        "variant '" + variant + "' of sweep " + std::to_string(id) +
        " names no one script (a built-in trainer's sweep, or imported logs that did not all "
        "begin with the same script)");
  }
  v1::GetCodeSnapshotRequest hreq;
  hreq.set_hash(hash->get<std::string>());
  v1::CodeSnapshot snapshot;
  st = c.stub().GetCodeSnapshot(c.Context().get(), hreq, &snapshot);
  if (!st.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(st.error_code()),
                        "the script of " + ref + ": " + st.error_message());
  }
  ScriptUpload out;
  int64_t bytes = 0;
  for (const v1::SnapshotFile& f : snapshot.files()) {
    bytes += static_cast<int64_t>(f.content().size());
    out.files.push_back({f.path(), f.content(), f.executable()});
  }
  // What came back is what the variant ran: the same hash, no more than a snapshot may hold.
  if (bytes > kMaxSnapshotBytes || SnapshotHash(out.files) != hreq.hash()) {
    return absl::DataLossError("the coordinator's snapshot " + hreq.hash().substr(0, 12) +
                               " for " + ref + " does not match its hash");
  }
  return out;
}

// FROM or TO: a script (file or folder), a record log (.txt or .log, modded-nanogpt's records/
// format, as `ablate import` reads it), whose script is what that record ran, or a stored
// sweep's variant (sweep:ID[/VARIANT]), whose script snapshot is.
absl::StatusOr<ScriptUpload> ReadUpload(Client& c, const std::string& path) {
  if (path.starts_with("sweep:")) return StoredScript(c, path);
  if (path.ends_with(".txt") || path.ends_with(".log")) {
    absl::StatusOr<LoadedLog> log = LoadRecordLog(path, kRecordTargetValLoss);
    if (!log.ok()) return log.status();
    if (log->log.script.empty()) {
      return absl::InvalidArgumentError(path + ": the log has no script before its output");
    }
    return ScriptUpload{"", ScriptSnapshot(log->log)};
  }
  absl::StatusOr<Snapshot> files = ReadSnapshot(path);
  if (!files.ok()) return files.status();
  return ScriptUpload{"", *std::move(files)};
}

void AddToRequest(const std::string& key, const ScriptUpload& u, v1::SubmitSweepRequest* req) {
  v1::ScriptUpload* p = req->add_scripts();
  p->set_script(key);
  p->set_error(u.error);
  for (const SnapshotFile& f : u.files) {
    v1::SnapshotFile* file = p->add_files();
    file->set_path(f.path);
    file->set_content(f.content);
    file->set_executable(f.executable);
  }
}

ScriptUploads UploadsOf(const v1::SubmitSweepRequest& req) {
  ScriptUploads out;
  for (const v1::ScriptUpload& u : req.scripts()) {
    ScriptUpload& s = out[u.script()];
    s.error = u.error();
    for (const v1::SnapshotFile& f : u.files()) {
      s.files.push_back({f.path(), f.content(), f.executable()});
    }
  }
  return out;
}

// What the sweep expands to, as the coordinator's dry run says (the one spec parser).
struct SweepCounts {
  std::string name;
  int seeds = 0;
  int variants = 0, runs = 0;
};

// Asks the coordinator to check and expand `req` without storing anything (as `ablate submit
// --dry-run` does). nullopt, with the reason printed and `*rc` set, when it rejects the spec
// (kExitRejected) or cannot be asked.
std::optional<SweepCounts> ExpandOnCoordinator(Client& c, v1::SubmitSweepRequest req, int* rc) {
  req.set_dry_run(true);
  v1::SubmitSweepResponse resp;
  grpc::Status s = c.stub().SubmitSweep(c.Context().get(), req, &resp);
  if (s.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
    std::cerr << "ablate: decompose rejected:\n" << s.error_message() << "\n";
    *rc = kExitRejected;
    return std::nullopt;
  }
  if (!s.ok()) {
    *rc = c.Fail(s, "decompose");
    return std::nullopt;
  }
  return SweepCounts{resp.sweep().name(), resp.sweep().seeds(), resp.sweep().variants_size(),
                     resp.runs_size()};
}

// py_compile over many files in one interpreter (each start costs tens of milliseconds, and a
// record has ~50 variants): one line per file, "ok" or "error " and the last lines of the message.
constexpr char kPyCompile[] = R"(import py_compile, sys
for f in sys.argv[1:]:
    try:
        py_compile.compile(f, doraise=True)
        print("ok")
    except py_compile.PyCompileError as e:
        print("error " + " | ".join(l.strip() for l in str(e.msg).strip().splitlines()[-3:]))
)";

// Runs kPyCompile on `files`; its stdout, or nullopt with `*error` set.
std::optional<std::string> RunPyCompile(const std::string& python, const fs::path& dir,
                                        const std::vector<std::string>& files,
                                        std::string* error) {
  const fs::path log = dir / "py_compile.log";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<std::string> args = {python, "-c", kPyCompile};
  args.insert(args.end(), files.begin(), files.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, python.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    *error = "cannot run " + python + " for py_compile: " + std::strerror(rc);
    return std::nullopt;
  }
  int status = 0;
  waitpid(pid, &status, 0);
  bool ok = false;
  std::string out = ReadText(log.string(), &ok);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    *error = python + " failed running py_compile (exit status " + std::to_string(status) + ")";
    return std::nullopt;
  }
  return out;
}

// Compiles scripts in a private temporary folder, one sub-folder each.
class Compiler {
 public:
  explicit Compiler(std::string python) : python_(std::move(python)) {
    std::string pattern = (fs::temp_directory_path() / "ablate-decompose-XXXXXX").string();
    if (mkdtemp(pattern.data())) dir_ = pattern;
  }
  ~Compiler() {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  // Per text, "" when it compiles as `name`, else why not.
  std::vector<std::string> Check(const std::string& name, const std::vector<std::string>& texts) {
    std::vector<std::string> out(texts.size());
    if (texts.empty()) return out;
    if (dir_.empty()) return std::vector<std::string>(texts.size(), "no temporary folder");
    std::vector<std::string> files;
    for (const std::string& text : texts) {
      const fs::path sub = fs::path(dir_) / std::to_string(count_++);
      fs::create_directories(sub);
      std::ofstream(sub / name, std::ios::binary) << text;
      files.push_back((sub / name).string());
    }
    std::string error;
    std::optional<std::string> answer = RunPyCompile(python_, dir_, files, &error);
    std::istringstream lines(answer.value_or(""));
    for (std::string& o : out) {
      std::string line;
      if (!answer || !std::getline(lines, line)) {
        o = answer ? "py_compile gave no answer" : error;
      } else if (line != "ok") {
        o = line.starts_with("error ") ? line.substr(6) : line;
      }
    }
    return out;
  }

 private:
  std::string python_;
  std::string dir_;
  int count_ = 0;
};

struct ChangeCheck {
  std::string alone, left_out;  // "" when it compiles; else py_compile's message
  std::string merge_with;       // a change that makes it compile when merged, if found
};

std::string Lines(int first, int last) {
  return first == last ? std::to_string(first) : std::to_string(first) + "-" + std::to_string(last);
}

// Each change added alone and removed alone; for one that fails, the first other change that
// makes the pair compile (the change it needs).
std::vector<ChangeCheck> CheckChanges(const DecomposedScripts& parts, Compiler* compiler) {
  const int k = static_cast<int>(parts.split.changes.size());
  auto text = [&](const std::vector<int>& take) {
    absl::StatusOr<std::string> t = ApplyChanges(parts.from_text, parts.split, take);
    return t.ok() ? *t : std::string();  // DecomposeScripts applied every variant already
  };
  auto but = [&](int x, int y) {
    std::vector<int> keep;
    for (int j = 0; j < k; ++j) {
      if (j != x && j != y) keep.push_back(j);
    }
    return keep;
  };
  std::vector<std::string> texts;
  for (int c = 0; c < k; ++c) texts.push_back(text({c}));
  for (int c = 0; c < k && k > 1; ++c) texts.push_back(text(but(c, -1)));
  const std::vector<std::string> first = compiler->Check(parts.path, texts);
  std::vector<ChangeCheck> out(k);
  std::vector<std::pair<int, int>> pairs;  // (failing change, candidate partner)
  texts.clear();
  for (int c = 0; c < k; ++c) {
    out[c].alone = first[c];
    out[c].left_out = k > 1 ? first[k + c] : "";
    if (out[c].alone.empty() && out[c].left_out.empty()) continue;
    for (int d = 0; d < k; ++d) {
      if (d == c) continue;
      pairs.emplace_back(c, d);
      texts.push_back(text({std::min(c, d), std::max(c, d)}));
      texts.push_back(text(but(c, d)));
    }
  }
  const std::vector<std::string> second = compiler->Check(parts.path, texts);
  for (size_t i = 0; i < pairs.size(); ++i) {
    ChangeCheck& ch = out[pairs[i].first];
    const bool ok = (ch.alone.empty() || second[2 * i].empty()) &&
                    (ch.left_out.empty() || second[2 * i + 1].empty());
    if (ok && ch.merge_with.empty()) ch.merge_with = parts.split.changes[pairs[i].second].name;
  }
  return out;
}

// What to do about the changes that cannot stand alone; empty when all can.
std::vector<std::string> Problems(const DecomposedScripts& parts,
                                  const std::vector<ChangeCheck>& checks) {
  std::vector<std::string> out;
  for (size_t c = 0; c < checks.size(); ++c) {
    const ScriptChange& ch = parts.split.changes[c];
    const ChangeCheck& k = checks[c];
    if (k.alone.empty() && k.left_out.empty()) continue;
    std::string p = "change " + ch.name + " (TO lines " + Lines(ch.to_first, ch.to_last) +
                    ") cannot stand alone:";
    if (!k.alone.empty()) p += "\n    added alone to FROM: " + k.alone;
    if (!k.left_out.empty()) p += "\n    removed alone from TO: " + k.left_out;
    if (!k.merge_with.empty()) {
      const ScriptChange* other = nullptr;
      for (const ScriptChange& s : parts.split.changes) {
        if (s.name == k.merge_with) other = &s;
      }
      p += "\n    merge it with " + k.merge_with + ", e.g. --group " + ch.name + "=" +
           Lines(ch.to_first, ch.to_last) + "," + Lines(other->to_first, other->to_last) +
           " (or the same '# ablate-change: NAME' comment on a line added in each)";
    } else {
      p += "\n    no single other change makes it compile; merge it by hand (--group or "
           "'# ablate-change: NAME' markers)";
    }
    out.push_back(p);
  }
  return out;
}

// The decomposition of the request's spec, or nullopt (errors printed) / no decompose key.
std::optional<DecomposedScripts> Parts(const std::string& spec_yaml, const ScriptUploads& uploads,
                                       const std::string& file_name, bool* has_key) {
  *has_key = false;
  YAML::Node root;
  try {
    root = YAML::Load(spec_yaml);
  } catch (const YAML::Exception&) {
    return std::nullopt;  // the coordinator reports it with its position
  }
  if (!root.IsMap() || !root["decompose"]) return std::nullopt;
  *has_key = true;
  SpecErrors errors(file_name, spec_yaml);
  std::optional<DecomposeSpec> d = ReadDecomposeSpec(root["decompose"], &errors);
  std::optional<DecomposedScripts> parts;
  if (d) parts = DecomposeScripts(*d, uploads, &errors);
  if (!parts) std::cerr << "ablate: " << errors.ToStatus().message() << "\n";
  return parts;
}

void PrintChanges(const DecomposedScripts& parts, const std::vector<ChangeCheck>& checks) {
  std::cout << "FROM -> TO: " << parts.split.changes.size() << " changes\n";
  Table t({"CHANGE", "HUNKS", "FROM LINES", "TO LINES", "NAMED BY", "ALONE", "LEFT OUT"});
  for (size_t c = 0; c < checks.size(); ++c) {
    const ScriptChange& ch = parts.split.changes[c];
    t.AddRow({ch.name, std::to_string(ch.hunks), Lines(ch.from_first, ch.from_last),
              Lines(ch.to_first, ch.to_last), ch.named_by,
              checks[c].alone.empty() ? "compiles" : "FAILS",
              checks[c].left_out.empty() ? "compiles" : "FAILS"});
  }
  t.Print(std::cout);
  for (const std::string& note : parts.split.notes) std::cout << "note: " << note << "\n";
}

std::string Carries(const DecomposeVariant& v, const DecomposedScripts& parts) {
  const size_t k = parts.split.changes.size();
  if (v.changes.size() == k) return "every change";
  std::string out;
  if (v.changes.size() + 1 == k && k > 2) {
    for (size_t c = 0; c < k; ++c) {
      if (std::find(v.changes.begin(), v.changes.end(), static_cast<int>(c)) == v.changes.end()) {
        return "every change but " + parts.split.changes[c].name;
      }
    }
  }
  for (int c : v.changes) out += (out.empty() ? "" : ", ") + parts.split.changes[c].name;
  return out;
}

std::optional<double> Fraction(std::string text) {
  const bool percent = !text.empty() && text.back() == '%';
  if (percent) text.pop_back();
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0') return std::nullopt;
  return percent ? v / 100 : v;
}

int PrintDryRun(const DecomposeOptions& o, const DecomposedScripts& parts,
                const std::vector<ChangeCheck>& checks, const SweepCounts& sweep) {
  PrintChanges(parts, checks);
  const int variants = sweep.variants;
  std::cout << "\nsweep '" << sweep.name << "': " << variants << " variants x " << sweep.seeds
            << " seeds = " << sweep.runs << " runs (FROM is the baseline)\n";
  Table t({"VARIANT", "ROLES", "CARRIES"});
  t.AddRow({"baseline", "from", "no change (FROM)"});
  for (const DecomposeVariant& v : parts.variants) {
    std::string roles;
    for (const std::string& r : v.roles) roles += (roles.empty() ? "" : ", ") + r;
    t.AddRow({v.name, roles, Carries(v, parts)});
  }
  t.Print(std::cout);
  if (!o.effect.empty()) {
    const std::optional<double> e = Fraction(o.effect), s = Fraction(o.sd);
    if (!e || !s || *e <= 0 || *s <= 0) {
      std::cerr << "ablate: --effect and --sd must both be given as changes such as 1% and 0.5%\n";
      return kExitUsage;
    }
    const std::optional<int> n = SeedsForPower(*e / *s);
    std::cout << "to detect a " << o.effect << " change in time to target at a spread of " << o.sd
              << " (ablate plan's rule, 80% power): ";
    if (n) {
      std::cout << *n << " seeds per variant x " << variants << " variants = "
                << *n * static_cast<int64_t>(variants) << " runs\n";
    } else {
      std::cout << "more than 10000 seeds per variant\n";
    }
  }
  std::cout << "\nthe changes (each as FROM + change against FROM):\n";
  for (size_t c = 0; c < parts.split.changes.size(); ++c) {
    for (size_t i = 0; i < parts.variants.size(); ++i) {
      if (parts.variants[i].changes != std::vector<int>{static_cast<int>(c)}) continue;
      std::cout << "== " << parts.split.changes[c].name << "\n"
                << UnifiedDiff(parts.from, parts.snapshots[i]);
    }
  }
  return kExitOk;
}

J DryRunJson(const DecomposedScripts& parts, const std::vector<ChangeCheck>& checks,
             const SweepCounts& sweep) {
  J changes = J::array(), variants = J::array();
  for (size_t c = 0; c < checks.size(); ++c) {
    const ScriptChange& ch = parts.split.changes[c];
    changes.push_back({{"name", ch.name}, {"named_by", ch.named_by}, {"hunks", ch.hunks},
                       {"from_lines", {ch.from_first, ch.from_last}},
                       {"to_lines", {ch.to_first, ch.to_last}},
                       {"alone_error", checks[c].alone}, {"left_out_error", checks[c].left_out},
                       {"merge_with", checks[c].merge_with}});
  }
  for (size_t i = 0; i < parts.variants.size(); ++i) {
    J carried = J::array();
    for (int c : parts.variants[i].changes) carried.push_back(parts.split.changes[c].name);
    variants.push_back({{"name", parts.variants[i].name}, {"roles", parts.variants[i].roles},
                        {"changes", carried},
                        {"diff", UnifiedDiff(parts.from, parts.snapshots[i])}});
  }
  return {
      {"changes", changes}, {"variants", variants}, {"seeds", sweep.seeds}, {"runs", sweep.runs}};
}

// Compiles FROM, TO and every change alone and left out; prints what cannot stand alone.
std::optional<std::vector<ChangeCheck>> CheckAll(const DecomposedScripts& parts,
                                                 const std::string& python) {
  Compiler compiler(python);
  const std::vector<std::string> ends =
      compiler.Check(parts.path, {parts.from_text, parts.to_text});
  for (size_t i = 0; i < ends.size(); ++i) {
    if (ends[i].empty()) continue;
    std::cerr << "ablate: " << (i == 0 ? "FROM" : "TO") << " itself does not compile: " << ends[i]
              << "\n";
    return std::nullopt;
  }
  std::vector<ChangeCheck> checks = CheckChanges(parts, &compiler);
  return checks;
}

int SubmitDecomposition(Client& c, const v1::SubmitSweepRequest& req) {
  v1::SubmitSweepResponse resp;
  grpc::Status s = c.stub().SubmitSweep(c.Context().get(), req, &resp);
  if (!s.ok()) return c.Fail(s, "decompose");
  if (c.json()) {
    std::cout << ToJson(resp) << "\n";
    return kExitOk;
  }
  const v1::Sweep& sw = resp.sweep();
  std::cout << "submitted sweep " << sw.id() << " '" << sw.name() << "': " << sw.variants_size()
            << " variants x " << sw.seeds() << " seeds = " << resp.runs_size() << " runs\n";
  for (const std::string& note : resp.notes()) std::cout << "note: " << note << "\n";
  std::cout << "watch it with: ablate watch " << sw.id() << "; then: ablate compare " << sw.id()
            << "\n";
  return kExitOk;
}

}  // namespace

CLI::App* AddDecomposeCommand(CLI::App* app, DecomposeOptions* o, bool* json) {
  CLI::App* sub = app->add_subcommand(
      "decompose",
      "which of a record's changes made it faster: split the diff FROM -> TO into changes and "
      "run FROM, TO, each change alone (add-one-in) and each left out (leave-one-out)");
  sub->add_option("FROM", o->from,
                  "the older script (the baseline), a record log (.txt/.log) whose script it "
                  "is, or sweep:ID[/VARIANT], the script a stored sweep's variant ran (e.g. a "
                  "record imported with ablate import)")
      ->required();
  sub->add_option("TO", o->to,
                  "the newer script, a record log (records/ format), or sweep:ID[/VARIANT]")
      ->required();
  sub->add_option("--spec", o->spec,
                  "base spec: name, seeds, target_val_loss, gpus_per_run, baseline launch keys "
                  "(args, env, ...), without ablations");
  sub->add_option("--group", o->groups,
                  "NAME=LINES: hunks meeting these TO line ranges are one change, e.g. "
                  "qkv=120-140,301-309 (repeatable)");
  sub->add_flag("--dry-run", o->dry_run,
                "print the changes, the variants, their diffs and the runs; store nothing (the "
                "coordinator checks the spec, as for submit --dry-run)");
  sub->add_option("--effect", o->effect, "with --dry-run: seeds to detect this change, e.g. 1%");
  sub->add_option("--sd", o->sd, "with --effect: run-to-run spread of time to target, e.g. 0.5%");
  sub->add_option("--python", o->python, "interpreter for py_compile")->capture_default_str();
  sub->add_flag("--json", *json, "print JSON");
  return sub;
}

int DecomposeCommand(Client& c, const DecomposeOptions& o) {
  absl::StatusOr<std::string> spec = BuildSpec(o);
  if (!spec.ok()) {
    std::cerr << "ablate: " << spec.status().message() << "\n";
    return spec.status().code() == absl::StatusCode::kNotFound ? kExitNotFound : kExitRejected;
  }
  v1::SubmitSweepRequest req;
  req.set_spec_yaml(*spec);
  req.set_file_name(o.spec.empty() ? "decompose" : o.spec);
  req.set_dry_run(o.dry_run);
  for (const std::string& path : {o.from, o.to}) {
    absl::StatusOr<ScriptUpload> u = ReadUpload(c, path);
    if (!u.ok()) {
      std::cerr << "ablate: " << u.status().message() << "\n";
      // An unknown sweep or variant is not found; a file that cannot be read, rejected (as ever).
      return path.starts_with("sweep:") && u.status().code() == absl::StatusCode::kNotFound
                 ? kExitNotFound
                 : kExitRejected;
    }
    AddToRequest(path, *u, &req);
  }
  int rc = kExitOk;
  const std::optional<SweepCounts> sweep = ExpandOnCoordinator(c, req, &rc);
  if (!sweep) return rc;
  const ScriptUploads uploads = UploadsOf(req);
  bool has_key = false;
  std::optional<DecomposedScripts> parts = Parts(*spec, uploads, req.file_name(), &has_key);
  if (!parts) return kExitRejected;
  std::optional<std::vector<ChangeCheck>> checks = CheckAll(*parts, o.python);
  if (!checks) return kExitRejected;
  const std::vector<std::string> problems = Problems(*parts, *checks);
  if (o.dry_run && c.json()) {
    std::cout << DryRunJson(*parts, *checks, *sweep).dump(2) << "\n";
    return problems.empty() ? kExitOk : kExitRejected;
  }
  if (o.dry_run) {
    if (int rc = PrintDryRun(o, *parts, *checks, *sweep); rc != kExitOk) return rc;
  }
  for (const std::string& p : problems) std::cerr << "ablate: " << p << "\n";
  if (!problems.empty()) {
    std::cerr << "ablate: " << problems.size()
              << " change(s) cannot stand alone; merge them and run decompose again (nothing "
                 "was submitted)\n";
    return kExitRejected;
  }
  return o.dry_run ? kExitOk : SubmitDecomposition(c, req);
}

bool CheckDecomposeRequest(const v1::SubmitSweepRequest& req, const std::string& python) {
  bool has_key = false;
  std::optional<DecomposedScripts> parts =
      Parts(req.spec_yaml(), UploadsOf(req), req.file_name(), &has_key);
  if (!has_key) return true;
  if (!parts) return false;
  std::optional<std::vector<ChangeCheck>> checks = CheckAll(*parts, python);
  if (!checks) return false;
  const std::vector<std::string> problems = Problems(*parts, *checks);
  for (const std::string& p : problems) std::cerr << "ablate: " << p << "\n";
  return problems.empty();
}

}  // namespace ablate
