// Validation batches: the evaluated prefix is small (the records use 10,485,760 tokens = 20 MB),
// so it is read once and kept.
#include "trainer/data/val_loader.h"

#include <algorithm>
#include <utility>

#include "trainer/data/shard_reader.h"

namespace ablate {

Result<ValLoader> ValLoader::Open(ValLoaderOptions o) {
  if (o.files.empty()) return Error{"no validation shards given", ""};
  if (o.batch_size <= 0 || o.seq_len <= 0 || o.val_tokens <= 0) {
    return Error{"val_tokens, batch size and seq_len must be positive", ""};
  }
  if (o.world_size < 1 || o.rank < 0 || o.rank >= o.world_size) {
    return Error{"rank " + std::to_string(o.rank) + " is outside world size " +
                     std::to_string(o.world_size),
                 ""};
  }
  const int64_t bt = o.batch_size * o.seq_len;
  int64_t want = o.val_tokens + 1;
  std::vector<uint16_t> tokens;
  for (const std::string& f : o.files) {
    if (static_cast<int64_t>(tokens.size()) >= want) break;
    Result<ShardHeader> h = ReadShardHeader(f);
    if (!h.ok()) return h.error();
    int64_t take = std::min(h->num_tokens, want - static_cast<int64_t>(tokens.size()));
    Result<std::vector<uint16_t>> part = ReadShardRange(f, 0, take, o.vocab_size);
    if (!part.ok()) return part.error();
    tokens.insert(tokens.end(), part->begin(), part->end());
  }
  int64_t inputs = std::min(o.val_tokens, static_cast<int64_t>(tokens.size()) - 1);
  int64_t k = inputs / bt;
  if (k == 0) {
    return Error{"validation needs at least B·T + 1 = " + std::to_string(bt + 1) +
                     " tokens; the val shards give " + std::to_string(tokens.size()) +
                     " (val_tokens " + std::to_string(o.val_tokens) + ")",
                 "val_tokens"};
  }
  tokens.resize(static_cast<size_t>(k * bt + 1));
  return ValLoader(std::move(o), std::move(tokens), k);
}

ValLoader::ValLoader(ValLoaderOptions options, std::vector<uint16_t> tokens, int64_t num_batches)
    : opt_(std::move(options)), tokens_(std::move(tokens)), num_batches_(num_batches) {
  next_ = opt_.rank;
}

bool ValLoader::NextBatch(int32_t* out) {
  if (next_ >= num_batches_) return false;
  const int64_t B = opt_.batch_size, T = opt_.seq_len;
  const uint16_t* src = tokens_.data() + next_ * B * T;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t <= T; ++t) out[b * (T + 1) + t] = src[b * T + t];
  }
  next_ += opt_.world_size;
  return true;
}

}  // namespace ablate
