// Fuzz target: a live page's request as the event-loop server reads it (server/http/
// live_request.h): the request line, headers, percent escapes and the scope of the path.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "server/http/live_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  (void)ablate::IsLiveRequest(bytes);
  absl::StatusOr<ablate::LiveRequest> request = ablate::ParseLiveRequest(bytes);
  if (request.ok()) ablate::LiveScopeOf(*request).status().IgnoreError();
  return 0;
}
