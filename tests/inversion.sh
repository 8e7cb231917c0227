#!/bin/sh
# The inversion regression (np = 2, CPU): the misfit over the full band falls
# by at least 95%, the relative L2 error of eps_r by at least 50% and of sigma
# by at least 30%; np = 1 gives the same history to rounding; a run stopped by
# SIGUSR1 exits with code 3 and, resumed, ends with every iteration exactly once;
# an argument after the run file that no PETSc option family takes is refused.
# Usage: inversion.sh GPRFWI DATA_DIR WORK_DIR
set -eu
gprfwi=$1
. "$(dirname "$0")/campaign_common.sh"
prepare "$3" "$2" inversion_truth.yaml inversion_campaign.yaml

$mpi -np 1 "$gprfwi" forward inversion_truth.yaml -o truth
# an argument after the run file that is no PETSc option (a mistyped --set) is refused before any work
if "$gprfwi" invert inversion_campaign.yaml -s inversion.reg=none -o typo > typo.log 2>&1; then
  cat typo.log; echo "FAIL: invert ran with '-s' for '--set'"; exit 1
fi
grep -q "unexpected argument '-s'.*--set key=value" typo.log || { cat typo.log; echo "FAIL: no message naming '-s'"; exit 1; }
test ! -e typo/history.csv || { echo "FAIL: the refused run wrote typo/history.csv"; exit 1; }
$mpi -np 2 "$gprfwi" invert inversion_campaign.yaml -o np2
$mpi -np 1 "$gprfwi" invert inversion_campaign.yaml -o np1 > np1.log 2>&1 || { cat np1.log; exit 1; }
# the run's record names the folder it wrote to (-o), not the run file's output.dir
grep -q "^output: {dir: np2," np2/run-info.txt || { cat np2/run-info.txt; echo "FAIL: run-info.txt does not name np2"; exit 1; }

# full-band L2 misfit of the starting and the final model, by `gprfwi gradient`
misfit() {
  name=$1
  shift
  "$gprfwi" gradient inversion_campaign.yaml -o "grad-$name" "$@" 2>&1 | sed -n 's/.*misfit \([0-9.e+-]*\); gradient.*/\1/p'
}
start=$(misfit start)
final=$(misfit final --set "model={file: np2/model_final.h5}")
echo "full-band misfit: start $start, final $final"
echo "$start $final" | grep -Eq '^[0-9.e+-]+ [0-9.e+-]+$' || { echo "no misfits read"; exit 1; }
awk -v a="$start" -v b="$final" 'BEGIN { f = 1 - b / a; printf "misfit fell by %.1f%% (at least 95%%)\n", 100 * f; if (a > 0 && f >= 0.95) exit 0; exit 1 }'

# model errors: the first and last rows of the history
awk -F, 'NR == 2 { e0 = $10; s0 = $11 } END {
  fe = 1 - $10 / e0; fs = 1 - $11 / s0
  printf "eps_r error %.4f -> %.4f (%.1f%% lower, at least 50%%); sigma error %.4f -> %.4f (%.1f%% lower, at least 30%%)\n", e0, $10, 100 * fe, s0, $11, 100 * fs
  if (e0 > 0 && s0 > 0 && fe >= 0.5 && fs >= 0.3) exit 0; exit 1 }' np2/history.csv

# np = 1 and np = 2: the same iterations, misfits equal to rounding (13 columns a history)
paste -d, np1/history.csv np2/history.csv | awk -F, 'NR > 1 {
  if ($1 != $14 || $2 != $15) { print "row " NR ": " $1 " " $2 " vs " $14 " " $15; bad = 1 }
  d = ($3 - $16) / $3; if (d < 0) d = -d; if (d > worst) worst = d }
  END { printf "np=1 vs np=2: largest relative misfit difference %.2e (limit 1e-6)\n", worst; if (!bad && NR > 2 && worst <= 1e-6) exit 0; exit 1 }'
test "$(wc -l < np1/history.csv)" -eq "$(wc -l < np2/history.csv)"

# stop with SIGUSR1 after a few iterations, then resume
$mpi -np 2 "$gprfwi" invert inversion_campaign.yaml -o stopped > stopped.log 2>&1 &
stop_campaign $! stopped 5 stopped.log
cat stopped.log
echo "stopped run exit code: $stopped_code (3 expected)"
rows_before=$(wc -l < stopped/history.csv)
$mpi -np 2 "$gprfwi" invert inversion_campaign.yaml -o stopped --resume
history_ok stopped
test "$(wc -l < stopped/history.csv)" -gt "$rows_before"
test -s stopped/model_final.h5
echo "inversion: all checks passed"
