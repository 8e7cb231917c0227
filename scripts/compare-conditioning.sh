#!/usr/bin/env bash
# Runs a campaign with each gradient-conditioning variant (none, illumination
# preconditioning, Gaussian smoothing, both) and prints the model errors each
# reached: the figures in docs/inversion.md. Run from the repository root
# after the campaign's true model has been modelled (for the crosshole
# example: gprfwi forward configs/shallow-crosshole-true.yaml).
#   scripts/compare-conditioning.sh GPRFWI CAMPAIGN.yaml OUT_DIR [MPI ranks]
set -euo pipefail
gprfwi=$1 campaign=$2 out=$3 ranks=${4:-2}
mpi=(mpirun -np "$ranks" --oversubscribe)
[ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
mkdir -p "$out"
declare -A variants=(
  [none]=""
  [illumination]="--set inversion.illumination=0.05"
  [smoothing]="--set inversion.smoothing=0.1"
  [both]="--set inversion.illumination=0.05 --set inversion.smoothing=0.1"
)
for v in none illumination smoothing both; do
  # shellcheck disable=SC2086  # the overrides are separate words
  "${mpi[@]}" "$gprfwi" invert "$campaign" -o "$out/$v" ${variants[$v]} > "$out/$v.log" 2>&1 \
    || { tail -20 "$out/$v.log"; echo "compare-conditioning: $v failed"; exit 1; }
  echo "$v: $(grep -o 'model error (relative L2.*' "$out/$v.log" | sed 's/model error (relative L2 against inversion.true_model): //') ;" \
       "$(grep -o "done in .*" "$out/$v.log")"
done
