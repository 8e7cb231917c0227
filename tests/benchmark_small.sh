#!/bin/sh
# The inversion benchmark's regression cases (tests/data/benchmark-small, a
# coarse one-sided crosshole, with its wavelet known or unknown) on the CPU,
# through the suite's own script: the true model's data, the traveltime
# tomography, the campaign with gprfwi's defaults, the scores. The recovered
# model must stay about as close to the truth as measured (docs/inversion.md,
# "Benchmarks" and "Source wavelet"; thresholds a little below), and more
# iterations must not have made it worse.
# Usage: benchmark_small.sh REPO BIN_DIR PYTHON WORK_DIR [CASE]   (CASE: crosshole, the default, or
#        crosshole-unknown-wavelet)
set -eu
repo=$1 bin=$2 python=$3 work=$4 case=${5:-crosshole}
# two ranks of one thread each: on this small grid, splitting the shots over ranks costs less than the
# threads' synchronisation at every time step (the known-wavelet case in 109 s against 150 s as one rank of
# two threads, on CI's 2 cores)
OMP_NUM_THREADS=1 PYTHON=$python "$repo/scripts/benchmark-inversion.sh" -b "$bin" -c "$repo/tests/data/benchmark-small" \
  -o "$work" -n 2 --backend cpu "$case"
"$python" - "$work/$case.json" "$case" <<'CHECK'
import json, sys
d = json.load(open(sys.argv[1]))
f = d["final"]
# measured on the development VM with the defaults of docs/inversion.md:
least = {
    # 0.890, 0.842, 0.979, 0.954 (both errors below their lambda/4 oracles: 0.0176 against 0.0326, 0.0851
    # against 0.1082)
    "crosshole": (0.87, 0.82, 0.96, 0.93),
    # the wavelet projected out: 0.781, 0.777, 0.920, 0.919 (eps_r 0.0349 and sigma 0.1198, their lambda/4
    # oracles 0.0326 and 0.1082). This ground is uniform at the model's edges, where the edges that follow
    # their inner nodes (the default) give up what holding them at the start got right: with
    # inversion.edges: fixed 0.819 and 0.817 (docs/inversion.md, "Edges")
    "crosshole-unknown-wavelet": (0.76, 0.75, 0.89, 0.90),
}[sys.argv[2]]
checks = [
    ("eps_r closer to the truth than the start", f["eps_r"]["closer_than_start"], least[0]),
    ("sigma closer to the truth than the start", f["sigma"]["closer_than_start"], least[1]),
    ("eps_r SSIM", f["eps_r"]["ssim"], least[2]),
    ("sigma SSIM", f["sigma"]["ssim"], least[3]),
]
failed = False
for name, value, bound in checks:
    ok = value >= bound
    failed |= not ok
    print(f"{'ok  ' if ok else 'FAIL'} {name}: {value:.3f} (at least {bound})")
for q in ("eps_r", "sigma"):  # the last iteration's error within 5% of the least any iteration had
    errors = [it[q]["error"] for it in d["iterations"]]
    ok = errors[-1] <= 1.05 * min(errors)
    failed |= not ok
    print(f"{'ok  ' if ok else 'FAIL'} {q} error at the end {errors[-1]:.4f}, least on the way {min(errors):.4f}")
sys.exit(1 if failed else 0)
CHECK
echo "benchmark_small: all checks passed"
