#!/usr/bin/env bash
# On a GPU machine: run the GPU tests and the benchmark cases of
# docs/performance.md, writing logs under $OUT (or ./gpu-results). With
# --profile, also an Nsight Compute profile of one step's kernels, and of the memory
# system under the bf16 gradient's step kernels (stalls, DRAM, L2 and its fabric).
#   scripts/gpu-check.sh [--profile] [BIN_DIR]   BIN_DIR holds gprfwi and test_backends
set -uo pipefail
profile=0
[ "${1:-}" = --profile ] && { profile=1; shift; }
bin=${1:-build}
out=${OUT:-gpu-results}
mkdir -p "$out"
find_bin() { for d in "$bin" "$bin/app" "$bin/tests"; do [ -x "$d/$1" ] && { echo "$d/$1"; return; }; done; command -v "$1"; }
gprfwi=$(find_bin gprfwi)
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv | tee "$out/gpu.txt"
$(find_bin test_backends) 2>&1 | tee "$out/test_backends.log" | grep -E "parity|dot-product|FAILED|PASSED|SKIPPED" | head -40
bench() { echo "== gprfwi bench $*"; "$gprfwi" bench --backend cuda "$@" 2>&1 | tail -6; }
{
  bench --nx 1000 --nz 1000 --pml 20 --shots 8 --nt 2000 --stencil 4 --mode forward --repeats 3
  bench --nx 1000 --nz 1000 --pml 20 --shots 8 --nt 2000 --stencil 4 --mode gradient --repeats 2 --storage device
  bench --nx 1000 --nz 1000 --pml 20 --shots 8 --nt 2000 --stencil 4 --mode gradient --compression bf16 --repeats 2 --storage device
  bench --nx 1000 --nz 1000 --pml 20 --shots 8 --nt 2000 --stencil 4 --mode gradient --compression bf16 --repeats 2 --storage device --shot-groups 1
  bench --nx 1000 --nz 1000 --pml 20 --shots 8 --nt 2000 --stencil 4 --mode gradient --compression fp8 --repeats 2 --storage device
  bench --nx 1000 --nz 1000 --pml 20 --shots 8 --nt 2000 --stencil 4 --mode gradient --interval 0 --repeats 2 --storage device
  bench --nx 1000 --nz 1000 --pml 20 --shots 8 --nt 2000 --stencil 4 --mode gradient --checkpoint -1 --repeats 2
  bench --nx 1000 --nz 1000 --pml 20 --shots 8 --nt 2000 --stencil 4 --mode gradient --binomial -1 --repeats 1
  bench --nx 1000 --nz 1000 --pml 20 --shots 8 --nt 2000 --stencil 4 --mode gradient --binomial 4 --repeats 1
  bench --nx 1000 --nz 1000 --pml 20 --shots 4 --nt 1000 --stencil 4 --mode gradient --repeats 2 --storage device
  bench --nx 1000 --nz 1000 --pml 20 --shots 4 --nt 1000 --stencil 4 --mode gradient --repeats 2 --storage host
  bench --nx 1000 --nz 1000 --pml 20 --shots 4 --nt 1000 --stencil 4 --mode gradient --repeats 2 --storage host --compression bf16
  bench --nx 1000 --nz 1000 --pml 20 --shots 4 --nt 1000 --stencil 4 --mode gradient --repeats 2 --storage disk --compression bf16
  bench --nx 4000 --nz 4000 --pml 20 --shots 1 --nt 1000 --stencil 4 --mode forward --repeats 3
} 2>&1 | tee "$out/bench.log"
if [ $profile = 1 ]; then
  ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  "$ncu" --clock-control none -k regex:"step_kernel|frame_|imaging|source_gradient|inject" \
    --launch-skip 60 --launch-count 10 --section SpeedOfLight --section MemoryWorkloadAnalysis \
    --section WarpStateStats --section SchedulerStats \
    "$gprfwi" bench --backend cuda --nx 1000 --nz 1000 --shots 8 --nt 30 --repeats 1 --mode gradient \
    > "$out/ncu.txt" 2>&1
  grep -E "^  [a-z_ ]*void|Duration|DRAM Throughput|L2 Hit Rate|Stall|Issued Warp|No Eligible" "$out/ncu.txt" | head -80
  # the memory system under the bf16 gradient's two step kernels, averaged per
  # kernel (docs/performance.md, fourteenth session): stalls, DRAM, the L2 and
  # the fabric between the L2's two partitions, what L1 passes on to L2
  metrics="gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,smsp__issue_active.avg.pct_of_peak_sustained_active"
  metrics="$metrics,sm__warps_active.avg.pct_of_peak_sustained_active,l1tex__t_sector_hit_rate.pct,l1tex__m_xbar2l1tex_read_bytes.sum"
  metrics="$metrics,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"
  metrics="$metrics,breakdown:lts__throughput.avg.pct_of_peak_sustained_elapsed"
  "$ncu" --clock-control none --csv --print-summary per-kernel --metrics "$metrics" -k regex:"step_kernel" \
    --launch-skip 44 --launch-count 12 "$gprfwi" bench --backend cuda --nx 1000 --nz 1000 --shots 8 --nt 50 \
    --repeats 1 --mode gradient --compression bf16 > "$out/ncu-memory.csv" 2> "$out/ncu-memory.log"
  awk -F'","' '$4 ~ /step_kernel/ && $11 ~ /time_dur|ltcfabric|dram__bytes|scoreboard|hit_rate|warps_active|issue_active|xbar2l1tex/ {
      k = $4; sub(/\(.*/, "", k); sub(/.*::/, "", k); v = $15; sub(/"$/, "", v)
      printf "%-36s %-72s %s %s\n", k, $11, v, $12 }' "$out/ncu-memory.csv"
fi
