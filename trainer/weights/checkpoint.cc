// Checkpoint files (see checkpoint.h for the layout).
#include "trainer/weights/checkpoint.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "trainer/weights/safetensors.h"

namespace ablate {
namespace {

namespace fs = std::filesystem;
using J = nlohmann::json;

constexpr const char* kMetaKey = "ablate.checkpoint";
constexpr int kKeep = 2;

TensorToWrite Floats(std::string name, const float* data, int64_t n, std::vector<int64_t> shape) {
  return {std::move(name), TensorDtype::kF32, std::move(shape), data, n * 4, nullptr};
}

J JsonOrNull(const std::optional<double>& v) { return v ? J(*v) : J(nullptr); }

J MetaJson(const CheckpointMeta& m) {
  return {{"version", 1},
          {"steps_done", m.steps_done},
          {"config_hash", m.config_hash},
          {"seed", m.seed},
          {"data", {{"shard", m.data_shard}, {"base", m.data_base}, {"started", m.data_started}}},
          {"train_ms", m.train_ms},
          {"final_val_loss", JsonOrNull(m.final_val_loss)},
          {"time_to_target_ms", JsonOrNull(m.time_to_target_ms)},
          {"target_step", m.target_step ? J(*m.target_step) : J(nullptr)},
          {"val_done_at", m.val_done_at}};
}

Result<CheckpointMeta> ParseMeta(const std::string& text) {
  J j = J::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Error{"metadata is not a JSON object", kMetaKey};
  CheckpointMeta m;
  try {
    if (j.at("version").get<int>() != 1) return Error{"unknown checkpoint version", "version"};
    m.steps_done = j.at("steps_done").get<int64_t>();
    m.config_hash = j.at("config_hash").get<std::string>();
    m.seed = j.at("seed").get<uint64_t>();
    m.data_shard = j.at("data").at("shard").get<int>();
    m.data_base = j.at("data").at("base").get<int64_t>();
    m.data_started = j.at("data").at("started").get<bool>();
    m.train_ms = j.at("train_ms").get<double>();
    if (!j.at("final_val_loss").is_null()) m.final_val_loss = j["final_val_loss"].get<double>();
    if (!j.at("time_to_target_ms").is_null()) {
      m.time_to_target_ms = j["time_to_target_ms"].get<double>();
    }
    if (!j.at("target_step").is_null()) m.target_step = j["target_step"].get<int64_t>();
    m.val_done_at = j.at("val_done_at").get<int64_t>();
  } catch (const J::exception& e) {
    return Error{std::string("checkpoint metadata: ") + e.what(), kMetaKey};
  }
  if (m.steps_done < 0) return Error{"checkpoint metadata: negative steps_done", "steps_done"};
  return m;
}

// Copies a flat F32 tensor of `want` values into out, straight from the file's bytes; with
// want < 0 any length, and `resize` (then required) is sized to it and written instead.
Status ReadFloats(const SafetensorsView& v, const std::string& name, int64_t want, float* out,
                  std::vector<float>* resize = nullptr) {
  const TensorEntry* t = v.Find(name);
  if (t == nullptr) return Error{"tensor '" + name + "': missing", name};
  if (t->dtype != TensorDtype::kF32) {
    return Error{"tensor '" + name + "': dtype " + t->dtype_name + ", expected F32", name};
  }
  if (want >= 0 && t->numel() != want) {
    return Error{"tensor '" + name + "': " + std::to_string(t->numel()) + " values, expected " +
                     std::to_string(want),
                 name};
  }
  if (resize != nullptr) {
    resize->resize(size_t(t->numel()));
    out = resize->data();
  }
  std::string_view bytes = v.Bytes(*t);
  if (!bytes.empty()) std::memcpy(out, bytes.data(), bytes.size());
  return {};
}

// Checkpoint files in dir, newest (most steps) first.
std::vector<fs::path> CheckpointFiles(const std::string& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (name.starts_with("ckpt-") && name.ends_with(".safetensors")) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end(), std::greater<>());  // fixed-width step numbers
  return files;
}

// The checkpoint's tensors (pointing into c) and metadata.
std::vector<TensorToWrite> CheckpointTensors(const Checkpoint& c, const ParamLayout& layout,
                                             std::map<std::string, std::string>& metadata) {
  std::vector<TensorToWrite> t;
  for (const ParamInfo& p : layout.params()) {
    t.push_back(Floats("params/" + p.name, c.params.data() + p.offset, p.numel, p.shape));
  }
  const OptimizerState& o = c.optim;
  t.push_back(Floats("optim/adam_m", o.adam_m.data(), int64_t(o.adam_m.size()),
                     {int64_t(o.adam_m.size())}));
  t.push_back(Floats("optim/adam_v", o.adam_v.data(), int64_t(o.adam_v.size()),
                     {int64_t(o.adam_v.size())}));
  t.push_back(Floats("optim/muon_momentum", o.muon_momentum.data(), int64_t(o.muon_momentum.size()),
                     {int64_t(o.muon_momentum.size())}));
  J meta = MetaJson(c.meta);
  meta["adam_steps"] = o.adam_steps;
  metadata = {{kMetaKey, meta.dump()}};
  return t;
}

}  // namespace

std::string SerializeCheckpoint(const Checkpoint& c, const ParamLayout& layout) {
  std::map<std::string, std::string> metadata;
  std::vector<TensorToWrite> t = CheckpointTensors(c, layout, metadata);
  return SerializeSafetensors(t, metadata);
}

Result<Checkpoint> ParseCheckpoint(std::string_view bytes, const ParamLayout& layout) {
  Result<SafetensorsView> view = ParseSafetensors(bytes);
  if (!view.ok()) return view.error();
  auto meta_text = view->metadata.find(kMetaKey);
  if (meta_text == view->metadata.end()) {
    return Error{"not an ablate checkpoint (no " + std::string(kMetaKey) + " metadata)", kMetaKey};
  }
  Result<CheckpointMeta> meta = ParseMeta(meta_text->second);
  if (!meta.ok()) return meta.error();
  Checkpoint c;
  c.meta = *meta;
  c.optim.adam_steps = J::parse(meta_text->second).value("adam_steps", int64_t(0));
  c.params.assign(size_t(layout.total()), 0.f);
  for (const ParamInfo& p : layout.params()) {
    ABLATE_RETURN_IF_ERROR(
        ReadFloats(*view, "params/" + p.name, p.numel, c.params.data() + p.offset));
  }
  for (auto [name, out] :
       {std::pair{"optim/adam_m", &c.optim.adam_m}, std::pair{"optim/adam_v", &c.optim.adam_v},
        std::pair{"optim/muon_momentum", &c.optim.muon_momentum}}) {
    ABLATE_RETURN_IF_ERROR(ReadFloats(*view, name, -1, nullptr, out));
  }
  size_t expected = layout.params().size() + 3;
  if (view->tensors.size() != expected) {
    for (const TensorEntry& t : view->tensors) {
      bool known = t.name.starts_with("optim/") ||
                   (t.name.starts_with("params/") && layout.Find(t.name.substr(7)) != nullptr);
      if (!known)
        return Error{"tensor '" + t.name + "': not part of this run's checkpoint", t.name};
    }
  }
  return c;
}

Result<std::string> WriteCheckpoint(const std::string& dir, const Checkpoint& c,
                                    const ParamLayout& layout) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Error{"cannot create checkpoint directory " + dir + ": " + ec.message(), ""};
  char name[64];
  std::snprintf(name, sizeof(name), "ckpt-%08lld.safetensors",
                static_cast<long long>(c.meta.steps_done));
  std::string path = (fs::path(dir) / name).string();
  std::map<std::string, std::string> metadata;
  std::vector<TensorToWrite> tensors = CheckpointTensors(c, layout, metadata);
  ABLATE_RETURN_IF_ERROR(WriteSafetensorsFile(path, tensors, metadata));
  std::vector<fs::path> files = CheckpointFiles(dir);
  for (size_t i = kKeep; i < files.size(); ++i) fs::remove(files[i], ec);  // best effort
  return path;
}

Result<std::optional<Checkpoint>> LoadNewestCheckpoint(const std::string& dir,
                                                       const ParamLayout& layout,
                                                       const std::string& config_hash,
                                                       std::vector<std::string>& skipped) {
  for (const fs::path& f : CheckpointFiles(dir)) {
    // read(), not a mapping: a cold multi-GB file is read several times faster in one
    // sequential read than page by page (bench/trainer_cpu/NOTES.md, checkpoints).
    Result<std::string> bytes = ReadFileBytes(f.string());
    Result<Checkpoint> c =
        bytes.ok() ? ParseCheckpoint(*bytes, layout) : Result<Checkpoint>(bytes.error());
    if (!c.ok()) {
      skipped.push_back(f.string() + ": " + c.error().message);
      continue;
    }
    if (c->meta.config_hash != config_hash) {
      return Error{f.string() + " is a checkpoint of another config (hash " +
                       c->meta.config_hash.substr(0, 12) + ", this run " +
                       config_hash.substr(0, 12) + ")",
                   "resume"};
    }
    Checkpoint out = std::move(c).value();
    out.path = f.string();
    return std::optional<Checkpoint>(std::move(out));
  }
  return std::optional<Checkpoint>();
}

}  // namespace ablate
