#!/usr/bin/env bash
# Install dependencies, build, and run gprfwi's main job on the built-in
# example: a crosshole study on a synthetic ground (docs/quickstart.md). It
# models the true model's data (configs/crosshole-true.yaml ->
# example-run/truth/), makes a starting model from their first-arrival
# traveltimes (gprfwi tomography -> example-run/tomography/), inverts the data
# from it with 2 MPI ranks (configs/crosshole-campaign.yaml, gprfwi's defaults
# -> example-run/inversion/), and prints how close each model came to the
# truth, beside the resolution oracles (scripts/plot/inversion-metrics.py;
# figures in example-run/figures/).
#   scripts/run-example.sh [BUILD_DIR]        (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
scripts/install-deps.sh
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" --parallel "$(nproc)"
mpi=(mpirun -np 2 --oversubscribe)
[ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
gprfwi=$build/app/gprfwi
"${mpi[@]}" "$gprfwi" forward configs/crosshole-true.yaml
"${mpi[@]}" "$gprfwi" forward configs/crosshole-campaign.yaml -o example-run/start --set time.nt=1 > /dev/null
"${mpi[@]}" "$gprfwi" tomography configs/crosshole-campaign.yaml -o example-run/tomography
"${mpi[@]}" "$gprfwi" invert configs/crosshole-campaign.yaml \
  --set "model.eps_r={file: ../example-run/tomography/tomography.h5}"
for what in tomography/tomography inversion; do
  /usr/bin/python3 scripts/plot/inversion-metrics.py example-run/truth/model.h5 example-run/start/model.h5 \
    "example-run/$what" --frequency 1e8 --eps-background 6 --region 0.5 4.5 0.5 7.0 \
    --name "$(basename "$what")" -o example-run/figures | grep -v "^wrote"
done
