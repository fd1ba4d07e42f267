#!/bin/sh
# A stand-in for nvidia-smi on a machine without GPUs: eight H100s on driver 580, in the CSV that
# worker/gpu_probe.cc and worker/preflight_gpu.cc ask for. Any other question fails, as it would
# on a real node.
if [ "$1" = "--query-gpu=driver_version" ] && [ "$2" = "--format=csv,noheader" ]; then
  for i in 0 1 2 3 4 5 6 7; do echo "580.82.07"; done
  exit 0
fi
if [ "$1" != "--query-gpu=index,name,memory.total" ] ||
   [ "$2" != "--format=csv,noheader,nounits" ]; then
  echo "fake nvidia-smi: unexpected arguments: $*" >&2
  exit 1
fi
for i in 0 1 2 3 4 5 6 7; do
  echo "$i, NVIDIA H100 80GB HBM3, 81559"
done
