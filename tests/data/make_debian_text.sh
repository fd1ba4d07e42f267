#!/usr/bin/env bash
# Encodes the English text of Debian's fortunes-min package (/usr/share/games/fortunes) into
# byte-level token shards for the trainer's learning test, and prints the corpus's byte-level
# unigram entropy: the loss of the best model that ignores context, which a trained model must
# beat by a wide margin.
#
#   tests/data/make_debian_text.sh OUTDIR
#
# Needs: fortunes-min (apt-get install fortunes-min) and an ablate-data binary, found as
# $ABLATE_DATA, on PATH, or in build*/ under the repository root. Writes OUTDIR/train_*.bin,
# OUTDIR/val_000000.bin, OUTDIR/manifest.json and OUTDIR/entropy.json. The last stdout line is
# `unigram_entropy_nats=X` (over every token of every shard, BOS included).
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
out=$1
fortune_dir=${FORTUNE_DIR:-/usr/share/games/fortunes}
repo=$(cd "$(dirname "$0")/../.." && pwd)

tool=${ABLATE_DATA:-}
if [[ -z $tool ]]; then
  tool=$(command -v ablate-data || true)
fi
if [[ -z $tool ]]; then
  tool=$(ls -t "$repo"/build*/ablate-data "$repo"/build*/trainer/ablate-data 2>/dev/null | head -n 1 || true)
fi
if [[ -z $tool || ! -x $tool ]]; then
  echo "$0: no ablate-data binary (set ABLATE_DATA or build the ablate-data target)" >&2
  exit 2
fi

# The text files themselves: skip the strfile(1) indexes (*.dat) and the *.u8 links to the
# same files, in a stable order.
inputs=()
while IFS= read -r f; do
  inputs+=("$f")
done < <(find -L "$fortune_dir" -maxdepth 1 -type f ! -name '*.dat' ! -name '*.u8' | LC_ALL=C sort)
if [[ ${#inputs[@]} -eq 0 ]]; then
  echo "$0: no fortune files in $fortune_dir (apt-get install fortunes-min)" >&2
  exit 3
fi

mkdir -p "$out"
"$tool" encode "${inputs[@]}" --out "$out" --val-fraction 0.1
"$tool" inspect "$out"/train_*.bin "$out"/val_*.bin --json > "$out/entropy.json"
"$tool" inspect "$out"/train_*.bin "$out"/val_*.bin --top 5 >&2
entropy=$(sed -n 's/.*"unigram_entropy_nats": *\([0-9.eE+-]*\).*/\1/p' "$out/entropy.json")
echo "unigram_entropy_nats=$entropy"
