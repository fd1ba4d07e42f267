#!/bin/sh
# A stand-in for nvidia-smi on a machine without GPUs: eight H100s, in the CSV that
# worker/gpu_probe.cc asks for. Any other question fails, as it would on a real node.
if [ "$1" != "--query-gpu=index,name,memory.total" ] ||
   [ "$2" != "--format=csv,noheader,nounits" ]; then
  echo "fake nvidia-smi: unexpected arguments: $*" >&2
  exit 1
fi
for i in 0 1 2 3 4 5 6 7; do
  echo "$i, NVIDIA H100 80GB HBM3, 81559"
done
