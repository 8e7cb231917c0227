# Sourced by the gprfwi SLURM scripts: runs "$@" as an MPI job with the
# launcher chosen by LAUNCHER (srun, the default under SLURM, or mpirun),
# one rank per task. The job runs in the background so that signals reach
# this shell (trap) while it waits.
#   LAUNCHER=srun|mpirun   GPRFWI=/path/to/gprfwi (default: gprfwi on PATH)
GPRFWI=${GPRFWI:-gprfwi}
LAUNCHER=${LAUNCHER:-srun}
ntasks=${SLURM_NTASKS:-1}
# CPU backend: give each rank its share of the cores; the GPU backend binds GPU local_rank % GPUs
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-${SLURM_CPUS_PER_TASK:-1}}

launch() {
  case "$LAUNCHER" in
    srun) srun --ntasks="$ntasks" --cpu-bind=cores "$GPRFWI" "$@" & ;;
    mpirun) mpirun -np "$ntasks" --bind-to none "$GPRFWI" "$@" & ;;
    *) echo "LAUNCHER must be srun or mpirun, got '$LAUNCHER'" >&2; return 2 ;;
  esac
  child=$!
  # wait returns early when a trapped signal arrives; wait again for the exit code
  while :; do
    wait "$child"
    code=$?
    kill -0 "$child" 2>/dev/null || return "$code"
  done
}

# Forward SIGUSR1/SIGTERM (SLURM's --signal=B:USR1@T, scancel --signal) to the
# launcher, which passes them on to every rank: gprfwi then finishes the
# evaluation in flight, keeps its checkpoint and exits with code 3.
forward_signal() { [ -n "${child:-}" ] && kill -s "$1" "$child" 2>/dev/null; }
trap 'forward_signal USR1' USR1
trap 'forward_signal TERM' TERM
