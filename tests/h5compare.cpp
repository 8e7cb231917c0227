// Test helper: compares datasets and attributes of two HDF5 files by relative
// L2 difference, or poisons one trace sample (to test failure handling).
//   h5compare A.h5 B.h5 TOL NAME...   NAME: /dataset or @attribute
//   h5compare --poison FILE.h5 SHOT   sets /traces[SHOT][0][0] = NaN
// Exit 0 when every difference is within TOL, 1 otherwise.

#include <hdf5.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

std::vector<double> read(hid_t file, const std::string& name) {
    if (name[0] == '@') {
        double v = NAN;
        const hid_t a = H5Aopen(file, name.c_str() + 1, H5P_DEFAULT);
        if (a < 0 || H5Aread(a, H5T_NATIVE_DOUBLE, &v) < 0) return {};
        H5Aclose(a);
        return {v};
    }
    const hid_t d = H5Dopen2(file, name.c_str(), H5P_DEFAULT);
    if (d < 0) return {};
    const hid_t s = H5Dget_space(d);
    std::vector<double> v(static_cast<std::size_t>(H5Sget_simple_extent_npoints(s)));
    H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
    H5Sclose(s);
    H5Dclose(d);
    return v;
}

int poison(const char* path, hsize_t shot) {
    const hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    const hid_t d = H5Dopen2(f, "/traces", H5P_DEFAULT);
    const hid_t s = H5Dget_space(d);
    const hsize_t start[3] = {shot, 0, 0}, count[3] = {1, 1, 1};
    H5Sselect_hyperslab(s, H5S_SELECT_SET, start, nullptr, count, nullptr);
    const hid_t m = H5Screate_simple(3, count, nullptr);
    const double nan = NAN;
    const herr_t rc = H5Dwrite(d, H5T_NATIVE_DOUBLE, m, s, H5P_DEFAULT, &nan);
    H5Sclose(m);
    H5Sclose(s);
    H5Dclose(d);
    H5Fclose(f);
    return rc < 0 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 4 && std::string(argv[1]) == "--poison") return poison(argv[2], std::strtoull(argv[3], nullptr, 10));
    if (argc < 5) {
        std::fprintf(stderr, "usage: h5compare A.h5 B.h5 TOL NAME... | --poison FILE.h5 SHOT\n");
        return 2;
    }
    const hid_t a = H5Fopen(argv[1], H5F_ACC_RDONLY, H5P_DEFAULT), b = H5Fopen(argv[2], H5F_ACC_RDONLY, H5P_DEFAULT);
    if (a < 0 || b < 0) return 1;
    const double tol = std::strtod(argv[3], nullptr);
    int status = 0;
    for (int i = 4; i < argc; ++i) {
        const auto x = read(a, argv[i]), y = read(b, argv[i]);
        double diff = 0, norm = 0;
        for (std::size_t k = 0; k < x.size() && k < y.size(); ++k) {
            diff += (x[k] - y[k]) * (x[k] - y[k]);
            norm += x[k] * x[k];
        }
        const double rel = norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
        const bool ok = !x.empty() && x.size() == y.size() && norm > 0 && rel <= tol;
        std::printf("%s %s: %zu values, |a| = %.6g, relative difference %.3g (tolerance %.1g)\n", ok ? "ok  " : "FAIL", argv[i],
                    x.size(), std::sqrt(norm), rel, tol);
        if (!ok) status = 1;
    }
    H5Fclose(a);
    H5Fclose(b);
    return status;
}
