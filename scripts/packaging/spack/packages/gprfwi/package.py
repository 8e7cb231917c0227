# Spack recipe of gprfwi (docs/install.md). Use it from this repository:
#   spack repo add scripts/packaging/spack
#   spack install gprfwi +cuda cuda_arch=90      # H100/H200; 80 for A100
# Its dependency list is the one scripts/install-deps.sh installs on Debian
# (tests/packaging.sh compares them).

from spack.package import *


class Gprfwi(CMakePackage, CudaPackage):
    """2D TM full-waveform inversion of ground-penetrating-radar data: an FDTD
    propagator on CPUs and NVIDIA GPUs with its exact discrete adjoint, MPI over
    shots, PETSc TAO inversion campaigns, traveltime tomography."""

    homepage = "https://github.com/gprfwi/gprfwi"
    git = "https://github.com/gprfwi/gprfwi.git"

    license("UNKNOWN")

    version("main", branch="main")

    variant("tests", default=False, description="Build the test suite (GoogleTest)")

    depends_on("cxx", type="build")
    depends_on("c", type="build")
    depends_on("cmake@3.25:", type="build")
    depends_on("ninja", type="build")
    depends_on("pkgconfig", type="build")
    depends_on("mpi")
    depends_on("petsc+mpi")
    depends_on("hdf5+mpi")
    depends_on("yaml-cpp")
    depends_on("cli11")
    depends_on("fmt")
    depends_on("spdlog")
    depends_on("fftw")
    depends_on("segyio")
    depends_on("googletest", when="+tests")
    depends_on("benchmark", when="+tests")
    depends_on("cuda@12:", when="+cuda")
    depends_on("py-numpy", type="run")
    depends_on("py-h5py", type="run")
    depends_on("py-matplotlib", type="run")

    generator("ninja")

    def cmake_args(self):
        spec = self.spec
        args = [
            self.define_from_variant("GPRFWI_CUDA", "cuda"),
            self.define_from_variant("GPRFWI_BUILD_TESTS", "tests"),
            self.define("PETSC_DIR", spec["petsc"].prefix),
        ]
        if spec.satisfies("+cuda"):
            archs = spec.variants["cuda_arch"].value
            if archs and archs[0] != "none":
                args.append(self.define("CMAKE_CUDA_ARCHITECTURES", ";".join(archs)))
        return args
