"""Shared helpers of the gprfwi plotting scripts (matplotlib and h5py from Debian)."""

import argparse
import os
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no display needed
import matplotlib.pyplot as plt  # noqa: E402
import h5py  # noqa: E402
import numpy as np  # noqa: E402

UNITS = {
    "eps_r": ("relative permittivity $\\varepsilon_r$", "viridis"),
    "sigma": ("conductivity $\\sigma$ (mS/m)", "magma"),
    "mu_r": ("relative permeability $\\mu_r$", "cividis"),
    "grad_eps_r": ("$\\partial J / \\partial \\varepsilon_r$", "RdBu_r"),
    "grad_sigma": ("$\\partial J / \\partial \\sigma$ (per S/m)", "RdBu_r"),
}


def parser(description):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("-o", "--output", default=".", help="folder for the PNG files (made if missing)")
    return p


def out_path(args, name):
    os.makedirs(args.output, exist_ok=True)
    return os.path.join(args.output, name)


def fail(message):
    print(f"{os.path.basename(sys.argv[0])}: {message}", file=sys.stderr)
    sys.exit(2)


def open_h5(path):
    if not os.path.exists(path):
        fail(f"{path}: no such file")
    try:
        return h5py.File(path, "r")
    except OSError as e:
        fail(f"{path}: not an HDF5 file ({e})")


def save(fig, path):
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    print(f"wrote {path}")


def image(ax, values, dx, dz, label, cmap, symmetric=False):
    nz, nx = values.shape
    extent = (0, (nx - 1) * dx, (nz - 1) * dz, 0)
    kw = {}
    if symmetric:
        m = float(np.nanmax(np.abs(values))) or 1.0
        kw = {"vmin": -m, "vmax": m}
    im = ax.imshow(values, extent=extent, cmap=cmap, aspect="equal", interpolation="nearest", **kw)
    ax.set_xlabel("x (m)")
    ax.set_ylabel("z (m)")
    plt.colorbar(im, ax=ax, label=label, shrink=0.85)
    return im
