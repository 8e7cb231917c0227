#!/bin/sh
# The packaging files as far as this machine can check them (no Spack, no
# Apptainer here): the Spack recipe is valid Python and depends on everything
# scripts/install-deps.sh installs for building (Debian package -> Spack
# package), and the Apptainer definition builds with install-deps.sh and
# installs into a prefix.
# Usage: packaging.sh SOURCE_DIR PYTHON
set -eu
source=$1 python=$2
recipe=$source/scripts/packaging/spack/packages/gprfwi/package.py
"$python" -m py_compile "$recipe"
missing=0
for pair in libopenmpi-dev:mpi petsc-dev:petsc libhdf5-openmpi-dev:hdf5+mpi libyaml-cpp-dev:yaml-cpp \
            libfftw3-dev:fftw libsegyio-dev:segyio libcli11-dev:cli11 libfmt-dev:fmt libspdlog-dev:spdlog \
            libgtest-dev:googletest libbenchmark-dev:benchmark cmake:cmake ninja-build:ninja pkg-config:pkgconfig \
            python3-matplotlib:py-matplotlib python3-h5py:py-h5py python3-numpy:py-numpy; do
  debian=${pair%%:*} spack=${pair#*:}
  grep -q "^ *$debian\b\|[( ]$debian\b" "$source/scripts/install-deps.sh" || { echo "packaging: $debian is no longer in install-deps.sh (update this list)"; missing=1; }
  grep -q "depends_on(\"$spack[@\"+]" "$recipe" || { echo "packaging: the Spack recipe lacks $spack (Debian's $debian)"; missing=1; }
done
def=$source/scripts/packaging/gprfwi.def
grep -q "^Bootstrap: docker" "$def" && grep -q "^From: debian:12" "$def" && grep -q "scripts/install-deps.sh" "$def" \
  && grep -q "cmake --install" "$def" || { echo "packaging: $def does not build from Debian 12 with install-deps.sh"; missing=1; }
[ $missing -eq 0 ] && echo "packaging: all checks passed"
