#!/bin/sh
# scripts/plot/: each script renders its figures from a small run, and each
# file it writes is a real PNG image (signature and a plausible size); bad
# input stops with exit code 2 and a message.
# Usage: plots.sh GPRFWI PYTHON PLOT_DIR RUN_FILE WORK_DIR
set -eu
gprfwi=$1 python=$2 plot=$3 run=$4 work=$5
rm -rf "$work" && mkdir -p "$work" && cd "$work"
export OMP_NUM_THREADS=1
"$gprfwi" forward "$run" -o truth
"$gprfwi" gradient "$run" --set model.smoothing=0.15 --set data.observed="$work/truth/synthetic.h5" -o grad
"$gprfwi" forward "$run" --set model.smoothing=0.15 -o start
"$gprfwi" invert "$run" --set model.smoothing=0.15 --set data.observed="$work/truth/synthetic.h5" \
  --set 'inversion={stages: [{name: a, max_frequency: 2.0e8, parameters: [eps_r], iterations: 2}, {name: b, parameters: [eps_r, sigma], iterations: 2}]}' \
  --set inversion.true_model="$work/truth/model.h5" -o inv

"$python" "$plot/plot-model.py" truth/model.h5 --traces truth/synthetic.h5 -o png
"$python" "$plot/plot-model.py" grad/gradient.h5 -o png
"$python" "$plot/plot-model.py" inv/model_final.h5 -o png
"$python" "$plot/plot-gathers.py" start/synthetic.h5 --observed truth/synthetic.h5 --shots 0,4 -o png
"$python" "$plot/plot-history.py" inv -o png
"$python" "$plot/compare-methods.py" inv inv --labels a b -o png

expected="model_eps_r model_sigma gradient_grad_eps_r gradient_grad_sigma model_final_eps_r model_final_sigma
  gather_shot000 gather_shot004 traces_shot000 traces_shot004 history methods"
for name in $expected; do
  f=png/$name.png
  test -s "$f" || { echo "missing $f"; exit 1; }
  sig=$(od -An -tx1 -N8 "$f" | tr -d ' \n')
  [ "$sig" = "89504e470d0a1a0a" ] || { echo "$f is not a PNG ($sig)"; exit 1; }
  size=$(wc -c < "$f")
  [ "$size" -gt 10000 ] || { echo "$f is only $size bytes"; exit 1; }
  echo "ok $f ($size bytes)"
done
# bad input: a clear message and exit code 2
set +e
"$python" "$plot/plot-model.py" absent.h5 -o png 2> err.txt; code=$?
set -e
[ $code -eq 2 ] && grep -q "absent.h5: no such file" err.txt
echo "plots: all checks passed"
