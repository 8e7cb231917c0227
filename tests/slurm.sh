#!/bin/bash
# scripts/slurm/ without SLURM: a fake `srun` (runs the ranks with mpiexec) and
# a fake `scancel` (records its arguments) on PATH. The segment chain of
# campaign-segments.sbatch starts a campaign, is signalled as SLURM would
# before a time limit (USR1 to the batch shell), checkpoints and hands over to
# the next segment, which resumes and finishes; a third segment finds the
# campaign done and cancels the array. The same with LAUNCHER=mpirun; the
# sweep runs one line of its list; the single-node script passes options on.
# Usage: slurm.sh GPRFWI SCRIPTS_DIR DATA_DIR WORK_DIR
set -eu
gprfwi=$1 scripts=$2 data=$3 work=$4
rm -rf "$work" && mkdir -p "$work/bin" && cd "$work"
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 GPRFWI=$gprfwi
mpiexec=${MPIEXEC:-mpiexec}
cat > bin/srun <<FAKE
#!/bin/sh
# fake srun: --ntasks=N [other options] COMMAND...
n=1
while [ \$# -gt 0 ]; do case "\$1" in --ntasks=*) n=\${1#--ntasks=}; shift ;; -*) shift ;; *) break ;; esac; done
echo "srun: \$n task(s): \$*" >> "$work/srun.log"
exec $mpiexec --oversubscribe -np "\$n" "\$@"
FAKE
cat > bin/scancel <<FAKE
#!/bin/sh
echo "scancel \$*" >> "$work/scancel.log"
FAKE
cat > bin/mpirun <<FAKE
#!/bin/sh
# mpirun as the scripts call it: drop --bind-to none, keep the rest
echo "mpirun: \$*" >> "$work/mpirun.log"
[ "\$3" = "--bind-to" ] && { np=\$2; shift 4; exec $mpiexec --oversubscribe -np "\$np" "\$@"; }
exec $mpiexec --oversubscribe "\$@"
FAKE
chmod +x bin/*
export PATH="$work/bin:$PATH"
cp "$data/inversion_truth.yaml" "$data/inversion_campaign.yaml" .
"$gprfwi" forward inversion_truth.yaml -o truth > forward.log 2>&1

segment() {  # segment TASK_ID LAUNCHER [seconds before the "time limit" signal]
  SLURM_ARRAY_JOB_ID=4242 SLURM_ARRAY_TASK_ID=$1 SLURM_NTASKS=2 SLURM_SUBMIT_DIR="$scripts/../.." LAUNCHER=$2 \
    bash "$scripts/campaign-segments.sbatch" inversion_campaign.yaml "out-$2" > "seg-$2-$1.log" 2>&1 &
  local pid=$!
  if [ -n "${3:-}" ]; then
    while [ "$(cat "out-$2/history.csv" 2>/dev/null | wc -l)" -lt "$3" ]; do
      kill -0 $pid 2>/dev/null || break
      sleep 0.2
    done
    kill -USR1 $pid  # what --signal=B:USR1@T does
  fi
  wait $pid
}

for launcher in srun mpirun; do
  segment 1 $launcher 4
  grep -q "checkpointed before the time limit" "seg-$launcher-1.log" || { cat "seg-$launcher-1.log"; exit 1; }
  test -e "out-$launcher/checkpoint.h5" && test ! -e "out-$launcher/model_final.h5"
  rows=$(wc -l < "out-$launcher/history.csv")
  segment 2 $launcher
  grep -q "resume" "seg-$launcher-2.log" && grep -q "campaign done" "seg-$launcher-2.log" || { cat "seg-$launcher-2.log"; exit 1; }
  test -s "out-$launcher/model_final.h5"
  test "$(wc -l < "out-$launcher/history.csv")" -gt "$rows"
  awk -F, 'NR > 1 { if (seen[$1 "," $2]++) { print "twice: " $1 " " $2; bad = 1 } } END { exit bad }' "out-$launcher/history.csv"
  segment 3 $launcher
  grep -q "already done" "seg-$launcher-3.log" || { cat "seg-$launcher-3.log"; exit 1; }
  echo "segments with $launcher: ok"
done
grep -q "srun: 2 task(s): $gprfwi invert inversion_campaign.yaml -o out-srun --resume" srun.log
grep -q "scancel 4242" scancel.log
test -s mpirun.log

# a sweep task runs its line of the list, with OUT_ROOT/<task> as the output
printf '# run files\ninversion_truth.yaml --set time.nt=200\ninversion_truth.yaml --set time.nt=300\n' > runs.txt
SLURM_ARRAY_TASK_ID=2 SLURM_NTASKS=1 COMMAND=forward OUT_ROOT=sweep bash "$scripts/sweep.sbatch" runs.txt > sweep.log 2>&1
grep -q "task 2: gprfwi forward inversion_truth.yaml --set time.nt=300 -o sweep/2" sweep.log && test -s sweep/2/synthetic.h5
# single node: options are passed on; exit codes come back
SLURM_NTASKS=2 COMMAND=check bash "$scripts/single-node.sbatch" inversion_campaign.yaml --ranks 2 > single.log 2>&1
grep -q "rank    1: 5 shot(s) (6..10)" single.log
set +e
SLURM_NTASKS=1 COMMAND=check bash "$scripts/single-node.sbatch" absent.yaml > bad.log 2>&1
code=$?
set -e
[ $code -eq 2 ] || { cat bad.log; exit 1; }
echo "slurm: all checks passed"
