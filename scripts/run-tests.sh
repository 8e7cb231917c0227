#!/usr/bin/env bash
# Install dependencies, build (Release, CUDA backend when nvcc is found) and
# run the whole test suite with CTest. GPU tests skip, saying why, without a GPU.
#   scripts/run-tests.sh [BUILD_DIR]          (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
scripts/install-deps.sh
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" --parallel "$(nproc)"
ctest --test-dir "$build" --output-on-failure --parallel "$(nproc)" --timeout 900
