// Corpus replay: runs a fuzz target's LLVMFuzzerTestOneInput over every file of the folders (or
// files) given, with the normal compiler and no libFuzzer. ctest runs it on every CI run, so each
// input that once crashed, hung or tripped a sanitizer stays a regression case.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<std::filesystem::path> Inputs(int argc, char** argv) {
  std::vector<std::filesystem::path> files;
  for (int i = 1; i < argc; ++i) {
    std::filesystem::path p(argv[i]);
    if (!std::filesystem::is_directory(p)) {
      files.push_back(p);
      continue;
    }
    for (const auto& e : std::filesystem::recursive_directory_iterator(p)) {
      if (e.is_regular_file()) files.push_back(e.path());
    }
  }
  return files;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::filesystem::path> files = Inputs(argc, argv);
  if (files.empty()) {
    std::cerr << "no corpus inputs under the paths given\n";
    return 1;
  }
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::cout << "replayed " << files.size() << " inputs\n";
  return 0;
}
