"""Optional helper for training scripts run by ablate (issue 14): prints ablate's JSON-lines
events, the ones ablate-train prints, so that any script can report its curve exactly.

    import ablate_events as ev
    ev.step(step, train_loss=loss, train_ms=train_time_ms, lr=lr, tokens=tokens)
    ev.val(step, val_loss=val)
    ev.end(final_val_loss=val, steps=step, train_ms=train_time_ms)

Scripts that print modded-nanogpt's own lines (`step:N/M val_loss:X train_time:Tms ...`) need
nothing: ablate reads those too. Copy this file next to your script; it has no dependencies.
Only rank 0 should print (the helper does nothing on other ranks under torchrun).
"""
import json
import math
import os
import sys

_RANK = int(os.environ.get("RANK", "0"))


def _emit(event, **fields):
    if _RANK != 0:
        return
    body = {"event": event}
    for key, value in fields.items():
        if value is None:
            continue
        if isinstance(value, float) and not math.isfinite(value):
            value = str(value)  # JSON has no NaN; ablate reads a non-number as missing
        body[key] = value
    sys.stdout.write(json.dumps(body) + "\n")
    sys.stdout.flush()


def step(step, train_loss=None, train_ms=None, step_ms=None, lr=None, tokens=None):
    """One training step. train_ms: cumulative timed training milliseconds."""
    _emit("step", step=int(step), train_loss=train_loss, train_ms=train_ms, step_ms=step_ms,
          lr=lr, tokens=tokens)


def val(step, val_loss):
    """One evaluation after `step` steps; time to target uses the last step's train_ms."""
    _emit("val", step=int(step), val_loss=val_loss)


def end(final_val_loss=None, steps=None, train_ms=None, status="ok"):
    """Optional: the run's own summary (its fields win over what the lines said)."""
    _emit("end", status=status, final_val_loss=final_val_loss, steps=steps, train_ms=train_ms)


def error(message):
    """A failure in words; shown with the run if the script then exits non-zero."""
    _emit("error", message=str(message))
