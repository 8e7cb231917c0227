#!/bin/sh
# `gprfwi born` and `gprfwi hessian` end to end, checked with h5py:
#  1. born.h5 is the central difference of two `forward` runs at m +/- h v
#     (models written as files) to the difference's O(h^2) error;
#  2. hessian.h5 (Gauss-Newton) satisfies <v, H_GN v> = |J v|^2 with J v the
#     born.h5 traces; the full product differs from it (the second-order
#     terms) and both are symmetric in the sense <u, H v> = <H u, v>;
#  3. np = 2 writes the same products and Born traces as np = 1 (1e-12);
#  4. bad direction files are bad input: exit code 2, the file named.
# Usage: second_order.sh GPRFWI PYTHON DATA_DIR WORK_DIR
set -eu
gprfwi=$1 python=$2 data=$3 work=$4
rm -rf "$work" && mkdir -p "$work" && cd "$work"
export OMP_NUM_THREADS=1
run() { "$@" > log.txt 2>&1 || { cat log.txt; echo "FAILED: $*"; exit 1; }; }
mpirun=${MPIEXEC:-mpirun}

# the observed data: the small crosshole study's true model, 300 samples
run "$gprfwi" forward "$data/small_crosshole.yaml" -o truth --set time.nt=300
# the model of the products: the disc elsewhere; its file for the perturbed runs
cat > run.yaml <<EOF
grid: {nx: 90, nz: 70, dx: 0.02, dz: 0.02}
model:
  eps_r: 6.0
  sigma: 0.002
  shapes:
    - {type: circle, center: [0.8, 0.6], radius: 0.2, eps_r: 9.0, sigma: 0.008}
wavelet: {type: ricker, frequency: 3.0e8}
time: {dt: 4.0e-11, nt: 300}
survey:
  crosshole:
    source_x: 0.2
    receiver_x: 1.6
    sources: {from: 0.2, to: 1.2, count: 5}
    receivers: {from: 0.1, to: 1.3, count: 7}
propagator: {backend: cpu, precision: double, stencil: 4, pml: {width: 12}}
data: {observed: truth/synthetic.h5}
output: {dir: out}
EOF
run "$gprfwi" forward run.yaml -o base
"$python" - <<'PY'
import h5py, numpy as np
m = h5py.File("base/model.h5", "r")
eps, sig = m["eps_r"][...], m["sigma"][...]
nz, nx = eps.shape
z, x = np.mgrid[0:nz, 0:nx]
# eps_r moves only inside the disc: the CPML follows the model's fastest
# velocity (fixed per call, as the derivatives assume), which must not move
# between the perturbed runs
disc = eps > 7
def direction(path, kx, kz, seed):
    rng = np.random.default_rng(seed)
    de = disc * 0.5 * (0.4 + np.sin(np.pi * (kx * x / nx + kz * z / nz) + rng.uniform(0, 6)))
    ds = 0.004 * (0.4 + np.cos(np.pi * (kz * x / nx - kx * z / nz) + rng.uniform(0, 6)))
    with h5py.File(path, "w") as f:
        f["eps_r"], f["sigma"] = de, ds
    return de, ds
de, ds = direction("v.h5", 2.0, 3.0, 1)
direction("u.h5", 3.0, 1.5, 2)
h = 1e-3
for name, sign in (("plus", 1), ("minus", -1)):
    with h5py.File(f"{name}.h5", "w") as f:
        f["eps_r"], f["sigma"] = eps + sign * h * de, sig + sign * h * ds
        f.attrs["dx"], f.attrs["dz"] = m.attrs["dx"], m.attrs["dz"]
# damaged directions
with h5py.File("no-sigma.h5", "w") as f:
    f["eps_r"] = de
with h5py.File("wrong-shape.h5", "w") as f:
    f["eps_r"], f["sigma"] = de[:-1], ds[:-1]
PY
for s in plus minus; do
    run "$gprfwi" forward run.yaml -o "$s" --set "model={file: $s.h5}"
done
run "$gprfwi" born run.yaml --perturbation v.h5 -o born
for kind in full gauss-newton; do
    flag=; [ $kind = gauss-newton ] && flag=--gauss-newton
    for d in u v; do
        run "$gprfwi" hessian run.yaml --direction $d.h5 $flag -o "h-$kind-$d"
    done
    run "$mpirun" --oversubscribe --allow-run-as-root -np 2 "$gprfwi" hessian run.yaml --direction v.h5 $flag -o "h-$kind-v-np2"
done
run "$mpirun" --oversubscribe --allow-run-as-root -np 2 "$gprfwi" born run.yaml --perturbation v.h5 -o born-np2

"$python" - <<'PY'
import h5py, numpy as np
def traces(d, name="synthetic.h5"):
    return np.nan_to_num(h5py.File(f"{d}/{name}", "r")["traces"][...])
jv = traces("born", "born.h5")
cd = (traces("plus") - traces("minus")) / 2e-3
rel = np.linalg.norm(cd - jv) / np.linalg.norm(jv)
print(f"born.h5 against the central difference of forward runs (h = 1e-3): {rel:.2e}")
assert np.linalg.norm(jv) > 0 and rel < 1e-5, rel
b2 = traces("born-np2", "born.h5")
assert np.abs(b2 - jv).max() <= 1e-12 * np.abs(jv).max(), "Born traces differ between np = 1 and 2"

def direction(p):
    f = h5py.File(p, "r")
    return f["eps_r"][...], f["sigma"][...]
def product(d):
    f = h5py.File(f"{d}/hessian.h5", "r")
    return f["hv_eps_r"][...], f["hv_sigma"][...], f.attrs["misfit"], f.attrs["hessian"]
def dot(a, b):
    return float(np.sum(a[0] * b[0]) + np.sum(a[1] * b[1]))
u, v = direction("u.h5"), direction("v.h5")
for kind in ("full", "gauss-newton"):
    hu, hv = product(f"h-{kind}-u"), product(f"h-{kind}-v")
    assert (hv[3].decode() if isinstance(hv[3], bytes) else hv[3]) == kind, hv[3]
    assert hv[2] > 0
    sym = abs(dot(u, hv) - dot(hu, v)) / abs(dot(u, hv))
    print(f"{kind}: <u,Hv> = {dot(u, hv):.12e}, <Hu,v> = {dot(hu, v):.12e}, relative {sym:.1e}")
    assert sym < 1e-11, sym
    h2 = product(f"h-{kind}-v-np2")
    for a, b in zip(h2[:2], hv[:2]):
        assert np.abs(a - b).max() <= 1e-12 * np.abs(b).max(), f"{kind}: np = 2 differs"
gn, full = product("h-gauss-newton-v"), product("h-full-v")
vgv, jv2 = dot(v, gn), float(np.sum(jv * jv))
print(f"<v, H_GN v> = {vgv:.12e}, |Jv|^2 = {jv2:.12e}")
assert abs(vgv - jv2) < 1e-11 * jv2
diff = np.linalg.norm(full[0] - gn[0]) / np.linalg.norm(gn[0])
print(f"full against Gauss-Newton, eps_r: {diff:.2e}")
assert diff > 1e-6, "the full Hessian lost its second-order terms"
PY

# bad input: exit code 2 and the file named
for bad in no-sigma wrong-shape; do
    set +e
    "$gprfwi" hessian run.yaml --direction $bad.h5 -o bad > bad.txt 2>&1
    code=$?
    set -e
    if [ $code -ne 2 ] || ! grep -q "$bad.h5" bad.txt; then cat bad.txt; echo "FAILED: $bad.h5 (exit $code)"; exit 1; fi
    [ ! -e bad/hessian.h5 ] || { echo "FAILED: $bad.h5 wrote an output"; exit 1; }
done
echo "second_order: all checks passed"
