#!/usr/bin/env bash
# The inversion benchmark suite (configs/benchmarks/, docs/inversion.md,
# "Benchmarks"). For each case: the true model's data (gprfwi forward; the
# field-like case then made field-like with gprfwi convert), the starting
# model (the campaign's own, or the traveltime tomography's where the case
# says TOMOGRAPHY=1), the campaign with gprfwi's defaults, and the scores of
# every iteration against the truth beside the resolution oracles
# (scripts/plot/inversion-metrics.py). Writes OUT/benchmark.md (the table),
# OUT/figures/ (truth, start, result and oracle; error against propagations)
# and OUT/CASE.json (every number).
#   scripts/benchmark-inversion.sh [-b BIN_DIR] [-o OUT] [-n RANKS] [-c CASES_DIR] [--backend auto|cpu|cuda]
#                                  [-s KEY=VALUE ...] [-t OPTION ...] [--resume] [CASE ...]
# BIN_DIR holds gprfwi (default build/app); OUT defaults to benchmark-run;
# CASES_DIR to configs/benchmarks; -s sets a campaign key of every case's
# inversion (as gprfwi's --set; repeatable), to try a setting on the whole
# suite; -t adds an option to every tomography (repeatable; with
# --amplitudes the campaign starts from the tomography's sigma too); without CASE, every folder of CASES_DIR
# (each holds truth.yaml, campaign.yaml and case.env, or a case.env whose
# BASE names another case's folder, relative to its own, and whose SETS are
# the --set KEY=VALUE words that make that case's truth and campaign its
# own). A campaign stopped by SIGTERM or SIGUSR1 (gprfwi's exit code 3, a
# batch job's time limit) stops the script with that code; --resume then
# continues every case whose OUT/CASE/inversion/checkpoint.h5 exists from
# it, with its data, start and tomography as they are, keeps the cases
# already scored and runs the others from scratch; a case's seconds add its
# runs' up (a resumed stage restarts its L-BFGS memory: docs/cluster.md).
# Python: Debian's python3 with numpy, h5py and matplotlib
# (scripts/install-deps.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=$here/build/app out=$here/benchmark-run ranks=1 backend=auto cases=() suite=$here/configs/benchmarks settings=()
tomography_extra=() resume=0
python=${PYTHON:-/usr/bin/python3}
while [ $# -gt 0 ]; do
  case $1 in
    -b) bin=$(cd "$2" && pwd); shift 2 ;;
    -o) mkdir -p "$2"; out=$(cd "$2" && pwd); shift 2 ;;
    -n) ranks=$2; shift 2 ;;
    -c) suite=$(cd "$2" && pwd); shift 2 ;;
    --backend) backend=$2; shift 2 ;;
    -s|--set) settings+=(--set "$2"); shift 2 ;;
    -t) tomography_extra+=("$2"); shift 2 ;;
    --resume) resume=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    -*) echo "benchmark-inversion.sh: unknown option $1" >&2; exit 2 ;;
    *) cases+=("$1"); shift ;;
  esac
done
gprfwi=$bin/gprfwi
[ -x "$gprfwi" ] || { echo "benchmark-inversion.sh: no gprfwi in $bin (build first, or -b BIN_DIR)" >&2; exit 2; }
[ ${#cases[@]} -gt 0 ] || for d in "$suite"/*/; do cases+=("$(basename "$d")"); done
# each rank's threads on cores of their own (mpirun's default binds each of up to two ranks to one core)
mpi=(mpirun -np "$ranks" --oversubscribe --bind-to none)
[ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(( $(nproc) / ranks > 0 ? $(nproc) / ranks : 1 ))}
mkdir -p "$out/figures"

for case in "${cases[@]}"; do
  dir=$suite/$case
  [ -f "$dir/case.env" ] || { echo "benchmark-inversion.sh: $dir has no case.env" >&2; exit 2; }
  FIELD="" TOMOGRAPHY=0 TOMOGRAPHY_OPTIONS="" BASE="" SETS=""
  # shellcheck disable=SC1091
  source "$dir/case.env"
  files=$dir
  if [ -n "$BASE" ]; then
    files=$(cd "$dir/$BASE" 2>/dev/null && pwd) || { echo "benchmark-inversion.sh: $dir/case.env: BASE=$BASE is not a folder" >&2; exit 2; }
  fi
  own=()
  for s in $SETS; do own+=(--set "$s"); done
  TOMOGRAPHY_OPTIONS="$TOMOGRAPHY_OPTIONS ${tomography_extra[*]+${tomography_extra[*]}}"
  work=$out/$case
  log=$work/log.txt
  resumed=0 before=0
  if [ "$resume" = 1 ] && [ -f "$work/seconds" ] && [ -f "$out/$case.json" ]; then
    echo "== $case (done before)"
    continue
  elif [ "$resume" = 1 ] && [ -f "$work/inversion/checkpoint.h5" ]; then
    resumed=1
    before=$(cat "$work/seconds.stopped" 2>/dev/null || echo 0)
    echo "== $case (resumed from its checkpoint)" | tee -a "$log"
  else
    rm -rf "$work" && mkdir -p "$work"
    echo "== $case" | tee "$log"
  fi
  start=$(date +%s.%N)
  data=(--set data.observed="$work/truth/synthetic.h5")
  [ -z "$FIELD" ] || data=(--set data.observed.file="$work/field/line.sgy")
  run=(${own[@]+"${own[@]}"} --set propagator.backend="$backend" "${data[@]}")
  begin=() again=()
  if [ "$resumed" = 1 ]; then
    again=(--resume)
  else
    "${mpi[@]}" "$gprfwi" forward "$files/truth.yaml" -o "$work/truth" ${own[@]+"${own[@]}"} \
      --set propagator.backend="$backend" >> "$log" 2>&1
    if [ -n "$FIELD" ]; then
      mkdir -p "$work/field"
      # shellcheck disable=SC2086
      "$gprfwi" convert "$work/truth/synthetic.h5" "$work/field/line.sgy" $FIELD >> "$log" 2>&1
    fi
    # the campaign's own starting model, for the scores' "start"
    "$gprfwi" forward "$files/campaign.yaml" -o "$work/start" "${run[@]}" --set time.nt=1 >> "$log" 2>&1
  fi
  if [ "$TOMOGRAPHY" = 1 ]; then
    if [ "$resumed" = 0 ]; then
      # shellcheck disable=SC2086
      "${mpi[@]}" "$gprfwi" tomography "$files/campaign.yaml" -o "$work/tomography" "${run[@]}" $TOMOGRAPHY_OPTIONS >> "$log" 2>&1
      grep -E "RMS traveltime residual .* ->|time zero" "$log" | sed 's/^.*\] //' || true
      grep -E "RMS log amplitude ratio .* ->" "$log" | sed 's/^.*\] //' || true
    fi
    begin=(--set "model.eps_r={file: $work/tomography/tomography.h5}")
    case " $TOMOGRAPHY_OPTIONS " in
      *" --amplitudes "*) begin+=(--set "model.sigma={file: $work/tomography/tomography.h5}") ;;
    esac
  fi
  "${mpi[@]}" "$gprfwi" invert "$files/campaign.yaml" -o "$work/inversion" "${run[@]}" ${begin[@]+"${begin[@]}"} \
    --set inversion.true_model="$work/truth/model.h5" ${settings[@]+"${settings[@]}"} ${again[@]+"${again[@]}"} >> "$log" 2>&1 || {
    code=$?
    awk "BEGIN { print $(date +%s.%N) - $start + $before }" > "$work/seconds.stopped"
    if [ "$code" = 3 ]; then
      echo "benchmark-inversion.sh: $case stopped at its checkpoint; --resume continues it" >&2
    else
      echo "benchmark-inversion.sh: $case: gprfwi invert failed with code $code (its log: $log)" >&2
    fi
    exit "$code"
  }
  seconds=$(awk "BEGIN { print $(date +%s.%N) - $start + $before }")
  rm -f "$work/seconds.stopped"  # counted in: a later --resume finds the case done
  grep -E "inversion\.(stages|smoothing|taper) auto|done in" "$log" | sed 's/^.*\] //'
  # shellcheck disable=SC2086
  "$python" "$here/scripts/plot/inversion-metrics.py" "$work/truth/model.h5" "$work/start/model.h5" "$work/inversion" \
    --frequency "$FREQUENCY" --eps-background "$EPS_BACKGROUND" --region $REGION --name "$case" \
    -o "$out/figures" --json "$out/$case.json" | tee -a "$log" | grep -v "^wrote"
  if [ "$TOMOGRAPHY" = 1 ]; then
    # the amplitudes' history ends in the whole tomography's model (its eps_r the traveltimes')
    scored=$work/tomography/tomography
    if [ -d "$work/tomography/amplitudes" ]; then scored=$work/tomography/amplitudes; fi
    # shellcheck disable=SC2086
    "$python" "$here/scripts/plot/inversion-metrics.py" "$work/truth/model.h5" "$work/start/model.h5" \
      "$scored" --frequency "$FREQUENCY" --eps-background "$EPS_BACKGROUND" --region $REGION \
      --name "${case}_tomography" -o "$out/figures" --json "$out/${case}_tomography.json" >> "$log" 2>&1
  fi
  echo "$seconds" > "$work/seconds"
done

"$python" - "$out" "${cases[@]}" <<'EOF'
import json, os, sys
out, cases = sys.argv[1], sys.argv[2:]
rows = ["| case | parameter | start | tomography | result (closer than start) | Pearson | SSIM | oracle lambda/2 | oracle lambda/4 | evaluations | propagations | seconds |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|"]
for case in cases:
    d = json.load(open(os.path.join(out, case + ".json")))
    tomo = os.path.join(out, case + "_tomography.json")
    t = json.load(open(tomo)) if os.path.exists(tomo) else None
    seconds = float(open(os.path.join(out, case, "seconds")).read())
    evaluations = d["iterations"][-1]["evaluations"] if d["iterations"] else ""
    propagations = d["iterations"][-1]["propagations"] if d["iterations"] else ""
    for q in ("eps_r", "sigma"):
        f = d["final"][q]
        sigma_too = os.path.isdir(os.path.join(out, case, "tomography", "amplitudes"))
        tomo_cell = f"{t['final'][q]['error']:.4f}" if t and (q == "eps_r" or sigma_too) else "-"
        rows.append(f"| {case} | {q} | {d['start'][q]['error']:.4f} | {tomo_cell} | {f['error']:.4f} ({f['closer_than_start']:+.0%}) "
                    f"| {f['pearson']:.3f} | {f['ssim']:.3f} | {d['oracle_half'][q]['error']:.4f} ({d['oracle_half'][q]['closer_than_start']:+.0%}) "
                    f"| {d['oracle_quarter'][q]['error']:.4f} ({d['oracle_quarter'][q]['closer_than_start']:+.0%}) | {evaluations} | {propagations} | {seconds:.0f} |")
# more iterations must not make the model worse: the error from the history's 25th row (24 iterations
# in) to its last may rise by at most 5% (the inversion-quality issue's bound)
later = ["| case | parameter | error at row 25 | at the last row | change | least from row 25 on | last above that least | within 5% |",
         "|---|---|---|---|---|---|---|---|"]
for case in cases:
    it = json.load(open(os.path.join(out, case + ".json")))["iterations"]
    if len(it) < 26:
        continue
    for q in ("eps_r", "sigma"):
        errors = [row[q]["error"] for row in it[24:]]
        change, above = errors[-1] / errors[0] - 1, errors[-1] / min(errors) - 1
        later.append(f"| {case} | {q} | {errors[0]:.4f} | {errors[-1]:.4f} ({len(it)}) | {change:+.1%} | {min(errors):.4f} "
                     f"| {above:+.1%} | {'yes' if change <= 0.05 else 'no'} |")
text = ("Relative L2 model errors over each case's region (between and around the antennas); in brackets how much "
        "closer to the truth than the start.\n\n" + "\n".join(rows) + "\n")
if len(later) > 2:
    text += ("\nMore iterations: each case's error from the 25th row of its history (24 iterations in) to the last "
             "(in brackets the rows).\n\n" + "\n".join(later) + "\n")
open(os.path.join(out, "benchmark.md"), "w").write(text)
print(text)
print(f"wrote {os.path.join(out, 'benchmark.md')} and {os.path.join(out, 'figures')}/")
EOF
