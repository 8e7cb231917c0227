#!/bin/sh
# Crash safety of a campaign (np = 2, CPU, the regression campaign): kill -9
# of one rank, and of mpirun itself, at several moments of a run (within an
# evaluation or a line search, and just as an iteration's model and
# checkpoint are being written). Each time: the run is over within seconds
# (no rank left behind, none hanging); every finished file in the output
# folder is whole (every HDF5 file reads back, history.csv has each iteration
# once; a killed writer's partial file is only ever its NAME.tmp-PID); then
# `invert --resume` continues from the last complete iteration to
# the end, history.csv holds every iteration exactly once and in order, and
# no temporary file is left.
# Usage: crash.sh GPRFWI DATA_DIR WORK_DIR
set -eu
gprfwi=$1
. "$(dirname "$0")/campaign_common.sh"
prepare "$3" "$2" inversion_truth.yaml inversion_campaign.yaml
# the regression campaign with a shorter full band: the kills below come by
# its 16th history line, and each resume runs the campaign to its end
sed -i 's/iterations: 30}/iterations: 12}/' inversion_campaign.yaml
grep -q 'iterations: 12}' inversion_campaign.yaml || { echo "crash: could not shorten the campaign's full band"; exit 1; }
$mpi -np 1 "$gprfwi" forward inversion_truth.yaml -o truth > truth.log 2>&1 || { cat truth.log; exit 1; }

rows() { if [ -f "$1/history.csv" ]; then wc -l < "$1/history.csv"; else echo 0; fi; }

# every HDF5 file in the folder reads back whole
files_ok() {
  for f in $(find "$1" -name '*.h5'); do
    h5dump -H "$f" > /dev/null 2>&1 || { echo "$f: does not read back"; return 1; }
    h5dump -d /eps_r "$f" > /dev/null 2>&1 || { echo "$f: /eps_r does not read back"; return 1; }
  done
}

# crash NAME VICTIM ROWS DELAY: run until history.csv has ROWS lines, wait
# DELAY s, kill -9 VICTIM (rank: the last rank; mpirun: the launcher)
crash() {
  name=$1 victim=$2 at=$3 delay=$4
  $mpi -np 2 "$gprfwi" invert inversion_campaign.yaml -o "$name" > "$name.log" 2>&1 &
  pid=$!
  while [ "$(rows "$name")" -lt "$at" ]; do
    kill -0 $pid 2>/dev/null || { cat "$name.log"; echo "$name: the run ended before the crash"; exit 1; }
    sleep 0.05
  done
  sleep "$delay"
  if [ "$victim" = rank ]; then
    target=$(pgrep -P $pid -x gprfwi | tail -n 1)
    [ -n "$target" ] || { echo "$name: no rank found"; exit 1; }
  else
    target=$pid
  fi
  kill -9 "$target"
  waited=0
  while kill -0 $pid 2>/dev/null || pgrep -f "gprfwi invert inversion_campaign.yaml -o $name\$" > /dev/null; do
    waited=$((waited + 1))
    if [ $waited -gt 300 ]; then  # 30 s
      ps -ef | grep "[g]prfwi invert"
      echo "$name: still running 30 s after kill -9 of the $victim"
      pkill -9 -f "gprfwi invert inversion_campaign.yaml -o $name\$" || true
      exit 1
    fi
    sleep 0.1
  done
  wait $pid 2>/dev/null || true
  echo "$name: kill -9 of the $victim at $(rows "$name") history lines (+${delay} s): over after $((waited / 10)).$((waited % 10)) s"
  history_ok "$name" || { echo "$name: history.csv after the crash"; exit 1; }
  files_ok "$name"
  # what a kill in the middle of a write leaves: the killed writer's partial
  # files beside the whole ones they were to replace
  mkdir -p "$name/models"
  echo partial > "$name/checkpoint.h5.tmp-$target"
  echo partial > "$name/models/01_low_001.h5.tmp-$target"
  before=$(rows "$name")
  $mpi -np 2 "$gprfwi" invert inversion_campaign.yaml -o "$name" --resume > "$name-resume.log" 2>&1 ||
    { cat "$name-resume.log"; echo "$name: the resumed run failed"; exit 1; }
  history_ok "$name" || { echo "$name: history.csv after the resume"; exit 1; }
  files_ok "$name"
  [ "$(rows "$name")" -gt "$before" ] || { echo "$name: the resume added no iteration"; exit 1; }
  test -s "$name/model_final.h5"
  left=$(find "$name" -name '*.tmp-*')
  [ -z "$left" ] || { echo "$name: temporary files left: $left"; exit 1; }
  echo "$name: resumed from $before to $(rows "$name") history lines"
}

# Every combination of victim and moment; the delays put the kill at
# different points of an iteration (this campaign's iterations take 0.2-0.4 s).
crash rank-early rank 3 0
crash rank-mid rank 6 0.13
crash mpirun-early mpirun 4 0.05
crash mpirun-late mpirun 14 0.21
crash rank-late rank 16 0.31

# The end state of a run resumed from a crash is the uninterrupted run's:
# the same number of iterations in every stage.
$mpi -np 2 "$gprfwi" invert inversion_campaign.yaml -o whole > whole.log 2>&1 || { cat whole.log; exit 1; }
for name in rank-early rank-mid mpirun-early mpirun-late rank-late; do
  [ "$(rows "$name")" -eq "$(rows whole)" ] ||
    { echo "$name: $(rows "$name") history lines, the uninterrupted run $(rows whole)"; exit 1; }
done
echo "crash: all checks passed"
