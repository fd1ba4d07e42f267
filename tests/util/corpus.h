// English-like text for tests that need a real dataset made by `ablate-data encode`: documents of
// 80 words from a small vocabulary, separated by blank lines. Header-only.
#ifndef ABLATE_TESTS_UTIL_CORPUS_H_
#define ABLATE_TESTS_UTIL_CORPUS_H_

#include <string>

namespace ablate::testing {

inline std::string WordCorpus(int documents) {
  const char* words[] = {"the",  "model", "learns", "a",  "shard", "of",   "text", "and",
                         "then", "it",    "runs",   "on", "every", "node", "with", "data"};
  std::string text;
  for (int doc = 0; doc < documents; ++doc) {
    for (int w = 0; w < 80; ++w) text += std::string(words[(doc * 7 + w * 3) % 16]) + " ";
    text += "\n\n";
  }
  return text;
}

}  // namespace ablate::testing

#endif  // ABLATE_TESTS_UTIL_CORPUS_H_
