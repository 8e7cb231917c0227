#!/usr/bin/env bash
# On a GPU machine: forward and gradient rates of the 8-shot case for
# several rows-per-thread settings of the forward kernels
# (GPRFWI_CUDA_ROWS_PER_THREAD), to choose the default. Logs under $OUT.
set -uo pipefail
gprfwi=${1:-build/app/gprfwi}
out=${OUT:-gpu-results}
mkdir -p "$out"
for rows in 1 2 4; do
  for mode in forward gradient; do
    echo "== rows per thread $rows, $mode"
    GPRFWI_CUDA_ROWS_PER_THREAD=$rows "$gprfwi" bench --backend cuda --nx 1000 --nz 1000 --shots 8 --nt 1000 \
      --mode $mode --repeats 2 2>&1 | sed -n 3p
  done
done 2>&1 | tee "$out/sweep.log"
