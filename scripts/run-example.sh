#!/usr/bin/env bash
# Install dependencies, build, and run gprfwi's main job on the built-in
# example: an inversion campaign on a synthetic crosshole model. It models the
# true model's data (configs/crosshole-true.yaml -> example-run/truth/), then inverts
# them from the background with 2 MPI ranks (configs/crosshole-campaign.yaml ->
# example-run/inversion/), printing how much the misfit and the model error fell.
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
"${mpi[@]}" "$build/app/gprfwi" forward configs/crosshole-true.yaml
"${mpi[@]}" "$build/app/gprfwi" invert configs/crosshole-campaign.yaml
