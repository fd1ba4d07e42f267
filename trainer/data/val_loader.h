// The validation stream: the first `val_tokens` tokens of the val shard(s), the same for every
// world size (DESIGN §6.1).
//
// Slicing: the val shards are concatenated in order and the first N = min(val_tokens,
// available − 1) tokens are the evaluated inputs (the +1 is the last target). They form
// K = N / (B·T) micro-batches (a remainder smaller than B·T is not evaluated); batch k is tokens
// [k·B·T, (k+1)·B·T + 1), B rows of T + 1 as in TokenLoader. Rank r of W evaluates batches
// r, r + W, r + 2W, ...; the val loss is the sum of all K batch-mean losses over all ranks / K,
// so every world size (even when W does not divide K) gives the same number.
// Thread safety: one ValLoader per rank.
#ifndef ABLATE_TRAINER_DATA_VAL_LOADER_H_
#define ABLATE_TRAINER_DATA_VAL_LOADER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/config/result.h"

namespace ablate {

struct ValLoaderOptions {
  std::vector<std::string> files;  // val shards in order (see ExpandShardPattern)
  int64_t val_tokens = 0;
  int64_t batch_size = 0;  // B
  int64_t seq_len = 0;     // T
  int rank = 0;
  int world_size = 1;
  int64_t vocab_size = 0;  // tokens must be below it; 0 = no check
};

class ValLoader {
 public:
  // Reads and validates the needed tokens now. Errors: bad shard, fewer than B·T + 1 tokens.
  static Result<ValLoader> Open(ValLoaderOptions options);

  int64_t num_batches() const { return num_batches_; }  // K, over all ranks
  int64_t tokens() const { return num_batches_ * opt_.batch_size * opt_.seq_len; }

  // Writes this rank's next batch (B rows of T + 1) to out; false when this rank has no more
  // (then out is untouched). Reset() starts over for the next evaluation.
  bool NextBatch(int32_t* out);
  void Reset() { next_ = opt_.rank; }

 private:
  ValLoader(ValLoaderOptions options, std::vector<uint16_t> tokens, int64_t num_batches);

  ValLoaderOptions opt_;
  std::vector<uint16_t> tokens_;  // the evaluated prefix plus one
  int64_t num_batches_ = 0;
  int64_t next_ = 0;  // next global batch index for this rank
};

}  // namespace ablate

#endif  // ABLATE_TRAINER_DATA_VAL_LOADER_H_
