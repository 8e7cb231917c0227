#!/bin/sh
# MPI: the misfit and gradient of the small crosshole study for np = 1..4 and
# 6 (more ranks than its 5 shots) agree to summation-order rounding; forward
# data from 1 and 3 ranks are identical; a rank that fails (a NaN in the
# observed data of a shot it owns) ends the run on every rank with an error
# and no output.
# With a fifth argument (the library_gradient helper), the CLI's gradient.h5
# is also compared with one computed by direct library calls.
# Usage: mpi_ranks.sh GPRFWI H5COMPARE RUN_FILE WORK_DIR [LIBRARY_GRADIENT]
set -eu
gprfwi=$1 compare=$2 run=$3 work=$4 library=${5:-}
rm -rf "$work" && mkdir -p "$work"
mpi="${MPIEXEC:-mpiexec} --oversubscribe"
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

$mpi -np 1 "$gprfwi" forward "$run" -o "$work/obs1"
$mpi -np 3 "$gprfwi" forward "$run" -o "$work/obs3"
"$compare" "$work/obs1/synthetic.h5" "$work/obs3/synthetic.h5" 0 /traces

# the gradient of a smoothed (starting) model against the true model's data
for np in 1 2 3 4 6; do
  $mpi -np $np "$gprfwi" gradient "$run" --set model.smoothing=0.15 --set data.observed="$work/obs1/synthetic.h5" \
    -o "$work/grad$np" 2>&1 | tee "$work/grad$np.log"
  test -s "$work/grad$np/gradient.h5"
done
for np in 2 3 4 6; do
  "$compare" "$work/grad1/gradient.h5" "$work/grad$np/gradient.h5" 1e-10 @misfit /grad_eps_r /grad_sigma
done
if [ -n "$library" ]; then
  "$library" "$run" "$work/library.h5" model.smoothing=0.15 data.observed="$work/obs1/synthetic.h5"
  "$compare" "$work/library.h5" "$work/grad1/gradient.h5" 1e-12 @misfit /grad_eps_r /grad_sigma
fi

# rank 1 of 2 owns shots 3 and 4: poison shot 4 of the observed data
cp "$work/obs1/synthetic.h5" "$work/poisoned.h5"
"$compare" --poison "$work/poisoned.h5" 4
set +e
$mpi -np 2 "$gprfwi" gradient "$run" --set data.observed="$work/poisoned.h5" -o "$work/fail" > "$work/fail.log" 2>&1
code=$?
set -e
cat "$work/fail.log"
test $code -ne 0
grep -q "\[rank 1\] \[error\].*poisoned.h5: /traces\[4\]\[0\]\[0\] is nan" "$work/fail.log"
grep -q "\[rank 0\] \[error\] rank 1 failed" "$work/fail.log"
test ! -e "$work/fail/gradient.h5"
echo "mpi_ranks: all checks passed"
