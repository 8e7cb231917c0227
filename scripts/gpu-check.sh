#!/usr/bin/env bash
# On a GPU machine: run the GPU tests and the benchmark cases of
# docs/performance.md (whole calls first; Born runs and Hessian-vector
# products), the `gprfwi gradient` command on a
# large case and a timed inversion campaign, writing logs under $OUT (or
# ./gpu-results); with BEFORE=path/to/gprfwi, the same bench cases with that
# (earlier) build afterwards, for figures before and after from one run. With
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
# whole calls from a warm process first (what users get), their time loops beside them
bench() { echo "== gprfwi bench $*"; "$gprfwi" bench --backend cuda "$@" 2>&1 | grep -E "^  (whole|in a call|the first|time loops|kept)|^\{"; }
cases=(
  "--mode forward --shots 8 --nt 2000 --repeats 5"
  "--mode forward --shots 8 --nt 4000 --repeats 3"
  "--mode gradient --shots 8 --nt 2000 --repeats 5 --storage device"
  "--mode gradient --shots 8 --nt 2000 --repeats 5 --storage device --compression bf16"
  "--mode gradient --shots 8 --nt 2000 --repeats 2 --storage device --compression bf16 --shot-groups 1"
  "--mode gradient --shots 8 --nt 2000 --repeats 2 --storage device --compression fp8"
  "--mode gradient --shots 8 --nt 2000 --repeats 2 --storage device --interval 0"
  "--mode gradient --shots 8 --nt 2000 --repeats 3 --checkpoint -1"
  "--mode gradient --shots 8 --nt 2000 --repeats 1 --binomial -1"
  "--mode gradient --shots 4 --nt 1000 --repeats 3 --storage device"
  "--mode gradient --shots 4 --nt 1000 --repeats 3 --storage host"
  "--mode gradient --shots 4 --nt 1000 --repeats 3 --storage host --compression bf16"
  "--mode gradient --shots 4 --nt 1000 --repeats 2 --storage disk --compression bf16"
  "--mode forward --nx 4000 --nz 4000 --shots 1 --nt 1000 --repeats 3"
)
{
  for c in "${cases[@]}"; do bench --pml 20 --stencil 4 $c; done
  # Born runs and Hessian-vector products beside gradient calls of the same batch (docs/performance.md)
  for m in "born" "hessian --gauss-newton" "hessian --gauss-newton --compression bf16" "hessian --compression bf16"; do
    echo "== gprfwi bench --mode $m"
    "$gprfwi" bench --backend cuda --pml 20 --stencil 4 --shots 8 --nt 2000 --repeats 3 --mode $m 2>&1 | grep -E "^  |^\{"
  done
  # a real campaign: 5 iterations of invert on a generated 16-shot campaign (bf16 levels: 16 shots' float
  # levels would not fit on the device)
  echo "== gprfwi bench --mode inversion"
  "$gprfwi" bench --backend cuda --mode inversion --nx 1000 --nz 1000 --shots 16 --nt 2000 --iterations 5 \
    --compression bf16 2>&1 | grep -E "^gprfwi bench|^  |^\{|stage bench: "
} 2>&1 | tee "$out/bench.log"
# the command line: `gprfwi gradient` on 1000 x 1000 nodes, 8 shots, 2000 samples (the example's run file, larger)
cli=$(mktemp -d)
big=(--set grid.nx=1000 --set grid.nz=1000 --set time.nt=2000 --set survey.crosshole.sources.count=8
     --set propagator.backend=cuda)
here=$(cd "$(dirname "$0")/.." && pwd)
"$gprfwi" forward "$here/configs/example.yaml" "${big[@]}" -o "$cli/truth" > "$out/cli.log" 2>&1
start=$(date +%s.%N)
"$gprfwi" gradient "$here/configs/example.yaml" "${big[@]}" --set model.eps_r=6.3 \
  --set data.observed="$cli/truth/synthetic.h5" -o "$cli/grad" >> "$out/cli.log" 2>&1
echo "gprfwi gradient CLI, 1000^2 x 8 shots x 2000 samples: process $(awk "BEGIN { print $(date +%s.%N) - $start }") s" \
  | tee -a "$out/cli.log"
grep -E "gradient in|timing" "$out/cli.log"
rm -rf "$cli"
# the same calls with an earlier build (BEFORE=path/to/gprfwi), for before-and-after figures from one run
before_cases=("${cases[0]}" "${cases[1]}" "${cases[2]}" "${cases[3]}" "${cases[7]}" "${cases[10]}" "${cases[11]}"
              "${cases[13]}")
if [ -n "${BEFORE:-}" ]; then
  for c in "${before_cases[@]}"; do
    echo "== before: gprfwi bench $c"
    "$BEFORE" bench --backend cuda --pml 20 --stencil 4 $c 2>&1 | grep -E "^\{"
  done 2>&1 | tee "$out/bench-before.log"
fi
if [ $profile = 1 ]; then
  ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  "$ncu" --clock-control none -k regex:"step_kernel|frame_|imaging|source_gradient|inject" \
    --launch-skip 60 --launch-count 10 --section SpeedOfLight --section MemoryWorkloadAnalysis \
    --section WarpStateStats --section SchedulerStats \
    "$gprfwi" bench --backend cuda --nx 1000 --nz 1000 --shots 8 --nt 30 --repeats 1 --mode gradient \
    > "$out/ncu.txt" 2>&1
  grep -E "^  [a-z_ ]*void|Duration|DRAM Throughput|L2 Hit Rate|Stall|Issued Warp|No Eligible" "$out/ncu.txt" | head -80
  # the memory system under the bf16 gradient's two step kernels, averaged per
  # kernel (docs/performance.md, "What limits the step kernels"): stalls, DRAM, the L2 and
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
