#!/usr/bin/env bash
# Makes the worked example's "measured" data (docs/field-data.md): the 2D
# synthetic data of configs/shallow-crosshole-true.yaml turned into what a field
# crosshole survey would deliver, as SEG-Y:
#   - point-source data (the 2D-to-3D line-source filter, the inverse of the
#     correction gprfwi applies to measured data; medium eps_r 6),
#   - recorded 4 ns late (a trigger delay: the source fires at file time 4 ns),
#   - sampled at 0.1 ns (not the simulation's 0.04 ns),
#   - in survey coordinates: boreholes at x = 100.4 m and 103.6 m.
# Needs example-run/shallow-truth/synthetic.h5 (gprfwi forward configs/shallow-crosshole-true.yaml).
#   scripts/make-field-data.sh [GPRFWI] [TRUTH_DIR] [OUT_FILE]
set -euo pipefail
gprfwi=${1:-build/app/gprfwi}
truth=${2:-example-run/shallow-truth}
out=${3:-example-run/field/crosshole-line.sgy}
mkdir -p "$(dirname "$out")"
"$gprfwi" convert "$truth/synthetic.h5" "$out" \
  --line-source to-3d --eps-r 6 --time-zero -4e-9 --dt 1e-10 --origin=-100,0
