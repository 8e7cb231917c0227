#!/usr/bin/env bash
# On a machine with GPUs: MPI runs on the CUDA backend, logs under $OUT (or
# ./gpu-mpi-results). Shows each rank's GPU binding, checks that misfit and
# gradient agree for np = 1..4 (and 6) on the GPU as tests/mpi_ranks.sh does
# on the CPU, runs the inversion regression's campaign on 2 ranks with the
# device memory poisoned (NaN when allocated) against a clean run, and times
# the example inversion campaign on 2 ranks.
#   scripts/gpu-mpi-check.sh BIN_DIR          BIN_DIR holds gprfwi and h5compare
set -uo pipefail
bin=$1
out=${OUT:-gpu-mpi-results}
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-4} OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
nvidia-smi --query-gpu=index,name,memory.total --format=csv | tee "$out/gpus.txt"
mpirun -np 2 --oversubscribe --bind-to none "$bin/gprfwi" info 2>&1 | tee "$out/info.log"
mpirun -np 4 --oversubscribe --bind-to none "$bin/gprfwi" info 2>&1 | grep rank | tee -a "$out/info.log"
# the MPI consistency test on the GPU backend
work=$(mktemp -d)
sed 's/backend: cpu/backend: cuda/' "$here/tests/data/small_crosshole.yaml" > "$work/small_crosshole_cuda.yaml"
"$here/tests/mpi_ranks.sh" "$bin/gprfwi" "$bin/h5compare" "$work/small_crosshole_cuda.yaml" "$work/mpi" > "$out/mpi_ranks_cuda.log" 2>&1
echo "mpi_ranks on cuda: exit $?"; grep -E "ok  |FAIL|passed|backend" "$out/mpi_ranks_cuda.log" | head -30
# the inversion regression's campaign on the GPU, 2 ranks, with every device array filled with NaN when
# allocated (propagator.cuda.poison_device_memory) and without: the same history (all but the seconds column)
mkdir -p "$work/poison" && cd "$work/poison"
for f in inversion_truth.yaml inversion_campaign.yaml; do sed 's/backend: cpu/backend: cuda/' "$here/tests/data/$f" > "$f"; done
"$bin/gprfwi" forward inversion_truth.yaml -o truth > "$out/poison.log" 2>&1
mpirun -np 2 --oversubscribe --bind-to none "$bin/gprfwi" invert inversion_campaign.yaml -o clean >> "$out/poison.log" 2>&1
mpirun -np 2 --oversubscribe --bind-to none "$bin/gprfwi" invert inversion_campaign.yaml -o poisoned --set propagator.cuda.poison_device_memory=true >> "$out/poison.log" 2>&1
echo "poisoned inversion: exit $?"
if cmp <(cut -d, -f1-8,10- clean/history.csv) <(cut -d, -f1-8,10- poisoned/history.csv); then
  echo "poisoned and clean inversion histories identical ($(wc -l < clean/history.csv) rows)"
else
  echo "FAIL: poisoned and clean inversion histories differ"
fi
# the example campaign on 2 GPUs
cd "$work" && cp -r "$here/configs" .
mpirun -np 2 --bind-to none "$bin/gprfwi" forward configs/crosshole-true.yaml > "$out/example_forward.log" 2>&1
/usr/bin/time -v mpirun -np 2 --bind-to none "$bin/gprfwi" invert configs/crosshole-campaign.yaml --set propagator.backend=cuda > "$out/example_invert.log" 2>&1
echo "example campaign: exit $?"
grep -E "backend|done in|misfit .* ->|model error|Elapsed" "$out/example_invert.log" | cut -c1-250
cp example-run/inversion/history.csv "$out/example_history.csv" 2>/dev/null
