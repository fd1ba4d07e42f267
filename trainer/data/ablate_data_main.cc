// ablate-data: make and check token shards.
//   ablate-data encode INPUT... --out DIR [--val-fraction F] [--shard-tokens N]
//                      [--doc-separator LINE]      (rules in corpus_encoder.h)
//   ablate-data inspect SHARD... [--json] [--bos auto|N] [--vocab V] [--top K]
//   ablate-data fetch DATASET --shards N --dest DIR [--base-url URL] [--retries R]
//                     [--backoff-ms MS] [--json]   (rules in shard_fetcher.h)
//   ablate-data verify DIR [--checksums] [--json]
// Exit codes: 0 ok, 2 usage, 3 bad input (the message names the file and byte offset),
// 4 a shard could not be fetched (the message names the shard and the cause).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/cli_path_flag.h"
#include "trainer/data/corpus_encoder.h"
#include "trainer/data/fetch_command.h"
#include "trainer/data/shard_reader.h"
#include "trainer/data/token_stats.h"

namespace ablate {
namespace {

using J = nlohmann::json;
constexpr int kExitUsage = 2;
constexpr int kExitBadInput = 3;

struct InspectFlags {
  std::vector<std::string> shards;
  bool json = false;
  std::string bos = "auto";
  int64_t vocab = 0;
  int top = 10;
};

int Fail(const std::string& message, int code) {
  std::cerr << "ablate-data: " << message << "\n";
  return code;
}

int RunEncode(const EncodeOptions& options) {
  Result<J> manifest = EncodeCorpus(options);
  if (!manifest.ok()) return Fail(manifest.error().message, kExitBadInput);
  const J& m = *manifest;
  std::cerr << "ablate-data: " << m["documents"]["train"] << " train documents ("
            << m["tokens"]["train"] << " tokens), " << m["documents"]["val"]
            << " val documents (" << m["tokens"]["val"] << " tokens), " << m["shards"].size()
            << " shards in " << options.out_dir << "\n";
  return 0;
}

// "auto": 256 for byte-level shards (every token ≤ 256), else GPT-2's <|endoftext|> 50256.
Result<int> ResolveBos(const std::string& flag, const TokenStats& stats) {
  if (flag == "auto") return stats.max_token() <= kByteBosToken ? kByteBosToken : 50256;
  try {
    size_t used = 0;
    int bos = std::stoi(flag, &used);
    if (used == flag.size() && bos >= 0 && bos < 65536) return bos;
  } catch (const std::exception&) {
  }
  return Error{"--bos must be 'auto' or a token id in [0, 65536), got '" + flag + "'", ""};
}

std::string Printable(int token) {
  if (token >= 33 && token < 127) return std::string("'") + static_cast<char>(token) + "'";
  if (token == ' ') return "' '";
  if (token == '\n') return "'\\n'";
  return "";
}

void PrintText(const InspectFlags& f, const J& shards, const TokenStats& stats, int bos) {
  for (const J& s : shards) {
    std::printf("%s: magic %d, version %d, %lld tokens, %lld bytes\n",
                s["path"].get<std::string>().c_str(), s["magic"].get<int>(),
                s["version"].get<int>(), s["tokens"].get<long long>(),
                s["bytes"].get<long long>());
  }
  std::printf("total: %lld tokens, %lld documents (BOS %d), %lld distinct, max token %d\n",
              static_cast<long long>(stats.total()), static_cast<long long>(stats.count(bos)),
              bos, static_cast<long long>(stats.distinct()), stats.max_token());
  std::printf("unigram entropy: %.6f nats/token\n", stats.EntropyNats());
  std::printf("top %d tokens:\n", f.top);
  for (auto [token, count] : stats.Top(f.top)) {
    std::printf("  %6d %-6s %12lld  %6.2f%%\n", token, Printable(token).c_str(),
                static_cast<long long>(count), 100.0 * count / stats.total());
  }
}

J StatsJson(const J& shards, const TokenStats& stats, int bos, int top) {
  J tops = J::array();
  for (auto [token, count] : stats.Top(top)) {
    tops.push_back({{"token", token},
                    {"count", count},
                    {"fraction", static_cast<double>(count) / stats.total()}});
  }
  return {{"shards", shards},
          {"tokens", stats.total()},
          {"documents", stats.count(bos)},
          {"bos_token", bos},
          {"distinct_tokens", stats.distinct()},
          {"max_token", stats.max_token()},
          {"unigram_entropy_nats", stats.EntropyNats()},
          {"top", tops}};
}

int RunInspect(const InspectFlags& f) {
  TokenStats stats;
  J shards = J::array();
  for (const std::string& path : f.shards) {
    Result<ShardHeader> h = ReadShardHeader(path);
    if (!h.ok()) return Fail(h.error().message, kExitBadInput);
    Result<std::vector<uint16_t>> tokens = ReadShardTokens(path, f.vocab);
    if (!tokens.ok()) return Fail(tokens.error().message, kExitBadInput);
    stats.Add(*tokens);
    shards.push_back({{"path", path}, {"magic", h->magic}, {"version", h->version},
                      {"tokens", h->num_tokens}, {"bytes", h->file_bytes}});
  }
  Result<int> bos = ResolveBos(f.bos, stats);
  if (!bos.ok()) return Fail(bos.error().message, kExitUsage);
  if (f.json) {
    std::cout << StatsJson(shards, stats, *bos, f.top).dump(2) << "\n";
  } else {
    PrintText(f, shards, stats, *bos);
  }
  return 0;
}

struct VerifyFlags {
  std::string dir;
  bool checksums = false;
  bool json = false;
};

CLI::App* AddFetch(CLI::App& app, FetchFlags& f) {
  CLI::App* fetch = app.add_subcommand(
      "fetch", "download a published dataset's val shard and first N train shards");
  fetch->add_option("dataset", f.dataset, "dataset name (fineweb10B)")->required();
  fetch->add_option("--shards", f.shards, "train shards to fetch (fineweb10B: 1..103)")
      ->required();
  fetch->add_option("--dest", f.dest,
                    "data directory (a worker's --data-dir); files go to DEST/DATASET")
      ->transform(ablate::PathFlag())
      ->required();
  fetch->add_option("--base-url", f.base_url,
                    "a mirror holding the same files (default: the dataset's Hugging Face "
                    "location); file:// works too");
  fetch->add_option("--retries", f.retries, "further tries per shard after a failure (default 5)");
  fetch->add_option("--backoff-ms", f.backoff_ms,
                    "wait before the first retry; doubles each retry (default 1000)");
  fetch->add_option("--max-backoff-ms", f.max_backoff_ms, "longest wait (default 60000)");
  fetch->add_option("--stall-timeout-s", f.stall_timeout_s,
                    "cut and retry a transfer that receives nothing this long (default 60)");
  fetch->add_flag("--json", f.json, "a summary object on stdout");
  return fetch;
}

CLI::App* AddVerify(CLI::App& app, VerifyFlags& f) {
  CLI::App* verify = app.add_subcommand(
      "verify", "check a dataset directory against its manifest.json (exit 3 if it differs)");
  verify->add_option("dir", f.dir, "dataset directory")->transform(ablate::PathFlag())->required();
  verify->add_flag("--checksums", f.checksums, "also compare every shard's SHA-256 (reads all)");
  verify->add_flag("--json", f.json, "a summary object on stdout");
  return verify;
}

int Main(int argc, char** argv) {
  CLI::App app{"ablate-data: make, fetch, check and inspect token shard datasets"};
  app.require_subcommand(1);
  EncodeOptions enc;
  CLI::App* encode = app.add_subcommand("encode", "text files -> byte-level token shards");
  encode->add_option("inputs", enc.inputs, "text files")->transform(ablate::PathFlag())->required();
  encode->add_option("--out", enc.out_dir, "output directory")
      ->transform(ablate::PathFlag())
      ->required();
  encode->add_option("--val-fraction", enc.val_fraction, "last fraction of documents for val");
  encode->add_option("--shard-tokens", enc.shard_tokens, "tokens per shard (default 1e8)");
  encode->add_option("--doc-separator", enc.doc_separator,
                     "a line equal to this separates documents (default: '%' lines if the "
                     "file has any, else blank lines)");
  InspectFlags insp;
  CLI::App* inspect = app.add_subcommand("inspect", "header, counts and histogram of shards");
  inspect->add_option("shards", insp.shards, "shard files (statistics are over all)")
      ->transform(ablate::PathFlag())
      ->required();
  inspect->add_flag("--json", insp.json, "one JSON object on stdout");
  inspect->add_option("--bos", insp.bos, "document token: auto (256 for byte shards, else "
                                         "50256) or an id");
  inspect->add_option("--vocab", insp.vocab, "fail (exit 3) on a token >= this; 0 = no check");
  inspect->add_option("--top", insp.top, "histogram size (default 10)");
  FetchFlags fetch_flags;
  CLI::App* fetch = AddFetch(app, fetch_flags);
  VerifyFlags verify_flags;
  CLI::App* verify = AddVerify(app, verify_flags);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }
  if (encode->parsed()) return RunEncode(enc);
  if (fetch->parsed()) return RunFetch(fetch_flags);
  if (verify->parsed()) return RunVerify(verify_flags.dir, verify_flags.checksums, verify_flags.json);
  return RunInspect(insp);
}

}  // namespace
}  // namespace ablate

int main(int argc, char** argv) { return ablate::Main(argc, argv); }
