#!/usr/bin/env bash
# Learning on real text: r9-shortcuts at tiny scale, trained on Debian's fortunes (byte-level
# tokens) for 120 steps (~40 s on 2 cores), must end with a validation loss at least 0.5 nats
# under the corpus's unigram entropy (the best context-free model). Measured 2026-11-21: entropy
# 3.279 nats, val loss 3.044 after 50 steps, 2.605 after 100, 2.418 after 150.
#   learning_test.sh ABLATE_TRAIN ABLATE_DATA REPO_ROOT
# Exit 77 (skipped) when fortunes-min is not installed.
set -euo pipefail
train=$1 data=$2 repo=$3
if [[ ! -d ${FORTUNE_DIR:-/usr/share/games/fortunes} ]]; then
  echo "fortunes-min is not installed; skipping" >&2
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
entropy=$(ABLATE_DATA=$data bash "$repo/tests/data/make_debian_text.sh" "$work/data" |
          sed -n 's/^unigram_entropy_nats=//p')
"$train" --preset r9-shortcuts --scale tiny --train "$work/data/train_*.bin" \
    --val "$work/data/val_*.bin" --threads 2 --max-steps 120 --set val_every=0 > "$work/events"
final=$(grep '"event":"end"' "$work/events" | sed -n 's/.*"final_val_loss":\([0-9.]*\).*/\1/p')
echo "unigram entropy $entropy nats, final val loss $final nats"
awk -v f="$final" -v e="$entropy" 'BEGIN { exit !(f != "" && f < e - 0.5) }'
