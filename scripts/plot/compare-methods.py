#!/usr/bin/python3
"""PNG of inversions side by side against their cost: each run's misfit
(relative to its first) and, where the campaign knew the true model, its
model errors, against the propagations (forward, Born and adjoint runs)
summed over its stages, so that optimisers compare at equal cost.

  compare-methods.py RUN_DIR [RUN_DIR ...] [--labels NAME ...] [-o DIR]
"""

import csv
import os

from gprfwi_plot import fail, out_path, parser, plt, save


def cost_curve(path):
    """Rows of history.csv with the campaign's propagations so far (the history counts per stage)."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows or "propagations" not in rows[0]:
        fail(f"{path}: no propagations column (a history written before it, or not a gprfwi history)")
    out, before, stage, last = [], 0, None, 0
    for r in rows:
        if r["stage"] != stage:
            before, stage = before + last, r["stage"]
        last = int(r["propagations"])
        out.append((before + last, r))
    return out


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("runs", nargs="+", help="inversion output folders (or their history.csv)")
    p.add_argument("--labels", nargs="+", help="one name per run (default: the folders' names)")
    args = p.parse_args()
    labels = args.labels or [os.path.basename(os.path.normpath(r)) for r in args.runs]
    if len(labels) != len(args.runs):
        fail(f"{len(labels)} labels for {len(args.runs)} runs")
    curves = []
    for run in args.runs:
        path = os.path.join(run, "history.csv") if os.path.isdir(run) else run
        if not os.path.exists(path):
            fail(f"{path}: no such file")
        curves.append(cost_curve(path))
    errors = all("error_eps_r" in c[0][1] for c in curves)
    fig, axes = plt.subplots(1, 3 if errors else 1, figsize=(15 if errors else 6, 4), squeeze=False)
    for label, c in zip(labels, curves):
        x = [p for p, _ in c]
        j0 = float(c[0][1]["misfit"])
        axes[0, 0].semilogy(x, [float(r["misfit"]) / j0 for _, r in c], "o-", ms=3, label=label)
        if errors:
            axes[0, 1].plot(x, [float(r["error_eps_r"]) for _, r in c], "o-", ms=3, label=label)
            axes[0, 2].plot(x, [float(r["error_sigma"]) for _, r in c], "o-", ms=3, label=label)
    titles = ["misfit / first misfit", "relative error of $\\varepsilon_r$", "relative error of $\\sigma$"]
    for ax, title in zip(axes[0], titles):
        ax.set_xlabel("propagations (forward, Born and adjoint runs)")
        ax.set_title(title)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    save(fig, out_path(args, "methods.png"))


if __name__ == "__main__":
    main()
