// Fuzz target: the dashboard API's path ids and query parameters (server/http/request_params.h).
// Each parser gets the whole input as the parameter text.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "server/http/request_params.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  ablate::ParseId("id", text).status().IgnoreError();
  ablate::ParseIntParam("limit", text, 1, 1000, 50).status().IgnoreError();
  ablate::ParseMaxPoints(text).status().IgnoreError();
  ablate::ParseRunStateParam(text).status().IgnoreError();
  ablate::ParseSweepStateParam(text).status().IgnoreError();
  return 0;
}
