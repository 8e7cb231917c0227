#!/bin/sh
# Outputs that do not fit (a file-size limit, `ulimit -f`, standing in for a
# full disk or a quota): traces of a forward run, and an inversion's models
# and checkpoint. Each time gprfwi stops with an error naming the file,
# within seconds and on every rank, leaves no temporary file, and leaves the
# file it was replacing as it was: a campaign stopped that way resumes from
# its last checkpoint once there is room.
# Usage: disk_full.sh GPRFWI DATA_DIR WORK_DIR
set -eu
gprfwi=$1
. "$(dirname "$0")/campaign_common.sh"
prepare "$3" "$2" inversion_truth.yaml
limit=4096  # KiB (bash's unit): room for MPI's own shared-memory files, not for the outputs below

# limited COMMAND...: runs COMMAND under the file-size limit, logs to limited.log, prints its exit code
limited() {
  set +e
  timeout 120 bash -c "ulimit -f $limit; exec \"\$@\"" bash "$@" > limited.log 2>&1
  code=$?
  set -e
  echo $code
}

no_temporaries() {
  left=$(find "$1" -name '*.tmp-*')
  [ -z "$left" ] || { echo "temporary files left: $left"; exit 1; }
}

# 1. Traces: synthetic.h5 of 6.4 MB over an earlier, smaller one.
"$gprfwi" forward inversion_truth.yaml -o traces > traces.log 2>&1 || { cat traces.log; exit 1; }
cp traces/synthetic.h5 synthetic-before.h5
code=$(limited "$gprfwi" forward inversion_truth.yaml -o traces --set time.nt=6000)
cat limited.log | grep -v "\[info\]" || true
[ "$code" -eq 1 ] || { echo "forward under the limit: exit code $code (1 expected)"; exit 1; }
grep -q "traces/synthetic.h5: no room" limited.log || { echo "forward: no error naming synthetic.h5"; exit 1; }
cmp -s traces/synthetic.h5 synthetic-before.h5 || { echo "forward: the earlier synthetic.h5 changed"; exit 1; }
no_temporaries traces
echo "traces: refused with the file named, the earlier file intact"

# 2. A campaign on a 430 x 430 grid (each model file 4.4 MB): stopped after a
# few iterations, resumed under the limit (its next model cannot be written),
# then resumed with room.
cat > campaign.yaml <<'EOF'
grid: {nx: 430, nz: 430, dx: 0.01, dz: 0.01}
model: {eps_r: 6.0, sigma: 0.002}
wavelet: {type: ricker, frequency: 3.0e8}
time: {dt: 1.6e-11, nt: 1000}
survey:
  crosshole:
    source_x: 1.6
    receiver_x: 2.7
    sources: {from: 1.7, to: 2.6, count: 2}
    receivers: {from: 1.6, to: 2.7, count: 6}
propagator: {backend: cpu, precision: single, stencil: 4, pml: {width: 10}}
data: {observed: truth/synthetic.h5}
inversion:
  bounds: {eps_r: [1.0, 30.0], sigma: [1.0e-5, 0.1]}
  stages: [{name: only, parameters: [eps_r], iterations: 12}]
output: {dir: campaign}
EOF
"$gprfwi" forward campaign.yaml -o truth > truth.log 2>&1 \
  --set "model.shapes=[{type: circle, center: [2.15, 2.15], radius: 0.3, eps_r: 7.0, sigma: 0.004}]" ||
  { cat truth.log; exit 1; }
$mpi -np 2 "$gprfwi" invert campaign.yaml -o run > run.log 2>&1 &
stop_campaign $! run 3 run.log
cp run/checkpoint.h5 checkpoint-before.h5
cp run/history.csv history-before.csv

begin=$(date +%s)
code=$(limited $mpi -np 2 bash -c "ulimit -f $limit; exec \"\$0\" \"\$@\"" "$gprfwi" invert campaign.yaml -o run --resume)
took=$(( $(date +%s) - begin ))
grep -E "\[(error|warning)\]" limited.log || true
[ "$code" -ne 0 ] && [ "$code" -ne 124 ] || { echo "resumed under the limit: exit code $code (a failure expected)"; exit 1; }
grep -Eq "run/(checkpoint|models/[^ ]*)\.h5: no room" limited.log || { echo "campaign: no error naming the model file"; exit 1; }
cmp -s run/checkpoint.h5 checkpoint-before.h5 || { echo "campaign: the checkpoint changed"; exit 1; }
cmp -s run/history.csv history-before.csv || { echo "campaign: history.csv changed"; exit 1; }
no_temporaries run
echo "campaign: refused after ${took} s with the file named, checkpoint and history intact"

$mpi -np 2 "$gprfwi" invert campaign.yaml -o run --resume > resumed.log 2>&1 || { cat resumed.log; exit 1; }
history_ok run
[ "$(wc -l < run/history.csv)" -gt "$(wc -l < history-before.csv)" ] || { echo "the resume added no iteration"; exit 1; }
test -s run/model_final.h5
no_temporaries run
echo "campaign: resumed with room to $(($(wc -l < run/history.csv) - 1)) iterations"
echo "disk_full: all checks passed"
