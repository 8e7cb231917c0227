# Shared by the campaign tests (sourced by inversion.sh, crash.sh and
# disk_full.sh): the work folder, the MPI launcher, and what every campaign
# test checks of a history.

# prepare WORK DATA_DIR FILE...: a fresh WORK holding copies of DATA_DIR/FILE...,
# entered; sets $mpi
prepare() {
  work=$1 data=$2
  shift 2
  rm -rf "$work" && mkdir -p "$work"
  for f in "$@"; do cp "$data/$f" "$work/"; done
  cd "$work"
  export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  mpi="${MPIEXEC:-mpiexec} --oversubscribe"
}

# history_ok DIR: every iteration of DIR/history.csv once, in order within its stage
history_ok() {
  awk -F, 'NR > 1 { key = $1 "," $2; if (seen[key]++) { print "twice: " key; bad = 1 }
    if (($1 in last) && $2 != last[$1] + 1) { print "gap before " key; bad = 1 }; last[$1] = $2 }
    END { exit bad }' "$1/history.csv"
}

# stop_campaign PID DIR ROWS LOG: once DIR/history.csv has ROWS lines, stops
# the campaign PID with SIGUSR1 and checks that it exits with code 3
stop_campaign() {
  while [ "$(cat "$2/history.csv" 2>/dev/null | wc -l)" -lt "$3" ]; do
    kill -0 "$1" 2>/dev/null || { cat "$4"; echo "the campaign ended before it could be stopped"; exit 1; }
    sleep 0.1
  done
  kill -USR1 "$1"
  set +e
  wait "$1"
  stopped_code=$?
  set -e
  [ "$stopped_code" -eq 3 ] || { cat "$4"; echo "stopped campaign: exit code $stopped_code (3 expected)"; exit 1; }
}
