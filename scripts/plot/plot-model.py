#!/usr/bin/python3
"""PNG images of a gprfwi model or gradient file (model.h5, model_final.h5,
models/*.h5, checkpoint.h5, gradient.h5): one image per array, axes in metres,
a colour bar in physical units. Optionally marks the sources and receivers of
a traces file.

  plot-model.py FILE.h5 [--traces synthetic.h5] [-o DIR]
"""

import os

import numpy as np

from gprfwi_plot import UNITS, fail, image, open_h5, out_path, parser, plt, save


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("file", help="model or gradient HDF5 file")
    p.add_argument("--traces", help="traces file whose source and receiver positions to mark")
    args = p.parse_args()
    f = open_h5(args.file)
    names = [n for n in ("eps_r", "sigma", "mu_r", "grad_eps_r", "grad_sigma") if n in f]
    if not names:
        fail(f"{args.file}: no /eps_r, /sigma or /grad_* datasets")
    dx, dz = float(f.attrs.get("dx", 1.0)), float(f.attrs.get("dz", 1.0))
    marks = None
    if args.traces:
        t = open_h5(args.traces)
        marks = (np.asarray(t["source_positions"]).reshape(-1, 2), np.asarray(t["receiver_positions"]).reshape(-1, 2))
    stem = os.path.splitext(os.path.basename(args.file))[0]
    for name in names:
        values = np.asarray(f[name], dtype=float)
        if name == "mu_r" and np.all(values == 1.0):
            continue  # nothing to see
        if name == "sigma":
            values = values * 1e3  # mS/m
        label, cmap = UNITS[name]
        fig, ax = plt.subplots(figsize=(7, 7 * values.shape[0] / values.shape[1] + 1))
        image(ax, values, dx, dz, label, cmap, symmetric=name.startswith("grad"))
        if marks is not None:
            src, rec = marks
            ax.plot(src[:, 0], src[:, 1], "w*", ms=8, mec="k", label="sources")
            ax.plot(rec[:, 0], rec[:, 1], "wv", ms=5, mec="k", label="receivers")
            ax.legend(loc="lower right", fontsize=8)
        title = f"{stem}: {name}"
        if "misfit" in f.attrs:
            title += f" (misfit {float(f.attrs['misfit']):.4g})"
        ax.set_title(title)
        save(fig, out_path(args, f"{stem}_{name}.png"))


if __name__ == "__main__":
    main()
