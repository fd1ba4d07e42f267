// Text → token shards with the byte-level tokenizer of `ablate-data encode`: bytes 0..255 are
// tokens 0..255, and token 256 (BOS) opens every document, as <|endoftext|> does in FineWeb.
//
// Documents. Each input file is split on separator lines (a line's text without its "\n" or
// "\r\n"):
//   * `doc_separator` set: a line equal to it separates documents;
//   * otherwise, if the file has a line that is exactly "%" (fortune(6) files): "%" lines;
//   * otherwise: blank lines (empty or only spaces/tabs), i.e. paragraphs.
// A document keeps its lines with their newlines; separator lines are dropped, and documents
// that are empty or only whitespace are skipped. Files are taken in the order given.
//
// Splits. The last round(val_fraction · D) documents (at least 1 when val_fraction > 0, and
// never all of them) form the validation set; the rest, in order, the training set. Each split
// is one token stream cut every `shard_tokens` tokens (a cut may fall inside a document) into
// `train_000000.bin`, `train_000001.bin`, ... and `val_000000.bin`, ... in the output
// directory, which also receives `manifest.json` (see EncodeCorpus).
#ifndef ABLATE_TRAINER_DATA_CORPUS_ENCODER_H_
#define ABLATE_TRAINER_DATA_CORPUS_ENCODER_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "trainer/config/result.h"

namespace ablate {

inline constexpr uint16_t kByteBosToken = 256;
inline constexpr int64_t kByteVocabSize = 257;

// Splits one file's text into documents by the rule above (`separator` empty = automatic).
std::vector<std::string> SplitDocuments(std::string_view text, const std::string& separator);

// BOS followed by the document's bytes.
std::vector<uint16_t> EncodeDocument(std::string_view doc);

struct EncodeOptions {
  std::vector<std::string> inputs;  // text files
  std::string out_dir;              // created if missing
  double val_fraction = 0.1;        // in [0, 1)
  int64_t shard_tokens = 100'000'000;
  std::string doc_separator;  // empty = automatic
};

// Encodes the inputs and writes the shards and manifest.json (dataset_manifest.h, with the
// SHA-256 of every shard). Returns the manifest: the common fields plus
// {"name": <out_dir's name>, "source": "ablate-data encode", "tokenizer": "bytes",
//  "vocab_size": 257, "bos_token": 256, "val_fraction", "doc_separator",
//  "inputs": [{"path", "bytes", "documents"}], "documents": {"train", "val"}}.
// Errors: unreadable input (named), no documents, too few documents for a val split, bad
// options, unwritable output.
Result<nlohmann::json> EncodeCorpus(const EncodeOptions& options);

}  // namespace ablate

#endif  // ABLATE_TRAINER_DATA_CORPUS_ENCODER_H_
