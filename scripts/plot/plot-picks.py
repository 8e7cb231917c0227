#!/usr/bin/env python3
"""First-break picks over the gathers they were picked on, for quality control.

  plot-picks.py TRACES.h5 PICKS.csv [--shots 0,3|all] [-o DIR]

TRACES.h5: traces in the synthetic.h5 layout (docs/hdf5.md), e.g. the observed
data of a tomography run; PICKS.csv: `gprfwi tomography`'s picks.csv (shot,
receiver, time_s). Each shot's gather (receivers across, time down, each trace
scaled to its own peak) with its picks as red marks; writes picks_shotNNN.png.
"""
import csv
import math

import numpy as np

import gprfwi_plot as gp


def main():
    p = gp.parser(__doc__.split("\n\n")[0])
    p.add_argument("traces")
    p.add_argument("picks")
    p.add_argument("--shots", default="0", help="comma-separated shot indices, or all")
    a = p.parse_args()
    with gp.open_h5(a.traces) as f:
        if "traces" not in f:
            gp.fail(f"{a.traces}: no /traces dataset (not a traces file)")
        traces = np.array(f["traces"], float)
        counts = np.array(f["receiver_count"], int)
        dt = float(f.attrs["dt"])
    picks = {}
    try:
        with open(a.picks) as f:
            rows = csv.reader(line for line in f if not line.startswith("#"))
            header = next(rows, None)
            if header != ["shot", "receiver", "time_s"]:
                gp.fail(f"{a.picks}: expected the header shot,receiver,time_s, got {header}")
            for line, row in enumerate(rows, start=2):
                if len(row) != 3:
                    gp.fail(f"{a.picks}: line {line}: expected shot,receiver,time_s")
                picks[(int(row[0]), int(row[1]))] = float(row[2])
    except OSError as e:
        gp.fail(f"{a.picks}: {e}")
    shots = range(traces.shape[0]) if a.shots == "all" else [int(s) for s in a.shots.split(",")]
    for s in shots:
        if not 0 <= s < traces.shape[0]:
            gp.fail(f"shot {s} is not in {a.traces} ({traces.shape[0]} shots)")
        n = counts[s]
        gather = traces[s, :n, :]
        peak = np.max(np.abs(gather), axis=1, keepdims=True)
        gather = gather / np.where(peak > 0, peak, 1.0)
        nt = gather.shape[1]
        fig, ax = gp.plt.subplots(figsize=(8, 6))
        ax.imshow(gather.T, aspect="auto", cmap="gray", vmin=-1, vmax=1,
                  extent=(-0.5, n - 0.5, nt * dt * 1e9, dt * 1e9), interpolation="nearest")
        t = [picks.get((s, r), math.nan) for r in range(n)]
        ax.plot(range(n), np.array(t) * 1e9, "r_", ms=14, mew=2, label="first break")
        ax.set_xlabel("receiver")
        ax.set_ylabel("time (ns)")
        finite = [v for v in t if not math.isnan(v)]
        if finite:
            ax.set_ylim(min(nt * dt, max(finite) * 1.6) * 1e9, 0)
        ax.set_title(f"shot {s}: traces (each to its own peak) and picks")
        ax.legend(loc="lower right")
        gp.save(fig, gp.out_path(a, f"picks_shot{s:03d}.png"))


if __name__ == "__main__":
    main()
