// SharedLibrary (trainer/sys): the run-time loading behind cuBLASLt and NCCL, checked on the C
// math library, which every Linux machine has.
#include "trainer/sys/shared_library.h"

#include <gtest/gtest.h>

#include <cmath>

namespace ablate {
namespace {

TEST(SharedLibrary, OpensTheFirstCandidateThatLoadsAndResolvesTypedSymbols) {
  Result<std::unique_ptr<SharedLibrary>> lib = SharedLibrary::OpenFirst(
      {"libablate-no-such-library.so.9", "libm.so.6"}, "the C math library", "unused");
  ASSERT_TRUE(lib.ok()) << lib.error().message;
  EXPECT_EQ((*lib)->path(), "libm.so.6");
  double (*cos_fn)(double) = nullptr;
  ASSERT_TRUE((*lib)->Resolve("cos", &cos_fn).ok());
  ASSERT_NE(cos_fn, nullptr);
  EXPECT_DOUBLE_EQ(cos_fn(0.5), std::cos(0.5));
}

TEST(SharedLibrary, AMissingSymbolIsNamedWithItsLibrary) {
  Result<std::unique_ptr<SharedLibrary>> lib =
      SharedLibrary::OpenFirst({"libm.so.6"}, "the C math library", "unused");
  ASSERT_TRUE(lib.ok()) << lib.error().message;
  void (*fn)() = nullptr;
  Status s = (*lib)->Resolve("ablate_no_such_symbol", &fn);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "libm.so.6 has no symbol ablate_no_such_symbol");
  EXPECT_EQ(fn, nullptr);
}

TEST(SharedLibrary, WhenNothingLoadsTheErrorListsEveryCandidateAndTheHint) {
  Result<std::unique_ptr<SharedLibrary>> lib = SharedLibrary::OpenFirst(
      LibraryCandidates("libablate-missing.so.1", "/nonexistent-dir"), "cuBLASLt",
      "put the CUDA toolkit's lib64 on LD_LIBRARY_PATH");
  ASSERT_FALSE(lib.ok());
  const std::string& m = lib.error().message;
  EXPECT_EQ(m.rfind("cannot load cuBLASLt (", 0), 0u) << m;
  EXPECT_NE(m.find("libablate-missing.so.1"), std::string::npos) << m;
  EXPECT_NE(m.find("/nonexistent-dir/libablate-missing.so.1"), std::string::npos) << m;
  EXPECT_NE(m.find("); put the CUDA toolkit's lib64 on LD_LIBRARY_PATH"), std::string::npos) << m;
}

TEST(SharedLibrary, CandidatesAreTheSonameThenTheDirectory) {
  EXPECT_EQ(LibraryCandidates("libx.so.2", ""), std::vector<std::string>{"libx.so.2"});
  EXPECT_EQ(LibraryCandidates("libx.so.2", "/opt/x/lib"),
            (std::vector<std::string>{"libx.so.2", "/opt/x/lib/libx.so.2"}));
}

}  // namespace
}  // namespace ablate
