#!/usr/bin/env bash
# On a GPU machine: whole-call and loop rates of the 1000 x 1000 x 8-shot
# forward and gradient for several segment heights of the CUDA kernels
# (gprfwi bench --step-rows / --adjoint-rows, docs/gpu.md), to choose the
# defaults. Usage: scripts/gpu-sweep.sh [GPRFWI]; logs under $OUT.
set -uo pipefail
gprfwi=${1:-build/app/gprfwi}
out=${OUT:-gpu-results}
mkdir -p "$out"
common=(--backend cuda --nx 1000 --nz 1000 --shots 8 --nt 1000 --repeats 3)
for rows in 0 12 14 16 20; do
  echo "== forward, step rows $rows (0: automatic)"
  "$gprfwi" bench "${common[@]}" --mode forward --step-rows "$rows" 2>&1 | grep -E "^\{"
  echo "== gradient, adjoint rows $rows (0: automatic)"
  "$gprfwi" bench "${common[@]}" --mode gradient --adjoint-rows "$rows" 2>&1 | grep -E "^\{"
done 2>&1 | tee "$out/sweep.log"
