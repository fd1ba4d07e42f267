// Path flags made absolute where they are read (issue 41): AbsolutePath and the CLI11 transform
// that every binary's path flags use.
#include "common/absolute_path.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "common/cli_path_flag.h"

namespace ablate {
namespace {

namespace fs = std::filesystem;

// Runs the test in a directory of its own, and goes back after.
class AbsolutePathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    before_ = fs::current_path();
    dir_ = fs::temp_directory_path() / ("absolute-path-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    fs::current_path(dir_);
    dir_ = fs::current_path();  // as the kernel spells it (a symlinked /tmp)
  }
  void TearDown() override {
    fs::current_path(before_);
    fs::remove_all(dir_);
  }
  std::string In(const std::string& rest) const { return (dir_ / rest).string(); }

  fs::path before_, dir_;
};

TEST_F(AbsolutePathTest, RelativePathsAreJoinedToTheCurrentDirectory) {
  EXPECT_EQ(AbsolutePath("build/demo"), In("build/demo"));
  EXPECT_EQ(AbsolutePath("./build/./demo"), In("build/demo"));
  EXPECT_EQ(AbsolutePath("."), dir_.string());
  EXPECT_EQ(AbsolutePath("data/"), In("data/"));
  EXPECT_EQ(AbsolutePath("../x"), In("../x")) << ".. is the file system's to resolve";
  EXPECT_EQ(AbsolutePath("shards/*.bin"), In("shards/*.bin")) << "a glob stays a glob";
}

TEST_F(AbsolutePathTest, AbsoluteEmptyAndStdioAreUnchanged) {
  EXPECT_EQ(AbsolutePath("/srv/ablate"), "/srv/ablate");
  EXPECT_EQ(AbsolutePath("/srv/./ablate/"), "/srv/ablate/");
  EXPECT_EQ(AbsolutePath(""), "");
  EXPECT_EQ(AbsolutePath("-"), "-");
}

TEST_F(AbsolutePathTest, ProgramNamesStayForThePathLookup) {
  EXPECT_EQ(AbsolutePath("python3", PathKind::kProgram), "python3");
  EXPECT_EQ(AbsolutePath("venv/bin/python", PathKind::kProgram), In("venv/bin/python"));
  EXPECT_EQ(AbsolutePath("/usr/bin/python3", PathKind::kProgram), "/usr/bin/python3");
}

TEST_F(AbsolutePathTest, TheFlagTransformRewritesEachValueAsItIsRead) {
  CLI::App app;
  std::string dir, program = "python3";
  std::vector<std::string> inputs;
  app.add_option("--data-dir", dir)->transform(PathFlag());
  app.add_option("--python", program)->transform(PathFlag(PathKind::kProgram));
  app.add_option("inputs", inputs)->transform(PathFlag());
  std::vector<std::string> argv = {"prog", "--data-dir", "demo", "a.txt", "/b.txt", "-"};
  std::vector<const char*> raw;
  for (const std::string& a : argv) raw.push_back(a.c_str());
  app.parse(int(raw.size()), raw.data());
  EXPECT_EQ(dir, In("demo"));
  EXPECT_EQ(program, "python3") << "an unparsed default is left alone";
  EXPECT_EQ(inputs, (std::vector<std::string>{In("a.txt"), "/b.txt", "-"}));
}

}  // namespace
}  // namespace ablate
