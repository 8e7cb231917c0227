#!/usr/bin/python3
"""PNG images of shot gathers from a gprfwi traces file (synthetic.h5 or
observed data): each shot's gather (receiver against time); with --observed,
also the residual gather (synthetic - observed) and observed against
synthetic traces for a few receivers.

  plot-gathers.py SYNTHETIC.h5 [--observed OBSERVED.h5] [--shots 0,3] [-o DIR]
"""

import numpy as np

from gprfwi_plot import fail, open_h5, out_path, parser, plt, save


def gather_image(ax, data, dt, title):
    m = float(np.nanmax(np.abs(data))) or 1.0
    n_rec, nt = data.shape
    t_ns = (np.arange(nt) + 1) * dt * 1e9  # sample n is at (n + 1) dt
    im = ax.imshow(data.T, aspect="auto", cmap="seismic", vmin=-m, vmax=m,
                   extent=(-0.5, n_rec - 0.5, t_ns[-1], t_ns[0]), interpolation="nearest")
    ax.set_xlabel("receiver")
    ax.set_ylabel("time (ns)")
    ax.set_title(title)
    plt.colorbar(im, ax=ax, label="$E_y$ (V/m)")


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("file", help="traces HDF5 file (gprfwi forward's synthetic.h5)")
    p.add_argument("--observed", help="observed traces in the same layout: residuals and comparisons")
    p.add_argument("--shots", default="0", help="comma-separated shot indices (default 0), or 'all'")
    args = p.parse_args()
    f = open_h5(args.file)
    if "traces" not in f:
        fail(f"{args.file}: no /traces dataset")
    traces = np.asarray(f["traces"], dtype=float)
    counts = np.asarray(f["receiver_count"]) if "receiver_count" in f else np.full(traces.shape[0], traces.shape[1])
    dt = float(f.attrs["dt"])
    obs = None
    if args.observed:
        o = open_h5(args.observed)
        obs = np.asarray(o["traces"], dtype=float)
        if obs.shape != traces.shape:
            fail(f"{args.observed}: /traces is {obs.shape}, {args.file} has {traces.shape}")
    shots = range(traces.shape[0]) if args.shots == "all" else [int(s) for s in args.shots.split(",")]
    for s in shots:
        if not 0 <= s < traces.shape[0]:
            fail(f"shot {s} is not in 0..{traces.shape[0] - 1}")
        n = int(counts[s])
        syn = traces[s, :n]
        panels = 1 if obs is None else 2
        fig, axes = plt.subplots(1, panels, figsize=(6 * panels, 5), squeeze=False)
        gather_image(axes[0, 0], syn, dt, f"shot {s}: synthetic")
        if obs is not None:
            gather_image(axes[0, 1], syn - obs[s, :n], dt, f"shot {s}: synthetic - observed")
        save(fig, out_path(args, f"gather_shot{s:03d}.png"))
        if obs is not None:
            picks = sorted(set(np.linspace(0, n - 1, min(n, 4)).astype(int)))
            fig, axes = plt.subplots(len(picks), 1, figsize=(8, 2 * len(picks)), sharex=True, squeeze=False)
            t_ns = (np.arange(traces.shape[2]) + 1) * dt * 1e9
            for ax, r in zip(axes[:, 0], picks):
                ax.plot(t_ns, obs[s, r], "k", lw=1.2, label="observed")
                ax.plot(t_ns, syn[r], "r--", lw=1.0, label="synthetic")
                ax.set_ylabel(f"rec {r}\n(V/m)")
            axes[0, 0].legend(loc="upper right", fontsize=8)
            axes[-1, 0].set_xlabel("time (ns)")
            axes[0, 0].set_title(f"shot {s}: observed and synthetic traces")
            save(fig, out_path(args, f"traces_shot{s:03d}.png"))


if __name__ == "__main__":
    main()
