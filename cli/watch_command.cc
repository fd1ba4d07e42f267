// `ablate watch ID`: a sweep followed live until it finishes; Ctrl-C stops watching, not the
// sweep.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <sstream>
#include <thread>

#include "cli/command_text.h"
#include "cli/commands.h"
#include "cli/table.h"
#include "common/clock.h"

namespace ablate {

std::atomic<bool> g_interrupted{false};

int WatchCommand(Client& c, int64_t id) {
  g_interrupted = false;
  auto ctx = c.Context(/*streaming=*/true);
  grpc::ClientContext* raw = ctx.get();
  struct sigaction sa {};
  sa.sa_handler = [](int) { g_interrupted = true; };
  sigaction(SIGINT, &sa, nullptr);
  std::atomic<bool> done{false};
  std::thread canceller([&] {
    while (!done) {
      if (g_interrupted) {
        raw->TryCancel();
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  v1::WatchSweepRequest req;
  req.set_id(id);
  auto reader = c.stub().WatchSweep(raw, req);
  v1::SweepUpdate u;
  v1::SweepState last = v1::SWEEP_STATE_UNSPECIFIED;
  std::string last_line;
  while (reader->Read(&u)) {
    last = u.sweep().state();
    if (c.json()) {
      std::cout << ToJson(u) << std::endl;
      continue;
    }
    const v1::RunCounts& n = u.sweep().counts();
    std::ostringstream line;
    line << "sweep " << id << " " << StateName(last) << ": " << Progress(n) << " done, "
         << n.running() + n.assigned() << " running, " << n.queued() << " queued, " << n.failed()
         << " failed";
    if (line.str() != last_line) {  // run lines below say what changed; counts only when moved
      last_line = line.str();
      std::cout << "[" << FormatTimestampMs(SystemClock::Get().WallMs()) << "] " << last_line << "\n";
    }
    for (const v1::Run& r : u.runs()) {
      std::cout << "  run " << r.id() << " " << r.variant_name() << " seed " << r.seed() << ": "
                << StateName(r.state());
      if (r.summary().has_final_val_loss()) {
        std::cout << ", val loss " << FormatDouble(r.summary().final_val_loss(), 4);
      }
      std::cout << "\n";
    }
    std::cout.flush();
  }
  grpc::Status s = reader->Finish();
  done = true;
  canceller.join();
  signal(SIGINT, SIG_DFL);
  if (g_interrupted) {
    std::cerr << "ablate: stopped watching (the sweep goes on)\n";
    return kExitInterrupted;
  }
  if (!s.ok()) return c.Fail(s, "watching sweep " + std::to_string(id));
  return last == v1::SWEEP_SUCCEEDED ? kExitOk : kExitFailure;
}

}  // namespace ablate
