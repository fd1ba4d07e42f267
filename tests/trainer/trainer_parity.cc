// trainer_parity: runs a parity state (MODEL.md "Parity state") through the C++ model and
// optimizers so that tests/reference/ablate_ref.py can compare it with the PyTorch reference.
//   trainer_parity run --state DIR --out DIR [--train] [--weights F] [--save-weights F]
// Writes logits.f32 (B, T, V, after the softcap) and grads/<name>.f32 of step 0, and result.json
// {"loss", "losses"}; with --train, `steps` optimizer steps on tokens[s] (no evaluation).
#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <vector>

#include "trainer/cpu/blas_setup.h"
#include "trainer/config/knob_schema.h"
#include "trainer/cpu/parallel.h"
#include "trainer/collectives/in_process_communicator.h"
#include "trainer/model/bf16.h"
#include "trainer/model/gpt.h"
#include "trainer/model/window_schedule.h"
#include "trainer/optim/optimizer.h"
#include "trainer/weights/weights_file.h"

namespace ablate {
namespace {

namespace fs = std::filesystem;
using J = nlohmann::json;

template <class T>
Result<std::vector<T>> ReadRaw(const fs::path& path, size_t count) {
  std::ifstream in(path, std::ios::binary);
  std::vector<T> out(count);
  if (!in.read(reinterpret_cast<char*>(out.data()), std::streamsize(count * sizeof(T)))) {
    return Error{"cannot read " + std::to_string(count) + " values from " + path.string(), ""};
  }
  return out;
}

Status WriteRaw(const fs::path& path, const float* data, size_t count) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(data), std::streamsize(count * sizeof(float)));
  if (!out) return Error{"cannot write " + path.string(), ""};
  return {};
}

Result<J> ReadJson(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return Error{"cannot read " + path.string(), ""};
  try {
    return J::parse(in);
  } catch (const J::exception& e) {
    return Error{path.string() + ": " + e.what(), ""};
  }
}

struct State {
  J config;
  int64_t b = 0, t = 0, steps = 0;
  std::vector<int32_t> tokens;  // (steps, B, T+1)
};

Result<State> LoadState(const fs::path& dir) {
  Result<J> manifest = ReadJson(dir / "manifest.json");
  if (!manifest.ok()) return manifest.error();
  Result<J> raw = ReadJson(dir / "config.json");
  if (!raw.ok()) return raw.error();
  Result<J> config = CanonicalizeConfig(*raw);
  if (!config.ok()) return config.error();
  State s{*config, (*manifest)["B"], (*manifest)["T"], (*manifest)["steps"], {}};
  auto tokens = ReadRaw<int32_t>(dir / "tokens.i32", size_t(s.steps * s.b * (s.t + 1)));
  if (!tokens.ok()) return tokens.error();
  s.tokens = std::move(tokens).value();
  return s;
}

Status LoadParams(const fs::path& dir, Gpt<float>& gpt) {
  for (const ParamInfo& p : gpt.layout().params()) {
    auto values = ReadRaw<float>(dir / "params" / (p.name + ".f32"), size_t(p.numel));
    if (!values.ok()) return values.status();
    std::copy(values->begin(), values->end(), gpt.params().begin() + p.offset);
  }
  RoundStoredParams(gpt.layout(), gpt.params().data());  // params stored in bf16 (MODEL.md)
  return {};
}

Status WriteStep0(const fs::path& out, Gpt<float>& gpt) {
  Status s = WriteRaw(out / "logits.f32", gpt.logits().data(), gpt.logits().size());
  for (const ParamInfo& p : gpt.layout().params()) {
    if (s.ok()) s = WriteRaw(out / "grads" / (p.name + ".f32"), gpt.grads().data() + p.offset,
                             size_t(p.numel));
  }
  return s;
}

// Step-0 forward/backward, then (train) the optimizer steps. Returns result.json's content.
Result<J> RunState(const State& st, Gpt<float>& gpt, const OptimConfig& oc, const fs::path& out,
                   bool train) {
  int64_t n_iter = st.config["num_iterations"];
  InProcessGroup group(1);
  InProcessCommunicator comm(&group, 0);
  Optimizer opt(oc, gpt.layout(), 0, 1);
  J losses = J::array();
  double loss0 = 0;
  int64_t steps = train ? st.steps : 1;
  for (int64_t s = 0; s < steps; ++s) {
    std::fill(gpt.grads().begin(), gpt.grads().end(), 0.f);
    const int32_t* tok = st.tokens.data() + s * st.b * (st.t + 1);
    double loss = gpt.Forward(tok, LayerWindowBlocks(gpt.config(), s, n_iter));
    gpt.Backward(1.f);
    if (s == 0) {
      loss0 = loss;
      Status w = WriteStep0(out, gpt);
      if (!w.ok()) return w.error();
    }
    if (!train) break;
    losses.push_back(loss);
    Status o = opt.Step(gpt.params().data(), gpt.grads().data(), s, comm);
    if (!o.ok()) return o.error();
  }
  return J{{"loss", loss0}, {"losses", losses}};
}

struct WeightFiles {
  std::string load;  // --weights: the params come from this safetensors file (record names)
  std::string save;  // --save-weights: the loaded params are written here (record names)
};

int Run(const std::string& state_dir, const std::string& out_dir, bool train,
        const WeightFiles& files) {
  cpu::SetThreads(1);
  Result<State> st = LoadState(state_dir);
  if (!st.ok()) return std::cerr << "trainer_parity: " << st.error().message << "\n", 2;
  ModelConfig m = *ModelConfig::FromCanonical(st->config);
  OptimConfig oc = *OptimConfig::FromCanonical(st->config);
  Gpt<float> gpt(m, st->b, st->t);
  Status s = files.load.empty()
                 ? LoadParams(state_dir, gpt)
                 : LoadWeightsFile(files.load, m, gpt.layout(), gpt.params().data());
  if (!s.ok()) return std::cerr << "trainer_parity: " << s.message() << "\n", 2;
  if (!files.save.empty()) {
    s = SaveWeights(files.save, m, gpt.layout(), gpt.params().data(), {{"format", "pt"}});
    if (!s.ok()) return std::cerr << "trainer_parity: " << s.message() << "\n", 1;
  }
  Result<J> result = RunState(*st, gpt, oc, out_dir, train);
  if (!result.ok()) return std::cerr << "trainer_parity: " << result.error().message << "\n", 1;
  std::ofstream(fs::path(out_dir) / "result.json") << result->dump() << "\n";
  std::cout << result->dump() << "\n";
  return 0;
}

}  // namespace
}  // namespace ablate

int main(int argc, char** argv) {
  ablate::cpu::TuneCpuRuntime(argv);
  CLI::App app{"trainer_parity: run a parity state through the C++ trainer (see MODEL.md)"};
  app.require_subcommand(1);
  CLI::App* run = app.add_subcommand("run", "step-0 logits and grads, then optional training");
  std::string state, out;
  bool train = false;
  run->add_option("--state", state, "parity state directory")->required();
  run->add_option("--out", out, "output directory")->required();
  run->add_flag("--train", train, "also run the state's `steps` optimizer steps");
  ablate::WeightFiles files;
  run->add_option("--weights", files.load,
                  "take the params from this safetensors file (record names), not params/");
  run->add_option("--save-weights", files.save,
                  "write the loaded params as safetensors with the record names");
  CLI11_PARSE(app, argc, argv);
  return ablate::Run(state, out, train, files);
}
