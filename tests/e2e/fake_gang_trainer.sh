#!/bin/bash
# A stand-in for ablate-train in multi-node runs on a machine without GPUs or NCCL. It speaks the
# trainer's side of the worker protocol: the command line (--nnodes, --node-rank, --nccl-id-file;
# other arguments ignored), the NCCL id file (node rank 0 writes 256 hex digits atomically; the
# others wait for the file their worker writes from the relayed id) and the JSON-lines events
# (start, step, val, end, error) with ablate-train's exit codes.
#
# What it did goes to fake-trainer.log in its working directory (the run folder), one fact per
# line: "args ...", "id HEX" (made on node 0, received on the others), "sigterm".
# Node 0's steps take 10 ms, node 1's 20 ms, and so on, so that a test can tell whose points
# were stored. Eight steps, validation at steps 0, 4 and 8.
#
# Failure mode: when $FAKE_GANG_FAIL_FILE names an existing file holding a node rank, that node
# fails at step 2 (error event, end failed, exit 1), and the other nodes keep stepping as if
# waiting for it in a collective until SIGTERM (or 30 s, then they fail too).
if [ "$1" = "--version" ]; then
  echo "ablate-train fake-gang (tests/e2e)"
  exit 0
fi
if [ "$1" = "--libraries" ]; then  # the worker's preflight (worker/preflight.h)
  echo '{"backends":["cpu","cuda"],"cuda":{"built":"13.0","driver":"13.0"},"cublaslt":{"found":true,"path":"fake"},"nccl":{"found":true,"path":"fake","version":"2.28.3"}}'
  exit 0
fi

nnodes=1 rank=0 id_file="" config="" backend="" gpus=""
while [ $# -gt 0 ]; do
  case "$1" in
    --nnodes) nnodes=$2; shift 2 ;;
    --node-rank) rank=$2; shift 2 ;;
    --nccl-id-file) id_file=$2; shift 2 ;;
    --config) config=$2; shift 2 ;;
    --backend) backend=$2; shift 2 ;;
    --gpus) gpus=$2; shift 2 ;;
    *) shift ;;
  esac
done

log="$PWD/fake-trainer.log"
record() { echo "$*" >> "$log"; }
emit() { printf '%s\n' "$1"; }
end_event() {  # status final_val_loss steps
  emit "{\"event\":\"end\",\"status\":\"$1\",\"final_val_loss\":$2,\"time_to_target_ms\":null,$(
    )\"target_step\":null,\"steps\":$3,\"train_ms\":$(($3 * step_ms))}"
}
fail() {  # code message
  emit "{\"event\":\"error\",\"message\":\"$2\"}"
  echo "ablate-train: $2" >&2
  exit "$1"
}

stop=0
trap 'record sigterm; stop=1' TERM INT
record "args node_rank=$rank nnodes=$nnodes id_file=$id_file backend=$backend gpus=$gpus" \
  "visible=$CUDA_VISIBLE_DEVICES"

if [ "$nnodes" -gt 1 ]; then
  [ -n "$id_file" ] || fail 2 "--nnodes $nnodes needs --nccl-id-file"
  if [ "$rank" -eq 0 ]; then
    id=$(od -An -v -tx1 -N128 /dev/urandom | tr -d ' \n')
    printf '%s\n' "$id" > "$id_file.tmp" && mv "$id_file.tmp" "$id_file" ||
      fail 1 "cannot write the NCCL id to $id_file"
  else
    for _ in $(seq 200); do
      [ -e "$id_file" ] && break
      sleep 0.1
    done
    [ -e "$id_file" ] || fail 1 "NCCL id file $id_file does not exist (waited 20 s)"
    id=$(tr -d ' \n' < "$id_file")
    [[ $id =~ ^[0-9a-f]{256}$ ]] || fail 2 "$id_file: not an NCCL id"
  fi
  record "id $id"
fi

fail_rank=-1
if [ -n "$FAKE_GANG_FAIL_FILE" ] && [ -e "$FAKE_GANG_FAIL_FILE" ]; then
  fail_rank=$(cat "$FAKE_GANG_FAIL_FILE")
fi
steps=8
[ "$fail_rank" -ge 0 ] && [ "$fail_rank" -ne "$rank" ] && steps=600
step_ms=$((10 * (rank + 1)))

emit "{\"event\":\"start\",\"config\":$(tr -d '\n' < "$config"),\"backend\":\"cuda\",$(
  )\"nnodes\":$nnodes,\"node_rank\":$rank}"
emit '{"event":"val","step":0,"val_loss":4.9,"train_ms":0}'
done_steps=0
for step in $(seq "$steps"); do
  sleep 0.05
  if [ "$stop" -eq 1 ]; then
    end_event cancelled null "$done_steps"
    exit 0
  fi
  if [ "$rank" -eq "$fail_rank" ] && [ "$step" -eq 2 ]; then
    message="fake trainer: node $rank lost its GPU at step $step"
    emit "{\"event\":\"error\",\"message\":\"$message\"}"
    end_event failed null "$done_steps"
    echo "ablate-train: $message" >&2
    exit 1
  fi
  done_steps=$step
  emit "{\"event\":\"step\",\"step\":$step,\"train_loss\":5.$((9 - step % 10)),\"lr\":1.0,$(
    )\"step_ms\":$step_ms,\"train_ms\":$((step * step_ms)),\"tokens\":$((step * 1024))}"
  if [ $((step % 4)) -eq 0 ] && [ "$step" -le 8 ]; then
    emit "{\"event\":\"val\",\"step\":$step,\"val_loss\":4.$((9 - step)),$(
      )\"train_ms\":$((step * step_ms))}"
  fi
done
if [ "$steps" -ne 8 ]; then
  fail 1 "fake trainer: node $fail_rank never came back (30 s)"
fi
end_event ok 4.1 8
exit 0
