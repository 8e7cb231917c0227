#!/bin/sh
# `gprfwi tomography --amplitudes` on the inversion benchmark's regression
# case (tests/data/benchmark-small): the amplitude stage fits the log
# amplitude ratios (its RMS at least halved) and takes sigma closer to the
# truth than the start over the region between the boreholes (the test's
# case measured at 36% closer, 10 amplitude iterations; docs/inversion.md,
# "Starting models from traveltimes"); eps_r is the traveltimes' alone, the same as without
# --amplitudes, whose sigma stays the starting model's.
# Scored by the suite's own scripts/plot/inversion-metrics.py over the
# case's region (its case.env).
# Usage: amplitude_tomography.sh GPRFWI PYTHON CASE_DIR WORK_DIR METRICS_PY
set -eu
gprfwi=$1 python=$2 case=$3 work=$4 metrics=$5
rm -rf "$work" && mkdir -p "$work" && cd "$work"
export OMP_NUM_THREADS=1
FREQUENCY="" EPS_BACKGROUND="" REGION=""
# shellcheck disable=SC1091
. "$case/case.env"
"$gprfwi" forward "$case/truth.yaml" -o truth --set propagator.backend=cpu > truth.log 2>&1
"$gprfwi" forward "$case/campaign.yaml" -o start --set propagator.backend=cpu --set time.nt=1 \
  --set data.observed="$work/truth/synthetic.h5" > start.log 2>&1
run="--set propagator.backend=cpu --set data.observed=$work/truth/synthetic.h5"
# shellcheck disable=SC2086
"$gprfwi" tomography "$case/campaign.yaml" -o times $run > times.log 2>&1
# shellcheck disable=SC2086
"$gprfwi" tomography "$case/campaign.yaml" -o both --amplitudes $run > both.log 2>&1
grep -E "RMS log amplitude ratio" both.log | sed 's/^.*\] //'
test -s both/amplitudes/history.csv || { echo "no history of the amplitude inversion"; exit 1; }
# shellcheck disable=SC2086
"$python" "$metrics" truth/model.h5 start/model.h5 both/amplitudes --frequency "$FREQUENCY" \
  --eps-background "$EPS_BACKGROUND" --region $REGION --json scores.json > scores.log
"$python" - both.log scores.json start/model.h5 times/tomography.h5 both/tomography.h5 <<'CHECK'
import json, re, sys
import h5py, numpy as np
log, scores, start, times, both = sys.argv[1:]
m = re.search(r"RMS log amplitude ratio ([0-9.e+-]+) -> ([0-9.e+-]+) over", open(log).read())
assert m, "no amplitude residual in the log"
before, after = float(m.group(1)), float(m.group(2))
sigma = json.load(open(scores))["final"]["sigma"]
s, a, b = h5py.File(start), h5py.File(times), h5py.File(both)
checks = [
    ("the amplitudes' RMS log ratio at least halved", after <= 0.5 * before, f"{before:.3g} -> {after:.3g}"),
    ("sigma without --amplitudes is the start's", bool(np.array_equal(a["sigma"][()], s["sigma"][()])), ""),
    ("eps_r the traveltimes' alone", bool(np.array_equal(a["eps_r"][()], b["eps_r"][()])), ""),
    ("sigma 25% closer to the truth than the start", sigma["closer_than_start"] >= 0.25,
     f"error {sigma['error']:.4f}, {sigma['closer_than_start']:.0%} closer"),
]
failed = False
for name, ok, detail in checks:
    failed |= not ok
    print(f"{'ok  ' if ok else 'FAIL'} {name} {detail}")
sys.exit(1 if failed else 0)
CHECK
echo "amplitude_tomography: all checks passed"
