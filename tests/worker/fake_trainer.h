// A stand-in for ablate-train written by the tests: a Python script that speaks the same
// JSON-lines events and exit codes, steered by a "fake" object in the config it is given.
//   fake.steps (5), fake.val_every (2), fake.exit (0; 1 = failure, 3 = NaN), fake.hang (false:
//   after the steps, wait for SIGTERM), fake.ignore_term (false), fake.stderr_lines (0),
//   fake.step_sleep (0 s), fake.stderr_line_bytes (0: each stderr line padded to this length),
//   fake.stderr_blocks (0: else one stderr line of that many '█' and an 'x'). It writes pid and env.json (argv, CUDA_VISIBLE_DEVICES) in its cwd.
// With --resume DIR it goes on from the newest ckpt-<steps>.safetensors name in DIR (the file is
// not read), saying so in its start event's resumed_from, as ablate-train does.
#ifndef ABLATE_TESTS_WORKER_FAKE_TRAINER_H_
#define ABLATE_TESTS_WORKER_FAKE_TRAINER_H_

#include <sys/stat.h>

#include <string>

#include "tests/util/subprocess.h"

namespace ablate::worker::testing {

inline constexpr const char* kFakeTrainer = R"PY(#!/usr/bin/python3
import json, os, re, signal, sys, time
args = sys.argv[1:]
cfg = json.load(open(args[args.index("--config") + 1]))
f = cfg.get("fake", {})
untimed = cfg.get("untimed_steps", 0)
stop = False
def on_term(*_):
    global stop
    stop = True
signal.signal(signal.SIGTERM, signal.SIG_IGN if f.get("ignore_term") else on_term)
open("pid", "w").write(str(os.getpid()))
json.dump({"argv": args, "cuda": os.environ.get("CUDA_VISIBLE_DEVICES", "<unset>")},
          open("env.json", "w"))
def emit(**e):
    print(json.dumps(e), flush=True)
def end(status, steps, train_ms, final=None, ttt=None, tstep=None):
    emit(event="end", status=status, final_val_loss=final, time_to_target_ms=ttt,
         target_step=tstep, steps=steps, train_ms=train_ms)
resumed = None
if "--resume" in args:
    d = args[args.index("--resume") + 1]
    done = sorted(int(m.group(1)) for m in
                  (re.fullmatch(r"ckpt-(\d+)\.safetensors", n) for n in os.listdir(d)) if m)
    if done:
        resumed = {"step": done[-1], "path": os.path.join(d, "ckpt-%08d.safetensors" % done[-1]),
                   "train_ms": 0.0}
emit(event="start", config=cfg, backend="cpu", resumed_from=resumed)
for i in range(f.get("stderr_lines", 0)):
    line = "stderr line %d" % i
    if f.get("stderr_line_bytes"):
        line = (line + " ").ljust(f["stderr_line_bytes"], ".")
    print(line, file=sys.stderr)
if f.get("stderr_blocks"):
    sys.stderr.buffer.write(("\u2588" * f["stderr_blocks"] + "x\n").encode("utf-8"))
sys.stderr.flush()
steps, val_every, train_ms = f.get("steps", 5), f.get("val_every", 2), 0.0
for s in range(resumed["step"] if resumed else 0, steps):
    if stop:
        end("cancelled", s, train_ms); sys.exit(0)
    if val_every and s % val_every == 0:
        emit(event="val", step=s, val_loss=5.0 - 0.1 * s, train_ms=train_ms)
    time.sleep(f.get("step_sleep", 0))
    if s >= untimed:
        train_ms += 10.0
    emit(event="step", step=s + 1, train_loss=5.0 - 0.1 * s, lr=1.0, momentum=0.9, step_ms=10.0,
         train_ms=train_ms, tokens=(s + 1) * 64)
while f.get("hang") and not stop:
    time.sleep(0.02)
if stop:
    end("cancelled", steps, train_ms); sys.exit(0)
code = f.get("exit", 0)
if code == 3:
    emit(event="error", message="train loss is not finite at step %d" % steps)
    end("failed", steps, train_ms); sys.exit(3)
if code != 0:
    emit(event="error", message="injected failure")
    end("failed", steps, train_ms); sys.exit(code)
emit(event="val", step=steps, val_loss=4.0, train_ms=train_ms)
end("ok", steps, train_ms, final=4.0, ttt=train_ms, tstep=steps)
)PY";

// Writes the fake trainer into `dir` and returns its path.
inline std::string WriteFakeTrainer(const std::string& dir) {
  std::string path = dir + "/fake-train";
  ablate::testing::WriteFile(path, kFakeTrainer);
  ::chmod(path.c_str(), 0755);
  return path;
}

}  // namespace ablate::worker::testing

#endif  // ABLATE_TESTS_WORKER_FAKE_TRAINER_H_
