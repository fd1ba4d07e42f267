// `ablate cancel ID`: a sweep's unfinished runs cancelled.
#include <iostream>
#include <optional>

#include "cli/commands.h"

namespace ablate {

int CancelCommand(Client& c, int64_t id) {
  v1::CancelSweepRequest req;
  req.set_id(id);
  v1::Sweep sw;
  if (std::optional<int> done =
          c.Call(&Client::Stub::CancelSweep, req, &sw, "cancel of sweep " + std::to_string(id))) {
    return *done;
  }
  std::cout << "cancelled sweep " << sw.id() << " '" << sw.name()
            << "': " << sw.counts().cancelled() << " runs cancelled, " << sw.counts().succeeded()
            << " had already succeeded\n";
  return kExitOk;
}

}  // namespace ablate
