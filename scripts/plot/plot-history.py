#!/usr/bin/python3
"""PNG of an inversion's convergence from its history.csv: the misfit
relative to each stage's start, iteration by iteration across stages, and the
model errors when the campaign knew the true model.

  plot-history.py RUN_DIR|history.csv [-o DIR]
"""

import csv
import os

from gprfwi_plot import fail, out_path, parser, plt, save


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("run", help="inversion output folder, or its history.csv")
    args = p.parse_args()
    path = os.path.join(args.run, "history.csv") if os.path.isdir(args.run) else args.run
    if not os.path.exists(path):
        fail(f"{path}: no such file")
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows or "misfit_relative" not in rows[0]:
        fail(f"{path}: not a gprfwi history (no misfit_relative column)")
    errors = "error_eps_r" in rows[0]
    fig, axes = plt.subplots(2 if errors else 1, 1, figsize=(8, 7 if errors else 4), sharex=True, squeeze=False)
    x = list(range(len(rows)))
    stages = []
    for i, r in enumerate(rows):
        if not stages or stages[-1][0] != r["stage"]:
            stages.append((r["stage"], i))
    ax = axes[0, 0]
    ax.semilogy(x, [float(r["misfit_relative"]) for r in rows], "o-", ms=3)
    ax.set_ylabel("misfit / stage's first misfit")
    ax.set_title(f"{path}: {len(rows)} rows, {len(stages)} stage(s)")
    if errors:
        ax = axes[1, 0]
        ax.plot(x, [float(r["error_eps_r"]) for r in rows], "o-", ms=3, label="$\\varepsilon_r$")
        ax.plot(x, [float(r["error_sigma"]) for r in rows], "s-", ms=3, label="$\\sigma$")
        ax.set_ylabel("relative model error")
        ax.legend()
    for a in axes[:, 0]:
        for name, start in stages:
            a.axvline(start, color="0.6", lw=0.8, ls=":")
            a.text(start + 0.2, a.get_ylim()[1], name, va="top", fontsize=8, color="0.3")
        a.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("row of history.csv (iteration 0 of each stage is its start)")
    save(fig, out_path(args, "history.png"))


if __name__ == "__main__":
    main()
