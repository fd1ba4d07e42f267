// The worker's preflight (issue 25): each check against stand-ins run as real child processes (a
// stand-in nvidia-smi, a stand-in ablate-train that answers --libraries, a stand-in python), then
// the real ablate-worker --check with the real ablate-train.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/util/subprocess.h"
#include "worker/preflight.h"

namespace ablate::worker {
namespace {

using ablate::testing::TempDir;
using ablate::testing::WriteFile;
using J = nlohmann::json;

std::string Script(const std::string& dir, const std::string& name, const std::string& body) {
  std::string path = dir + "/" + name;
  WriteFile(path, "#!/bin/sh\n" + body);
  ::chmod(path.c_str(), 0755);
  return path;
}

// nvidia-smi answering the two questions the worker asks, for `gpus` H100s and `driver`.
std::string FakeSmi(const std::string& dir, int gpus, const std::string& driver) {
  return Script(dir, "nvidia-smi",
                "case \"$1\" in\n"
                "  --query-gpu=index,name,memory.total)\n"
                "    i=0; while [ $i -lt " + std::to_string(gpus) + " ]; do\n"
                "      echo \"$i, NVIDIA H100 80GB HBM3, 81559\"; i=$((i+1)); done ;;\n"
                "  --query-gpu=driver_version)\n"
                "    i=0; while [ $i -lt " + std::to_string(gpus) + " ]; do\n"
                "      echo " + driver + "; i=$((i+1)); done ;;\n"
                "  *) exit 1 ;;\n"
                "esac\n");
}

// ablate-train answering --libraries with `report`.
std::string FakeTrainer(const std::string& dir, const J& report) {
  WriteFile(dir + "/report.json", report.dump() + "\n");
  return Script(dir, "ablate-train", "[ \"$1\" = --libraries ] && exec cat " + dir +
                                         "/report.json\nexit 2\n");
}

J CudaReport(const std::string& built, const J& driver) {
  return {{"backends", {"cpu", "cuda"}},
          {"cuda", {{"built", built}, {"driver", driver}}},
          {"cublaslt", {{"found", true}, {"path", "/opt/cuda/lib64/libcublasLt.so.13"}}},
          {"nccl", {{"found", true}, {"path", "/usr/lib/libnccl.so.2"}, {"version", "2.28.3"}}}};
}

class PreflightTest : public ::testing::Test {
 protected:
  PreflightOptions Options(const J& report, int gpus, const std::string& driver) {
    PreflightOptions o;
    o.trainer = FakeTrainer(dir_.path(), report);
    o.nvidia_smi = FakeSmi(dir_.path(), gpus, driver);
    o.work_dir = dir_.path() + "/work";
    o.data_dir = dir_.path();
    o.min_free_bytes = 0;
    return o;
  }
  static const CheckLine& Line(const std::vector<CheckLine>& lines, const std::string& check) {
    for (const CheckLine& l : lines) {
      if (l.check == check) return l;
    }
    static const CheckLine kMissing{"missing", CheckState::kFail, "no such line"};
    ADD_FAILURE() << "no " << check << " line in\n" << PreflightText(lines);
    return kMissing;
  }
  TempDir dir_;
};

TEST_F(PreflightTest, DriverTooOldForTheTrainersCudaSaysWhatToDo) {
  auto lines = RunPreflight(Options(CudaReport("13.0", "12.4"), 8, "550.54.15"));
  const CheckLine& d = Line(lines, "driver");
  EXPECT_EQ(d.state, CheckState::kFail) << d.text;
  EXPECT_NE(d.text.find("550.54.15"), std::string::npos) << d.text;
  EXPECT_NE(d.text.find("built with CUDA 13.0, which needs driver 580 or newer"),
            std::string::npos) << d.text;
  EXPECT_NE(d.text.find("upgrade the NVIDIA driver to 580"), std::string::npos) << d.text;
  EXPECT_EQ(PreflightExitCode(lines), 1);
  EXPECT_EQ(Line(lines, "gpus").state, CheckState::kOk);
  EXPECT_NE(Line(lines, "gpus").text.find("8 GPUs (0,1,2,3,4,5,6,7): NVIDIA H100 80GB HBM3"),
            std::string::npos);
}

TEST_F(PreflightTest, NewEnoughDriverPassesEveryGpuCheck) {
  auto lines = RunPreflight(Options(CudaReport("13.0", "13.0"), 8, "580.82.07"));
  for (const char* c : {"trainer", "gpus", "driver", "cublaslt", "nccl", "work-dir"}) {
    EXPECT_EQ(Line(lines, c).state, CheckState::kOk) << PreflightText(lines);
  }
  EXPECT_NE(Line(lines, "cublaslt").text.find("/opt/cuda/lib64/libcublasLt.so.13"),
            std::string::npos);
  EXPECT_NE(Line(lines, "nccl").text.find("NCCL 2.28.3 at /usr/lib/libnccl.so.2"),
            std::string::npos);
  EXPECT_NE(Line(lines, "work-dir").text.find("does not exist yet"), std::string::npos);
  EXPECT_EQ(PreflightExitCode(lines), 0) << PreflightText(lines);
}

TEST_F(PreflightTest, TrainerWithoutDriverAccessIsToldApartFromAnOldDriver) {
  // nvidia-smi sees a good driver, but the trainer cannot load libcuda (a container started
  // without the NVIDIA runtime, say).
  auto lines = RunPreflight(Options(CudaReport("13.0", nullptr), 1, "580.82.07"));
  EXPECT_EQ(Line(lines, "driver").state, CheckState::kFail);
  EXPECT_NE(Line(lines, "driver").text.find("cannot load the NVIDIA driver's libcuda.so.1"),
            std::string::npos) << Line(lines, "driver").text;
  // The same, with an old driver: the age is the reason given.
  lines = RunPreflight(Options(CudaReport("12.8", nullptr), 1, "520.61.05"));
  EXPECT_NE(Line(lines, "driver").text.find("is too old for ablate-train, built with CUDA 12.8, "
                                            "which needs driver 525.60.13 or newer"),
            std::string::npos) << Line(lines, "driver").text;
}

TEST_F(PreflightTest, MissingLibrariesAreFailuresOnlyWhereTheyAreNeeded) {
  J report = CudaReport("13.0", "13.0");
  report["cublaslt"] = {{"found", false}, {"error", "cannot load cuBLASLt (libcublasLt.so.13: "
                                                    "cannot open shared object file)"}};
  report["nccl"] = {{"found", false}, {"error", "cannot load NCCL (libnccl.so.2: nope)"}};
  auto lines = RunPreflight(Options(report, 8, "580.82.07"));
  EXPECT_EQ(Line(lines, "cublaslt").state, CheckState::kFail);
  EXPECT_NE(Line(lines, "cublaslt").text.find("libcublasLt.so.13: cannot open"), std::string::npos);
  EXPECT_EQ(Line(lines, "nccl").state, CheckState::kFail);
  // One GPU: NCCL is not needed.
  lines = RunPreflight(Options(report, 1, "580.82.07"));
  EXPECT_EQ(Line(lines, "nccl").state, CheckState::kSkip);
  EXPECT_EQ(Line(lines, "cublaslt").state, CheckState::kFail);
  // Built without NCCL on an 8-GPU node: runs on several GPUs are refused.
  report["nccl"] = nullptr;
  lines = RunPreflight(Options(report, 8, "580.82.07"));
  EXPECT_EQ(Line(lines, "nccl").state, CheckState::kWarn);
  EXPECT_NE(Line(lines, "nccl").text.find("refused"), std::string::npos);
}

TEST_F(PreflightTest, CpuOnlyTrainerOnAGpuNodeFailsTheDriverCheck) {
  J report = {{"backends", {"cpu"}}, {"cuda", nullptr}, {"cublaslt", nullptr}, {"nccl", nullptr}};
  auto lines = RunPreflight(Options(report, 2, "580.82.07"));
  EXPECT_EQ(Line(lines, "driver").state, CheckState::kFail);
  EXPECT_NE(Line(lines, "driver").text.find("without its CUDA backend"), std::string::npos);
  // The same trainer with --gpus none is fine.
  PreflightOptions o = Options(report, 2, "580.82.07");
  o.gpus = "none";
  lines = RunPreflight(o);
  EXPECT_EQ(Line(lines, "gpus").state, CheckState::kSkip);
  EXPECT_EQ(Line(lines, "driver").state, CheckState::kSkip);
  EXPECT_EQ(PreflightExitCode(lines), 0) << PreflightText(lines);
}

TEST_F(PreflightTest, NoNvidiaSmiIsAWarningForAllAndAFailureForChosenGpus) {
  PreflightOptions o = Options(CudaReport("13.0", nullptr), 0, "");
  o.nvidia_smi = dir_.path() + "/missing/nvidia-smi";
  auto lines = RunPreflight(o);
  EXPECT_EQ(Line(lines, "gpus").state, CheckState::kWarn);
  EXPECT_NE(Line(lines, "gpus").text.find("CPU runs only"), std::string::npos);
  EXPECT_EQ(Line(lines, "driver").state, CheckState::kSkip);
  EXPECT_EQ(PreflightExitCode(lines), 0) << PreflightText(lines);
  o.gpus = "0,1";
  lines = RunPreflight(o);
  EXPECT_EQ(Line(lines, "gpus").state, CheckState::kFail);
  EXPECT_NE(Line(lines, "gpus").text.find("--gpus 0,1 asks for GPUs"), std::string::npos);
  // A GPU index that nvidia-smi does not list.
  o = Options(CudaReport("13.0", "13.0"), 2, "580.82.07");
  o.gpus = "5";
  lines = RunPreflight(o);
  EXPECT_EQ(Line(lines, "gpus").state, CheckState::kFail);
  EXPECT_NE(Line(lines, "gpus").text.find("GPU 5 was not found"), std::string::npos);
}

TEST_F(PreflightTest, TrainerMissingOrMute) {
  PreflightOptions o = Options(CudaReport("13.0", "13.0"), 1, "580.82.07");
  o.trainer = Script(dir_.path(), "old-train", "echo 'unknown option --libraries' >&2; exit 2\n");
  auto lines = RunPreflight(o);
  EXPECT_EQ(Line(lines, "trainer").state, CheckState::kFail);
  EXPECT_NE(Line(lines, "trainer").text.find("does not answer --libraries (exit 2)"),
            std::string::npos);
  EXPECT_EQ(Line(lines, "driver").state, CheckState::kSkip);
  o.trainer = "";
  o.trainer_error = "ablate-train not found next to this binary";
  lines = RunPreflight(o);
  EXPECT_NE(Line(lines, "trainer").text.find("pass --trainer PATH"), std::string::npos);
  EXPECT_EQ(PreflightExitCode(lines), 1);
}

TEST_F(PreflightTest, FoldersThatCannotBeWrittenOrHoldNoDatasets) {
  PreflightOptions o = Options(CudaReport("13.0", "13.0"), 1, "580.82.07");
  WriteFile(dir_.path() + "/a-file", "x");
  o.work_dir = dir_.path() + "/a-file/work";  // under a file: no one can create it
  o.data_dir = dir_.path() + "/no-data";
  auto lines = RunPreflight(o);
  EXPECT_EQ(Line(lines, "work-dir").state, CheckState::kFail);
  EXPECT_NE(Line(lines, "work-dir").text.find("cannot write there"), std::string::npos)
      << Line(lines, "work-dir").text;
  EXPECT_EQ(Line(lines, "data-dir").state, CheckState::kWarn);
  EXPECT_NE(Line(lines, "data-dir").text.find("does not exist"), std::string::npos);
  // Free space under the threshold is a warning that names it.
  o.work_dir = dir_.path();
  o.min_free_bytes = ~uint64_t{0};
  lines = RunPreflight(o);
  EXPECT_EQ(Line(lines, "work-dir").state, CheckState::kWarn);
  EXPECT_NE(Line(lines, "work-dir").text.find("GiB free"), std::string::npos);
}

TEST_F(PreflightTest, ScriptLaunchers) {
  PreflightOptions o = Options(CudaReport("13.0", "13.0"), 1, "580.82.07");
  auto lines = RunPreflight(o);
  EXPECT_EQ(Line(lines, "python").state, CheckState::kSkip);  // no --allow-scripts
  o.allow_scripts = true;
  o.python = dir_.path() + "/no-python";
  lines = RunPreflight(o);
  EXPECT_EQ(Line(lines, "python").state, CheckState::kFail);
  EXPECT_NE(Line(lines, "python").text.find("pass --python PATH"), std::string::npos);
  o.python = Script(dir_.path(), "python-without-torch", "echo 3.11.2; echo\n");
  lines = RunPreflight(o);
  EXPECT_EQ(Line(lines, "python").state, CheckState::kOk);
  EXPECT_NE(Line(lines, "python").text.find("Python 3.11.2"), std::string::npos);
  EXPECT_EQ(Line(lines, "torchrun").state, CheckState::kWarn);
  EXPECT_NE(Line(lines, "torchrun").text.find("pip install torch"), std::string::npos);
  o.python = Script(dir_.path(), "python-with-torch", "echo 3.12.1; echo 2.9.0\n");
  lines = RunPreflight(o);
  EXPECT_EQ(Line(lines, "torchrun").state, CheckState::kOk);
  EXPECT_NE(Line(lines, "torchrun").text.find("PyTorch 2.9.0"), std::string::npos);
}

TEST_F(PreflightTest, TrainerNotAskedWhenTheWorkerOffersNoGpus) {
  PreflightOptions o = Options(CudaReport("13.0", "12.4"), 8, "550.54.15");
  o.trainer = Script(dir_.path(), "must-not-run", "touch " + dir_.path() + "/ran\nexit 1\n");
  o.ask_trainer = false;
  o.gpus = "none";
  auto lines = RunPreflight(o);
  EXPECT_EQ(Line(lines, "trainer").state, CheckState::kOk);
  EXPECT_NE(Line(lines, "trainer").text.find("not asked"), std::string::npos);
  EXPECT_EQ(Line(lines, "driver").state, CheckState::kSkip);
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/ran"));
}

TEST_F(PreflightTest, JsonCarriesEveryLineAndTheVerdict) {
  auto lines = RunPreflight(Options(CudaReport("13.0", "12.4"), 8, "550.54.15"));
  J j = J::parse(PreflightJson(lines));
  EXPECT_FALSE(j["ok"].get<bool>());
  ASSERT_EQ(j["checks"].size(), lines.size());
  EXPECT_EQ(j["checks"][2]["check"], "driver");
  EXPECT_EQ(j["checks"][2]["state"], "fail");
  EXPECT_EQ(PreflightText(lines).substr(0, 16), "ok    trainer   ");
}

TEST(DriverVersionTest, ComparesPartByPart) {
  EXPECT_TRUE(DriverAtLeast("580.65.06", "580"));
  EXPECT_TRUE(DriverAtLeast("580", "580"));
  EXPECT_FALSE(DriverAtLeast("575.64.05", "580"));
  EXPECT_TRUE(DriverAtLeast("525.60.13", "525.60.13"));
  EXPECT_FALSE(DriverAtLeast("525.60.11", "525.60.13"));
  EXPECT_TRUE(DriverAtLeast("535.1", "525.60.13"));
  EXPECT_FALSE(DriverAtLeast("", "580"));
  EXPECT_FALSE(DriverAtLeast("n/a", "580"));
  EXPECT_EQ(MinimumDriverFor(13), "580");
  EXPECT_EQ(MinimumDriverFor(12), "525.60.13");
  EXPECT_EQ(MinimumDriverFor(99), "");
}

#if defined(ABLATE_WORKER_BIN) && defined(ABLATE_TRAIN_BIN)
// The real binaries: ablate-train's report, and ablate-worker --check built on it.
TEST(PreflightBinaryTest, RealTrainerReportsItsLibraries) {
  TempDir libs;
  // A broken library first on the search path is reported, never silently taken for the real one.
  WriteFile(libs.path() + "/libcublasLt.so.13", "not a library");
  WriteFile(libs.path() + "/libnccl.so.2", "not a library");
  auto r = ablate::testing::RunProcess({ABLATE_TRAIN_BIN, "--libraries"},
                                       {{"LD_LIBRARY_PATH", libs.path()}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  J j = J::parse(r.out);
  ASSERT_TRUE(j["backends"].is_array());
  EXPECT_EQ(j["backends"][0], "cpu");
  bool cuda = j["backends"].size() > 1;
  EXPECT_EQ(j["cuda"].is_object(), cuda);
  for (const char* lib : {"cublaslt", "nccl"}) {
    if (!j[lib].is_object()) continue;
    if (j[lib]["found"].get<bool>()) {
      EXPECT_EQ(j[lib]["path"].get<std::string>().find(libs.path()), std::string::npos) << j;
    } else {
      EXPECT_NE(j[lib]["error"].get<std::string>().find("cannot load"), std::string::npos) << j;
    }
  }
}

TEST(PreflightBinaryTest, WorkerCheckPrintsEveryLineAndExitsByTheVerdict) {
  TempDir dir;
  auto r = ablate::testing::RunProcess({ABLATE_WORKER_BIN, "--check", "--gpus", "none",
                                        "--work-dir", dir.path() + "/work", "--data-dir",
                                        dir.path(), "--trainer", ABLATE_TRAIN_BIN});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* c : {"trainer", "gpus", "driver", "cublaslt", "nccl", "work-dir", "data-dir",
                        "python", "torchrun"}) {
    EXPECT_NE(r.out.find(std::string(" ") + c + " "), std::string::npos) << c << "\n" << r.out;
  }
  EXPECT_NE(r.out.find("ok    trainer   " ABLATE_TRAIN_BIN " (backends: cpu"), std::string::npos)
      << r.out;
  WriteFile(dir.path() + "/file", "x");
  r = ablate::testing::RunProcess({ABLATE_WORKER_BIN, "--check", "--json", "--gpus", "none",
                                   "--work-dir", dir.path() + "/file/work", "--trainer",
                                   ABLATE_TRAIN_BIN});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  J j = J::parse(r.out);
  EXPECT_FALSE(j["ok"].get<bool>());
  // No --coordinator is needed for --check, but it still is without it.
  r = ablate::testing::RunProcess({ABLATE_WORKER_BIN, "--work-dir", dir.path()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--coordinator is required"), std::string::npos) << r.err;
}
#endif

}  // namespace
}  // namespace ablate::worker
