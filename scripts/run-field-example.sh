#!/usr/bin/env bash
# The measured-data worked example (docs/field-data.md): model the true
# crosshole data, turn them into field-like SEG-Y (point source, trigger delay,
# other sampling, survey coordinates), and invert that file with 2 MPI ranks
# through the SEG-Y reader, the 3D-to-2D correction and the time-zero shift,
# from the traveltime tomography's model, the wavelet unknown. Run after the build (scripts/run-example.sh builds).
#   scripts/run-field-example.sh [BUILD_DIR]        (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
mpi=(mpirun -np 2 --oversubscribe)
[ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
"${mpi[@]}" "$build/app/gprfwi" forward configs/shallow-crosshole-true.yaml
scripts/make-field-data.sh "$build/app/gprfwi"
"${mpi[@]}" "$build/app/gprfwi" tomography configs/field-campaign.yaml -o example-run/field-tomography \
  --estimate-time-zero
"${mpi[@]}" "$build/app/gprfwi" invert configs/field-campaign.yaml \
  --set "model.eps_r={file: ../example-run/field-tomography/tomography.h5}"
