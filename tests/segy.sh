#!/bin/sh
# SEG-Y end to end, checked with an independent library (segyio's Python
# module, Debian python3-segyio):
#  1. `gprfwi forward` with output.segy writes synthetic.sgy; segyio reads the
#     same geometry (scalars, records, trace numbers), sample interval and
#     samples as synthetic.h5 holds.
#  2. segyio writes a little-endian IBM-float file with the interval in
#     picoseconds and centimetre coordinates; `gprfwi convert` reads it back
#     into the synthetic data.
#  3. field-like data (point source, 4 ns trigger delay, 0.1 ns sampling,
#     survey coordinates; scripts/make-field-data.sh's recipe) are prepared
#     back by the run file (survey.from_data, origin, time_zero, line_source):
#     `gprfwi gradient` on the true model then finds almost no misfit.
#  4. damaged data files are bad input: exit code 2, the file named.
# Usage: segy.sh GPRFWI PYTHON DATA_DIR WORK_DIR
set -eu
gprfwi=$1 python=$2 data=$3 work=$4
rm -rf "$work" && mkdir -p "$work" && cd "$work"
export OMP_NUM_THREADS=1
run() { "$@" > log.txt 2>&1 || { cat log.txt; echo "FAILED: $*"; exit 1; }; }

# 1000 samples (40 ns): every arrival is over before the record ends
run "$gprfwi" forward "$data/small_crosshole.yaml" -o run --set output.segy=true --set time.nt=1000
"$python" - <<'PY'
import sys, h5py, numpy as np, segyio
h = h5py.File("run/synthetic.h5", "r")
traces, rec, src = h["traces"][...], h["receiver_positions"][...], h["source_positions"][...]
with segyio.open("run/synthetic.sgy", ignore_geometry=True) as f:
    assert f.bin[segyio.BinField.Format] == 5, f.format
    assert f.bin[segyio.BinField.SEGYRevision] == 0x0200
    assert f.bin[segyio.BinField.Interval] == 40, f.bin[segyio.BinField.Interval]   # picoseconds
    assert len(f.samples) == traces.shape[2] + 1
    i = 0
    for s in range(traces.shape[0]):
        for r in range(traces.shape[1]):
            th = f.header[i]
            assert th[segyio.TraceField.FieldRecord] == s + 1 and th[segyio.TraceField.TRACE_SEQUENCE_FILE] == i + 1
            assert th[segyio.TraceField.TraceNumber] == r + 1
            c = th[segyio.TraceField.SourceGroupScalar]
            e = th[segyio.TraceField.ElevationScalar]
            assert c == -1000 and e == -1000
            assert abs(th[segyio.TraceField.GroupX] / 1000 - rec[s, r, 0]) < 1e-9
            assert abs(-th[segyio.TraceField.ReceiverGroupElevation] / 1000 - rec[s, r, 1]) < 1e-9
            assert abs(th[segyio.TraceField.SourceX] / 1000 - src[s, 0, 0]) < 1e-9
            assert abs(th[segyio.TraceField.SourceDepth] / 1000 - src[s, 0, 1]) < 1e-9
            t = f.trace[i]
            assert t[0] == 0.0
            assert np.array_equal(t[1:], traces[s, r].astype(np.float32)), (s, r)
            i += 1
    assert i == f.tracecount
# 2. a little-endian IBM-float file as other software writes it
spec = segyio.spec()
spec.format, spec.endian, spec.sorting = 1, "little", None
spec.samples = np.arange(traces.shape[2] + 1)
spec.tracecount = traces.shape[0] * traces.shape[1]
with segyio.create("ibm-le.sgy", spec) as f:
    f.bin.update({segyio.BinField.Interval: 40, segyio.BinField.Samples: len(spec.samples), segyio.BinField.Format: 1})
    i = 0
    for s in range(traces.shape[0]):
        for r in range(traces.shape[1]):
            f.header[i] = {segyio.TraceField.FieldRecord: 100 + s, segyio.TraceField.SourceGroupScalar: -100,
                           segyio.TraceField.ElevationScalar: -100,
                           segyio.TraceField.SourceX: round(src[s, 0, 0] * 100),
                           segyio.TraceField.SourceDepth: round(src[s, 0, 1] * 100),
                           segyio.TraceField.GroupX: round(rec[s, r, 0] * 100),
                           segyio.TraceField.ReceiverGroupElevation: -round(rec[s, r, 1] * 100)}
            f.trace[i] = np.concatenate([[0.0], traces[s, r]]).astype(np.float32)
            i += 1
print("segyio reads gprfwi's SEG-Y; wrote a little-endian IBM file")
PY
run "$gprfwi" convert ibm-le.sgy ibm.h5 --sample-interval-unit picosecond
grep -q "little-endian, format 1, 35 traces in 5 shots, 1001 samples of 4e-11 s" log.txt || { cat log.txt; exit 1; }
# IBM float keeps 21 to 24 mantissa bits
run "$(dirname "$gprfwi")/../tests/h5compare" run/synthetic.h5 ibm.h5 1e-6 /traces /receiver_positions /source_positions
echo "gprfwi reads segyio's little-endian IBM-float file"

# 3. field-like data prepared back
run "$gprfwi" convert run/synthetic.h5 field.sgy --line-source to-3d --eps-r 6 --time-zero -4e-9 --dt 1e-10 --origin=-100,-2
run "$gprfwi" gradient "$data/small_crosshole.yaml" -o grad --set time.nt=1000 --set 'survey={from_data: true}' \
  --set "data={observed: {file: $work/field.sgy, origin: [100.0, 2.0], time_zero: 4.0e-9, line_source: {eps_r: 6.0}}}"
"$python" - <<'PY'
import h5py, numpy as np
d = h5py.File("run/synthetic.h5", "r")["traces"][...]
energy = 0.5 * np.nansum(d * d)
misfit = h5py.File("grad/gradient.h5", "r").attrs["misfit"]
ratio = misfit / energy
print(f"misfit of the prepared field-like data: {ratio:.3g} of the data energy")
# What is lost on the way: mostly the two resamplings (0.04 -> 0.1 -> 0.04 ns,
# Kaiser-windowed sinc: 3.4e-5 relative L2 as a round trip on its own, so
# 1.2e-9 in energy); the line-source filter and its inverse 4e-6, float32
# samples 3e-8. A wrong sign of the filter's phase, of the time shift or of
# the origin costs O(1).
assert ratio < 1e-8, ratio
PY
# 4. damaged files: bad input (exit code 2) that names the file
head -c 5000 /dev/zero | tr '\0' x > junk.sgy
head -c 3000 run/synthetic.sgy > short.sgy
printf 'not HDF5 at all\n' > junk.h5
for f in junk.sgy short.sgy junk.h5; do
  code=0
  case $f in *.sgy) out=out.h5 ;; *) out=out.sgy ;; esac
  "$gprfwi" convert "$f" $out > log.txt 2>&1 || code=$?
  [ $code -eq 2 ] && grep -q "$f" log.txt || { cat log.txt; echo "FAILED: $f gave exit code $code"; exit 1; }
done
echo "damaged data files are reported by name with exit code 2"
echo "segy: all checks passed"
