#!/usr/bin/env python3
"""How close an inversion came to the truth, iteration by iteration, beside
the resolution oracles (../../docs/inversion.md, "Benchmarks").

  inversion-metrics.py TRUE.h5 START.h5 RUN_DIR --frequency HZ --eps-background E
                       [--region X0 X1 Z0 Z1] [--name CASE] [-o DIR] [--json FILE]

TRUE.h5, START.h5: models in the model.h5 layout (/eps_r, /sigma [nz, nx],
attributes dx, dz). RUN_DIR: an `invert` output folder (history.csv,
models/NN_STAGE_III.h5 after each iteration, model_final.h5).

Per parameter and per iteration (and so per gradient evaluation, from the
history): the relative L2 error |m - m_true| / |m_true|, the Pearson
correlation of m - mean(m) with m_true - mean(m_true) and the SSIM against
the truth (Wang et al. 2004: Gaussian window of 1.5 nodes, C1 = (0.01 L)^2,
C2 = (0.03 L)^2, L the truth's range), all over the region (a box in metres:
between and around the antennas). The same for the start and for the
oracles: the truth blurred by a Gaussian whose full width at half maximum is
1/2 and 1/4 of the background's dominant wavelength c0 / (f sqrt(eps)).
Writes NAME_models.png (truth, start, result and the lambda/4 oracle of each
parameter), NAME_errors.png (error against propagations, oracles as lines)
and, with --json, every number. Needs numpy, h5py and matplotlib.
"""
import csv
import glob
import json
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gprfwi_plot as gp  # noqa: E402

C0 = 299792458.0
PARAMETERS = ("eps_r", "sigma")


def read_model(path):
    with gp.open_h5(path) as f:
        try:
            return {p: np.array(f[p], float) for p in PARAMETERS}, float(f.attrs["dx"]), float(f.attrs["dz"])
        except KeyError as e:
            gp.fail(f"{path}: not a model file (no {e})")


def gaussian_blur(field, sd_z, sd_x, mode="symmetric"):
    """Separable Gaussian blur (standard deviations in nodes), edges mirrored."""
    out = np.asarray(field, float)
    for axis, sd in ((0, sd_z), (1, sd_x)):
        if sd <= 0:
            continue
        r = int(np.ceil(4 * sd))
        k = np.exp(-0.5 * (np.arange(-r, r + 1) / sd) ** 2)
        k /= k.sum()
        pad = [(0, 0), (0, 0)]
        pad[axis] = (r, r)
        padded = np.pad(out, pad, mode=mode)
        out = np.apply_along_axis(lambda v: np.convolve(v, k, mode="valid"), axis, padded)
    return out


def ssim_map(a, b, data_range):
    """Structural similarity of a and b at every node (Gaussian window, sd 1.5 nodes)."""
    c1, c2 = (0.01 * data_range) ** 2, (0.03 * data_range) ** 2
    w = lambda f: gaussian_blur(f, 1.5, 1.5)  # noqa: E731
    mu_a, mu_b = w(a), w(b)
    var_a = w(a * a) - mu_a**2
    var_b = w(b * b) - mu_b**2
    cov = w(a * b) - mu_a * mu_b
    return ((2 * mu_a * mu_b + c1) * (2 * cov + c2)) / ((mu_a**2 + mu_b**2 + c1) * (var_a + var_b + c2))


def scores(m, truth, mask):
    """Relative L2 error, Pearson correlation and SSIM of m against truth over the mask."""
    t, v = truth[mask], m[mask]
    err = float(np.linalg.norm(v - t) / np.linalg.norm(t))
    dt, dv = t - t.mean(), v - v.mean()
    den = np.linalg.norm(dt) * np.linalg.norm(dv)
    pearson = float(dt @ dv / den) if den > 0 else 0.0
    data_range = float(t.max() - t.min()) or float(abs(t.max())) or 1.0
    ssim = float(ssim_map(m, truth, data_range)[mask].mean())
    return {"error": err, "pearson": pearson, "ssim": ssim}


def iteration_models(run_dir):
    """(stage index, stage, iteration, path) of each saved model, in order."""
    found = []
    for path in glob.glob(os.path.join(run_dir, "models", "*.h5")):
        m = re.match(r"(\d+)_(.+)_(\d+)\.h5$", os.path.basename(path))
        if m:
            found.append((int(m.group(1)), m.group(2), int(m.group(3)), path))
    return sorted(found)


def history(run_dir):
    path = os.path.join(run_dir, "history.csv")
    if not os.path.exists(path):
        gp.fail(f"{path}: no such file (is {run_dir} an invert output folder?)")
    with open(path) as f:
        return list(csv.DictReader(f))


def main():
    p = gp.parser(__doc__.split("\n\n")[0])
    p.add_argument("true")
    p.add_argument("start")
    p.add_argument("run_dir")
    p.add_argument("--frequency", type=float, required=True, help="dominant frequency of the wavelet, Hz")
    p.add_argument("--eps-background", type=float, required=True, help="relative permittivity of the background")
    p.add_argument("--region", type=float, nargs=4, metavar=("X0", "X1", "Z0", "Z1"),
                   help="score this box only (metres); default: the whole model")
    p.add_argument("--name", default="inversion", help="prefix of the figures' file names")
    p.add_argument("--json", help="write every number to this file")
    a = p.parse_args()

    truth, dx, dz = read_model(a.true)
    start, _, _ = read_model(a.start)
    nz, nx = truth["eps_r"].shape
    mask = np.ones((nz, nx), bool)
    if a.region:
        X, Z = np.meshgrid(np.arange(nx) * dx, np.arange(nz) * dz)
        mask = (X >= a.region[0]) & (X <= a.region[1]) & (Z >= a.region[2]) & (Z <= a.region[3])
        if not mask.any():
            gp.fail(f"--region {a.region} holds no node of the model")
    lam = C0 / (a.frequency * np.sqrt(a.eps_background))
    oracles = {}
    for f in (0.5, 0.25):
        sd = f * lam / 2.3548
        oracles[f] = {q: gaussian_blur(truth[q], sd / dz, sd / dx) for q in PARAMETERS}

    def score_model(m):
        return {q: scores(m[q], truth[q], mask) for q in PARAMETERS}

    result = {"name": a.name, "wavelength_m": lam, "region": a.region, "start": score_model(start),
              "oracle_half": score_model(oracles[0.5]), "oracle_quarter": score_model(oracles[0.25]),
              "iterations": []}
    rows = history(a.run_dir)
    # the campaign's evaluations and propagations so far, per (stage, iteration); the history counts per stage
    # (propagations: forward, Born and adjoint runs; histories before that column: 2 an evaluation)
    evaluations, before, stage, in_stage = {}, (0, 0), None, (0, 0)
    for r in rows:
        if r["stage"] != stage:
            before, stage, in_stage = (before[0] + in_stage[0], before[1] + in_stage[1]), r["stage"], (0, 0)
        ev = int(r["evaluations"])
        in_stage = (ev, int(r["propagations"]) if r.get("propagations") else 2 * ev)
        evaluations[(stage, int(r["iteration"]))] = (before[0] + in_stage[0], before[1] + in_stage[1], float(r["misfit"]))
    for _, stage, iteration, path in iteration_models(a.run_dir):
        m, _, _ = read_model(path)
        ev, prop, misfit = evaluations.get((stage, iteration), (None, None, None))
        result["iterations"].append({"stage": stage, "iteration": iteration, "evaluations": ev, "propagations": prop,
                                     "misfit": misfit, **score_model(m)})
    final = os.path.join(a.run_dir, "model_final.h5")
    if os.path.exists(final):
        final_model, _, _ = read_model(final)
        result["final"] = score_model(final_model)
    elif result["iterations"]:
        final_model = read_model(iteration_models(a.run_dir)[-1][3])[0]
        result["final"] = {q: result["iterations"][-1][q] for q in PARAMETERS}
    else:
        gp.fail(f"{a.run_dir}: no model_final.h5 and no models/ to score")
    for q in PARAMETERS:
        base = result["start"][q]["error"]
        for key in ("final", "oracle_half", "oracle_quarter"):
            result[key][q]["closer_than_start"] = 1 - result[key][q]["error"] / base if base > 0 else 0.0

    # figures: truth, start, result, oracle lambda/4; and error against evaluations
    fig, axes = gp.plt.subplots(2, 4, figsize=(18, 8), gridspec_kw={"hspace": 0.35})
    for row, q in enumerate(PARAMETERS):
        label, cmap = gp.UNITS[q]
        scale = 1000.0 if q == "sigma" else 1.0
        vmin, vmax = truth[q].min() * scale, truth[q].max() * scale
        panels = [("truth", truth[q]), ("start", start[q]), ("result", final_model[q]),
                  ("oracle $\\lambda$/4", oracles[0.25][q])]
        for col, (title, field) in enumerate(panels):
            ax = axes[row, col]
            im = ax.imshow(field * scale, extent=(0, (nx - 1) * dx, (nz - 1) * dz, 0), cmap=cmap, vmin=vmin,
                           vmax=vmax, interpolation="nearest")
            if a.region:
                x0, x1, z0, z1 = a.region
                ax.plot([x0, x1, x1, x0, x0], [z0, z0, z1, z1, z0], "w--", lw=0.8)
            err = scores(field, truth[q], mask)["error"]
            ax.set_title(f"{q} {title}" + ("" if title == "truth" else f" (error {err:.3f})"), fontsize=9)
            ax.set_xlabel("x (m)")
            ax.set_ylabel("z (m)")
        gp.plt.colorbar(im, ax=axes[row, :].tolist(), label=label, shrink=0.85)
    gp.save(fig, gp.out_path(a, f"{a.name}_models.png"))

    fig, axes = gp.plt.subplots(1, 2, figsize=(12, 4))
    for ax, q in zip(axes, PARAMETERS):
        its = [r for r in result["iterations"] if r["evaluations"] is not None]
        ax.plot([0] + [r["propagations"] for r in its], [result["start"][q]["error"]] + [r[q]["error"] for r in its],
                "o-", ms=3, label="inversion")
        for key, style, name in (("oracle_half", "--", "oracle $\\lambda$/2"), ("oracle_quarter", ":", "oracle $\\lambda$/4")):
            ax.axhline(result[key][q]["error"], ls=style, color="k", lw=1, label=name)
        ax.set_xlabel("propagations (forward, Born and adjoint runs)")
        ax.set_ylabel(f"relative L2 error of {q}")
        ax.set_title(a.name)
        ax.legend(fontsize=8)
    gp.save(fig, gp.out_path(a, f"{a.name}_errors.png"))

    print(f"{a.name}: lambda = {lam:.3g} m; relative L2 error over the {'region' if a.region else 'model'} "
          f"(closer than the start), Pearson, SSIM")
    for key in ("start", "final", "oracle_half", "oracle_quarter"):
        line = "  ".join(f"{q} {result[key][q]['error']:.4f}"
                         + (f" ({result[key][q]['closer_than_start']:+.0%})" if key != "start" else "")
                         + f" r {result[key][q]['pearson']:.3f} ssim {result[key][q]['ssim']:.3f}" for q in PARAMETERS)
        print(f"  {key:15s} {line}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)
        print(f"wrote {a.json}")


if __name__ == "__main__":
    main()
