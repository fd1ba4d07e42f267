// Training batches. The whole current shard is held in memory (a 10^8-token shard is 200 MB),
// as the speedrun's loader does; the next shard is read when the stream reaches it.
#include "trainer/data/token_loader.h"

#include <utility>

#include "trainer/data/shard_reader.h"

namespace ablate {

Result<TokenLoader> TokenLoader::Open(TokenLoaderOptions o) {
  if (o.files.empty()) return Error{"no training shards given", ""};
  if (o.batch_size <= 0 || o.seq_len <= 0 || o.batch_tokens <= 0) {
    return Error{"batch_tokens, batch size and seq_len must be positive", ""};
  }
  if (o.world_size < 1 || o.rank < 0 || o.rank >= o.world_size) {
    return Error{"rank " + std::to_string(o.rank) + " is outside world size " +
                     std::to_string(o.world_size),
                 ""};
  }
  int64_t per_step = o.batch_size * o.seq_len * o.world_size;
  if (o.batch_tokens % per_step != 0) {
    return Error{"batch_tokens " + std::to_string(o.batch_tokens) +
                     " is not a multiple of B·T·world_size = " + std::to_string(per_step),
                 "batch_tokens"};
  }
  std::vector<int64_t> sizes;
  bool any_fits = false;
  for (const std::string& f : o.files) {
    Result<ShardHeader> h = ReadShardHeader(f);
    if (!h.ok()) return h.error();
    sizes.push_back(h->num_tokens);
    any_fits = any_fits || h->num_tokens >= o.batch_tokens + 1;
  }
  if (!any_fits) {
    return Error{"no training shard holds one global batch (" +
                     std::to_string(o.batch_tokens + 1) + " tokens); first shard " + o.files[0] +
                     " has " + std::to_string(sizes[0]),
                 "batch_tokens"};
  }
  return TokenLoader(std::move(o), std::move(sizes));
}

TokenLoader::TokenLoader(TokenLoaderOptions options, std::vector<int64_t> sizes)
    : opt_(std::move(options)), sizes_(std::move(sizes)) {
  accum_ = opt_.batch_tokens / (opt_.batch_size * opt_.seq_len * opt_.world_size);
}

void TokenLoader::Reset() {
  started_ = false;
  base_ = 0;
  micro_ = 0;
}

Status TokenLoader::LoadShard(int index) {
  if (index == shard_) return Status();
  Result<std::vector<uint16_t>> t = ReadShardTokens(opt_.files[index], opt_.vocab_size);
  if (!t.ok()) return t.error();
  tokens_ = std::move(t).value();
  shard_ = index;
  return Status();
}

// Picks the shard and offset of the global batch that begins now.
Status TokenLoader::StartBatch() {
  const int64_t need = opt_.batch_tokens + 1;
  const int n = static_cast<int>(sizes_.size());
  int next;
  if (!started_) {
    next = 0;
    base_ = 0;
  } else if (base_ + need <= sizes_[shard_]) {
    return Status();
  } else {
    next = (shard_ + 1) % n;
    base_ = 0;
  }
  while (sizes_[next] < need) next = (next + 1) % n;  // Open checked that one fits.
  started_ = true;
  return LoadShard(next);
}

Status TokenLoader::NextBatch(int32_t* out) {
  if (micro_ == 0) {
    Status s = StartBatch();
    if (!s.ok()) return s;
  }
  const int64_t B = opt_.batch_size, T = opt_.seq_len;
  const int64_t chunk = micro_ * opt_.world_size + opt_.rank;
  const uint16_t* src = tokens_.data() + base_ + chunk * B * T;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t <= T; ++t) out[b * (T + 1) + t] = src[b * T + t];
  }
  if (++micro_ == accum_) {
    micro_ = 0;
    base_ += opt_.batch_tokens;
  }
  return Status();
}

Status TokenLoader::Seek(const Position& p) {
  if (!p.started) {
    Reset();
    return Status();
  }
  if (p.shard < 0 || p.shard >= int(sizes_.size()) || p.base < 0 || p.base > sizes_[p.shard]) {
    return Error{"data position (shard " + std::to_string(p.shard) + ", token " +
                     std::to_string(p.base) + ") is not in these " +
                     std::to_string(sizes_.size()) + " training shards",
                 "resume"};
  }
  Status s = LoadShard(p.shard);
  if (!s.ok()) return s;
  base_ = p.base;
  started_ = true;
  micro_ = 0;
  return Status();
}

}  // namespace ablate
