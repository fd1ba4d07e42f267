// The --gpus argument of ablate-train: device indices as a list of numbers and ranges,
// "0-7", "0,2,4", "0-3,6".
#ifndef ABLATE_TRAINER_TOOLS_GPU_LIST_H_
#define ABLATE_TRAINER_TOOLS_GPU_LIST_H_

#include <string_view>
#include <vector>

#include "trainer/config/result.h"

namespace ablate {

// Indices in the order written. Errors: an empty list or item, a non-number, a range whose end
// is below its start, an index written twice.
Result<std::vector<int>> ParseGpuList(std::string_view text);

}  // namespace ablate

#endif  // ABLATE_TRAINER_TOOLS_GPU_LIST_H_
