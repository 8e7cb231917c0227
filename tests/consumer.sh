#!/bin/sh
# Installs the build into a fresh prefix and uses it as a cluster user would:
# the installed program runs from the prefix (its version, a forward run of an
# installed sample run file), the share folder holds the scripts, pkg-config
# finds the library, and a downstream CMake project (tests/consumer) finds the
# package, builds the README's library example and runs it.
# Usage: consumer.sh BUILD_DIR SOURCE_DIR WORK_DIR
set -eu
build=$1 source=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" > "$work/install.log"
"$prefix/bin/gprfwi" --version
for f in share/gprfwi/configs/crosshole-true.yaml share/gprfwi/scripts/slurm/launch.sh \
         share/gprfwi/scripts/plot/plot-model.py share/gprfwi/scripts/benchmark-inversion.sh \
         include/gprfwi/propagator.hpp lib/cmake/gprfwi/gprfwiConfig.cmake lib/pkgconfig/gprfwi.pc; do
  test -e "$prefix/$f" || { echo "consumer: $f is not installed"; exit 1; }
done
ls "$prefix"/lib/libgprfwi.so.* > /dev/null
OMP_NUM_THREADS=1 "$prefix/bin/gprfwi" forward "$prefix/share/gprfwi/configs/example.yaml" --set time.nt=50 \
  --set propagator.backend=cpu -o "$work/forward" > "$work/forward.log" 2>&1
test -s "$work/forward/synthetic.h5"
PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --exists gprfwi
PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs gprfwi
cmake -S "$source/tests/consumer" -B "$work/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" > "$work/consumer-configure.log"
cmake --build "$work/consumer" > "$work/consumer-build.log"
OMP_NUM_THREADS=1 "$work/consumer/consumer"
echo "consumer: all checks passed"
