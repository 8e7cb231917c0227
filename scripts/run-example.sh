#!/usr/bin/env bash
# Install dependencies, build, and run gprfwi's main job on the built-in
# example: forward modelling of a crosshole survey (gprfwi-example/synthetic.h5).
#   scripts/run-example.sh [BUILD_DIR]        (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
scripts/install-deps.sh
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" --parallel "$(nproc)"
"$build/app/gprfwi" forward --output gprfwi-example
