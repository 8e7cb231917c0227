#!/bin/bash
# scripts/benchmark-inversion.sh stopped and resumed: the regression case
# (tests/data/benchmark-small, two short stages) is signalled as a batch job's
# time limit would (SIGUSR1 to its gprfwi ranks) in the middle of its
# campaign; the script stops with gprfwi's code 3 and no scores, --resume
# continues the campaign from its checkpoint with the same data and
# tomography and scores it (every iteration once in the history, the seconds
# of both runs added, the stopped run's count removed), and a second --resume
# keeps the scored case as it is.
# Usage: benchmark_resume.sh REPO BIN_DIR PYTHON WORK_DIR
set -eu
repo=$1 bin=$2 python=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
export OMP_NUM_THREADS=1 PYTHON=$python
bench=("$repo/scripts/benchmark-inversion.sh" -b "$bin" -c "$repo/tests/data/benchmark-small" -o "$work" -n 2
       --backend cpu -s "inversion.stages=[{name: low, max_frequency: 2.5e7, parameters: [eps_r, sigma], iterations: 10}, {name: full, parameters: [eps_r, sigma], iterations: 40}]")
history=$work/crosshole/inversion/history.csv
fail() { echo "FAIL $*"; exit 1; }

"${bench[@]}" crosshole > "$work/first.log" 2>&1 &
runner=$!
for _ in $(seq 600); do  # into the full band, at most 5 minutes
  if [ -f "$history" ] && grep -q "^full,1," "$history"; then break; fi
  kill -0 $runner 2>/dev/null || fail "the campaign ended before it could be stopped: $(tail -3 "$work/first.log")"
  sleep 0.5
done
pkill -USR1 -f "gprfwi invert .*$work/crosshole/inversion" || fail "no gprfwi invert to signal"
code=0; wait $runner || code=$?
[ "$code" = 3 ] || fail "the stopped script exited with $code, not 3: $(tail -5 "$work/first.log")"
grep -q "stopped at its checkpoint; --resume continues it" "$work/first.log" || fail "no word on how to continue"
[ -f "$work/crosshole/inversion/checkpoint.h5" ] || fail "no checkpoint"
[ -f "$work/crosshole/seconds.stopped" ] || fail "no seconds kept for the stopped run"
stopped_seconds=$(cat "$work/crosshole/seconds.stopped")
[ ! -f "$work/crosshole.json" ] || fail "a stopped case was scored"
truth_before=$(stat -c %Y "$work/crosshole/truth/synthetic.h5")
rows_before=$(($(wc -l < "$history") - 1))
echo "ok   stopped with code 3 after $rows_before rows of history"

"${bench[@]}" --resume crosshole > "$work/second.log" 2>&1 || fail "--resume failed: $(tail -5 "$work/second.log")"
grep -q "== crosshole (resumed from its checkpoint)" "$work/second.log" || fail "--resume did not resume"
[ ! -f "$work/crosshole/seconds.stopped" ] || fail "the stopped run's seconds were left behind once counted in"
[ "$(stat -c %Y "$work/crosshole/truth/synthetic.h5")" = "$truth_before" ] || fail "--resume made the data again"
"$python" - "$history" "$work/crosshole.json" "$rows_before" "$stopped_seconds" \
  "$work/crosshole/seconds" <<'CHECK'
import csv, json, sys
history, scores, before, stopped, seconds = sys.argv[1:]
rows = list(csv.DictReader(open(history)))
keys = [(r["stage"], int(r["iteration"])) for r in rows]
assert len(keys) == len(set(keys)), "an iteration appears twice in the history"
assert len(rows) > int(before), f"the resumed campaign added no iteration ({len(rows)} rows)"
full = [i for s, i in keys if s == "full"]
assert full == list(range(full[0], full[0] + len(full))), "the full band's iterations are not contiguous"
assert max(full) <= 40, f"the full band ran past its 40 iterations ({max(full)})"
d = json.load(open(scores))
assert d["final"]["eps_r"]["closer_than_start"] > 0.3, d["final"]["eps_r"]
assert float(open(seconds).read()) > float(stopped), "the seconds do not add both runs up"
print(f"ok   resumed to {len(rows)} rows, every iteration once; eps_r "
      f"{d['final']['eps_r']['closer_than_start']:.0%} closer to the truth than the start")
CHECK
scored=$(stat -c %Y "$work/crosshole.json")
"${bench[@]}" --resume crosshole > "$work/third.log" 2>&1 || fail "a second --resume failed"
grep -q "== crosshole (done before)" "$work/third.log" || fail "a second --resume ran the scored case again"
[ "$(stat -c %Y "$work/crosshole.json")" = "$scored" ] || fail "a second --resume scored again"
echo "benchmark_resume: all checks passed"
