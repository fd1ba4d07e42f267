// The training data stream: shards read in order, one global batch per optimizer step, each rank
// its own micro-batches of that batch.
//
// Slicing (identical for every world size, so N ranks see exactly the tokens 1 rank sees):
//   * The shards are concatenated in the order given; reading starts at token 0 of the first.
//   * A global batch is `batch_tokens + 1` consecutive tokens of ONE shard starting at `base`. It
//     is cut into G = batch_tokens / (B·T) chunks; chunk c is tokens [base + c·B·T,
//     base + (c+1)·B·T + 1), i.e. B·T + 1 tokens, viewed as B rows of T + 1 (row b = tokens
//     base + c·B·T + b·T ... + T; inputs are row[0:T], targets row[1:T+1]).
//   * Rank r of W does micro-steps m = 0 .. G/W − 1 and reads chunk c = m·W + r.
//   * After a batch, base += batch_tokens. If the next batch (batch_tokens + 1 tokens) does not
//     fit in the current shard, the rest of that shard is skipped and the batch starts at token 0
//     of the next shard; after the last shard the stream wraps to the first (a new epoch). Shards
//     shorter than batch_tokens + 1 are skipped; if all are, Open fails.
// Thread safety: one TokenLoader per rank; not shared between threads.
#ifndef ABLATE_TRAINER_DATA_TOKEN_LOADER_H_
#define ABLATE_TRAINER_DATA_TOKEN_LOADER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/config/result.h"

namespace ablate {

struct TokenLoaderOptions {
  std::vector<std::string> files;  // shard paths in reading order (see ExpandShardPattern)
  int64_t batch_tokens = 0;        // global tokens per optimizer step
  int64_t batch_size = 0;          // B, sequences per micro-batch
  int64_t seq_len = 0;             // T
  int rank = 0;
  int world_size = 1;
  int64_t vocab_size = 0;  // tokens must be below it; 0 = no check
};

class TokenLoader {
 public:
  // Validates the options (batch_tokens a multiple of B·T·world_size) and every shard's header.
  static Result<TokenLoader> Open(TokenLoaderOptions options);

  // Micro-steps per optimizer step for this rank: batch_tokens / (B·T·world_size).
  int64_t grad_accum_steps() const { return accum_; }

  // Writes this rank's next micro-batch, B rows of T + 1 tokens, to out (B·(T+1) int32). Call
  // grad_accum_steps() times per optimizer step. Errors: a shard that fails validation when it
  // is loaded (bad token, changed on disk); the loader is then unusable.
  Status NextBatch(int32_t* out);

  // Back to the state right after Open (first shard, first batch).
  void Reset();

  // Where the stream stands between two optimizer steps (a checkpoint's data position).
  struct Position {
    int shard = -1;
    int64_t base = 0;
    bool started = false;
  };
  // REQUIRES: at a step boundary (every micro-batch of the last step read).
  Position position() const { return {shard_, base_, started_}; }
  // Continues from `p` (loading its shard). Errors: a position these shards do not have.
  Status Seek(const Position& p);

  // Where the current global batch starts: shard index and token offset within it.
  int shard_index() const { return shard_; }
  int64_t batch_start() const { return base_; }

 private:
  explicit TokenLoader(TokenLoaderOptions options, std::vector<int64_t> sizes);
  Status StartBatch();
  Status LoadShard(int index);

  TokenLoaderOptions opt_;
  std::vector<int64_t> sizes_;  // tokens per shard
  int64_t accum_ = 0;
  int shard_ = -1;                 // index of the shard in tokens_
  std::vector<uint16_t> tokens_;   // the whole current shard
  int64_t base_ = 0;               // start of the current global batch in tokens_
  int64_t micro_ = 0;              // next micro-step within the batch
  bool started_ = false;           // base_ names a batch that has been begun
};

}  // namespace ablate

#endif  // ABLATE_TRAINER_DATA_TOKEN_LOADER_H_
