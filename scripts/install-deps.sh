#!/usr/bin/env bash
# Install every system package gprfwi needs on a fresh Debian 12 machine.
# Idempotent: packages already present are left alone. Only Debian's archive
# is used. The CUDA toolkit is optional and not installed here: when `nvcc`
# is on PATH (or in /usr/local/cuda) the CUDA backend is built as well.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libopenmpi-dev openmpi-bin            # MPI
  petsc-dev                             # TAO (inversion)
  libopenblas0-openmp                   # PETSc's BLAS on all cores, on the OpenMP threads gprfwi uses (docs/performance.md)
  libhdf5-openmpi-dev                   # parallel HDF5
  libyaml-cpp-dev                       # run files
  libfftw3-dev                          # wavelet estimation
  libsegyio-dev                         # SEG-Y traces
  libcli11-dev libfmt-dev libspdlog-dev # command line, formatting, logging
  libgtest-dev libgmock-dev             # tests
  libbenchmark-dev                      # micro-benchmarks
  python3-matplotlib python3-h5py python3-numpy   # scripts/plot/
  python3-segyio                        # tests: SEG-Y files read and written by an independent library
  hdf5-tools                            # h5dump, h5ls for looking into outputs (and the campaign tests)
  procps                                # pgrep: tests/crash.sh finds the ranks it kills
  clang libclang-rt-dev                 # CI's second build: sanitizers and libFuzzer (docs/reliability.md)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
