#!/bin/sh
# Every run file in configs/ is valid: `gprfwi check` exits 0 on each (for
# campaigns after the true models they name exist, made by a short forward run),
# and the automatic stages that check writes out read back to the same stages.
# Usage: configs.sh GPRFWI CONFIGS_DIR WORK_DIR SCRIPTS_DIR
set -eu
gprfwi=$1 configs=$2 work=$3 scripts=$4
rm -rf "$work" && mkdir -p "$work" && cp -r "$configs" "$work/configs" && cd "$work"
export OMP_NUM_THREADS=1
for truth in configs/*-true.yaml; do
  "$gprfwi" forward "$truth" --set time.nt=10 > /dev/null 2>&1 || { echo "forward $truth failed"; exit 1; }
done
# the measured-data example reads its shots from the SEG-Y file it names
"$scripts/make-field-data.sh" "$gprfwi" example-run/shallow-truth example-run/field/crosshole-line.sgy > /dev/null 2>&1 \
  || { echo "make-field-data.sh failed"; exit 1; }
# the benchmark cases' data, the suite's and those outside it (short runs, where each campaign expects them:
# benchmark-run/CASE/truth), the field-like one made field-like; a case made from another's files (BASE, SETS
# in its case.env) has both those files checked with its own keys (the glob below checks the others)
for case in configs/benchmarks*/*/; do
  FIELD="" BASE="" SETS=""
  . "$case/case.env"
  name=$(basename "$case") files=$case/$BASE own=""
  [ -f "$files/truth.yaml" ] || { echo "$case: no truth.yaml (BASE=$BASE)"; exit 1; }
  for s in $SETS; do own="$own --set $s"; done
  # shellcheck disable=SC2086
  "$gprfwi" forward "$files/truth.yaml" -o "benchmark-run/$name/truth" $own --set time.nt=10 > /dev/null 2>&1 \
    || { echo "forward $case failed"; exit 1; }
  if [ -n "$BASE" ]; then
    # shellcheck disable=SC2086
    "$gprfwi" check "$files/truth.yaml" $own > check.log 2>&1 || { cat check.log; echo "FAIL $case (truth)"; exit 1; }
    # shellcheck disable=SC2086
    "$gprfwi" check "$files/campaign.yaml" $own --set data.observed="$PWD/benchmark-run/$name/truth/synthetic.h5" \
      > check.log 2>&1 || { cat check.log; echo "FAIL $case (campaign)"; exit 1; }
    echo "valid: $case ($BASE with $SETS)"
  fi
  if [ -n "$FIELD" ]; then
    mkdir -p "benchmark-run/$name/field"
    # shellcheck disable=SC2086
    "$gprfwi" convert "benchmark-run/$name/truth/synthetic.h5" "benchmark-run/$name/field/line.sgy" $FIELD \
      > /dev/null 2>&1 || { echo "convert for $case failed"; exit 1; }
  fi
done
for f in configs/*.yaml configs/benchmarks*/*/*.yaml; do
  "$gprfwi" check "$f" > check.log 2>&1 || { cat check.log; echo "FAIL $f"; exit 1; }
  echo "valid: $f"
done
# a campaign's automatic stages, written out by check, read back as inversion.stages to the same stages
"$gprfwi" check configs/crosshole-campaign.yaml > auto.log 2>&1 || { cat auto.log; echo "FAIL check (auto stages)"; exit 1; }
list=$(sed -n 's/^ *inversion\.stages auto, written out ([^)]*): //p' auto.log)
[ -n "$list" ] || { cat auto.log; echo "FAIL: check wrote out no automatic stages"; exit 1; }
"$gprfwi" check configs/crosshole-campaign.yaml --set "inversion.stages=$list" > listed.log 2>&1 \
  || { cat listed.log; echo "FAIL check (the stages written out)"; exit 1; }
grep "^    stage " auto.log > auto-stages.txt && grep "^    stage " listed.log > listed-stages.txt
cmp -s auto-stages.txt listed-stages.txt || { diff auto-stages.txt listed-stages.txt; echo "FAIL: the written-out stages differ"; exit 1; }
grep -q "smoothing.eps_r auto" listed.log || { cat listed.log; echo "FAIL: check shows no automatic choices"; exit 1; }
echo "auto stages written out read back: $(wc -l < auto-stages.txt) stages"
echo "configs: all valid"
