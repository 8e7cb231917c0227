#include "gprfwi/hdf5_io.hpp"

#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "gprfwi/error.hpp"

namespace gprfwi {

namespace {

/// Owns one HDF5 identifier.
class H5 {
public:
    H5(hid_t id, herr_t (*close)(hid_t), const std::string& what) : id_(id), close_(close) {
        if (id < 0) throw Error(what);
    }
    ~H5() {
        if (id_ >= 0) close_(id_);
    }
    H5(const H5&) = delete;
    H5& operator=(const H5&) = delete;
    operator hid_t() const { return id_; }

private:
    hid_t id_;
    herr_t (*close_)(hid_t);
};

void check(herr_t status, const std::string& what) {
    if (status < 0) throw Error(what);
}

void write_dataset(hid_t file, const char* name, hid_t type, hid_t mem_type, const std::vector<hsize_t>& dims,
                   const void* data, const std::string& path) {
    H5 space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose,
             fmt::format("{}: cannot describe dataset {}", path, name));
    H5 set(H5Dcreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose,
           fmt::format("{}: cannot create dataset {}", path, name));
    check(H5Dwrite(set, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), fmt::format("{}: cannot write {}", path, name));
}

void write_attribute(hid_t object, const char* name, double value, const std::string& path) {
    H5 space(H5Screate(H5S_SCALAR), H5Sclose, path + ": attribute space");
    H5 attr(H5Acreate2(object, name, H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose,
            fmt::format("{}: cannot create attribute {}", path, name));
    check(H5Awrite(attr, H5T_NATIVE_DOUBLE, &value), fmt::format("{}: cannot write attribute {}", path, name));
}

void write_attribute(hid_t object, const char* name, const std::string& value, const std::string& path) {
    H5 type(H5Tcopy(H5T_C_S1), H5Tclose, path + ": string type");
    check(H5Tset_size(type, std::max<std::size_t>(value.size(), 1)), path + ": string size");
    H5 space(H5Screate(H5S_SCALAR), H5Sclose, path + ": attribute space");
    H5 attr(H5Acreate2(object, name, type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose,
            fmt::format("{}: cannot create attribute {}", path, name));
    const std::string padded = value.empty() ? std::string(1, '\0') : value;
    check(H5Awrite(attr, type, padded.data()), fmt::format("{}: cannot write attribute {}", path, name));
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

namespace {

/// Writes `path` through a temporary file: fill(file) then rename.
template <typename Fill>
void write_atomically(const std::string& path, Fill&& fill) {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // errors become exceptions with context, not stderr dumps
    const std::string tmp = fmt::format("{}.tmp-{}", path, getpid());
    try {
        H5 file(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose,
                fmt::format("{}: cannot create the file", tmp));
        fill(static_cast<hid_t>(file));
        check(H5Fflush(file, H5F_SCOPE_GLOBAL), path + ": cannot flush");
    } catch (...) {
        std::remove(tmp.c_str());
        throw;
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) {
        std::remove(tmp.c_str());
        throw Error(fmt::format("{}: cannot move the finished file into place: {}", path, ec.message()));
    }
}

void write_text_atomically(const std::string& path, const std::string& text) {
    const std::string tmp = fmt::format("{}.tmp-{}", path, getpid());
    std::FILE* f = std::fopen(tmp.c_str(), "w");
    if (!f) throw Error(fmt::format("{}: cannot create the file", tmp));
    const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    if (std::fclose(f) != 0 || !ok) {
        std::remove(tmp.c_str());
        throw Error(fmt::format("{}: cannot write the file", path));
    }
    std::filesystem::rename(tmp, path);
}

}  // namespace

void write_traces_h5(const std::string& path, const Survey& survey, const Traces& traces, const std::string& config) {
    check_traces_match(traces, survey, "traces to write");
    const hsize_t shots = survey.shots.size(), nt = static_cast<hsize_t>(survey.nt);
    hsize_t max_rec = 0, max_src = 0;
    for (const Shot& s : survey.shots) {
        max_rec = std::max<hsize_t>(max_rec, s.receivers.size());
        max_src = std::max<hsize_t>(max_src, s.sources.size());
    }
    std::vector<double> data(shots * max_rec * nt, kNaN), rec_pos(shots * max_rec * 2, kNaN),
        src_pos(shots * max_src * 2, kNaN);
    std::vector<int> rec_count(shots), src_count(shots);
    for (hsize_t s = 0; s < shots; ++s) {
        const Shot& shot = survey.shots[s];
        rec_count[s] = static_cast<int>(shot.receivers.size());
        src_count[s] = static_cast<int>(shot.sources.size());
        for (std::size_t r = 0; r < shot.receivers.size(); ++r) {
            std::copy_n(traces[s].receiver(static_cast<int>(r)), nt, data.begin() + static_cast<std::ptrdiff_t>((s * max_rec + r) * nt));
            rec_pos[(s * max_rec + r) * 2] = shot.receivers[r].x;
            rec_pos[(s * max_rec + r) * 2 + 1] = shot.receivers[r].z;
        }
        for (std::size_t k = 0; k < shot.sources.size(); ++k) {
            src_pos[(s * max_src + k) * 2] = shot.sources[k].position.x;
            src_pos[(s * max_src + k) * 2 + 1] = shot.sources[k].position.z;
        }
    }
    write_atomically(path, [&](hid_t file) {
        write_dataset(file, "/traces", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {shots, max_rec, nt}, data.data(), path);
        write_dataset(file, "/receiver_count", H5T_STD_I32LE, H5T_NATIVE_INT, {shots}, rec_count.data(), path);
        write_dataset(file, "/source_count", H5T_STD_I32LE, H5T_NATIVE_INT, {shots}, src_count.data(), path);
        write_dataset(file, "/receiver_positions", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {shots, max_rec, 2}, rec_pos.data(), path);
        write_dataset(file, "/source_positions", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {shots, max_src, 2}, src_pos.data(), path);
        write_attribute(file, "dt", survey.dt, path);
        write_attribute(file, "units", "traces: V/m (Ey); positions: m as (x, z); dt: s", path);
        write_attribute(file, "time_convention", "trace sample n is Ey at t = (n + 1) * dt", path);
        write_attribute(file, "gprfwi_version", std::string(GPRFWI_VERSION) + " (" + GPRFWI_GIT_REVISION + ")", path);
        write_attribute(file, "config", config, path);
    });
}

void write_gradient_h5(const std::string& path, const Grid& grid, double misfit, const Array2D& grad_eps_r,
                       const Array2D& grad_sigma, const std::string& config) {
    for (const Array2D* a : {&grad_eps_r, &grad_sigma})
        if (a->nz() != grid.nz || a->nx() != grid.nx)
            throw SizeMismatch(fmt::format("{}: gradient is [{}][{}], grid is [{}][{}]", path, a->nz(), a->nx(), grid.nz, grid.nx));
    const std::vector<hsize_t> dims{static_cast<hsize_t>(grid.nz), static_cast<hsize_t>(grid.nx)};
    write_atomically(path, [&](hid_t file) {
        write_dataset(file, "/grad_eps_r", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, dims, grad_eps_r.data(), path);
        write_dataset(file, "/grad_sigma", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, dims, grad_sigma.data(), path);
        write_attribute(file, "misfit", misfit, path);
        write_attribute(file, "dx", grid.dx, path);
        write_attribute(file, "dz", grid.dz, path);
        write_attribute(file, "units", "grad_eps_r: dJ/d eps_r; grad_sigma: dJ/d sigma per S/m; "
                                       "misfit J = 1/2 sum (synthetic - observed)^2 in (V/m)^2; dx, dz: m", path);
        write_attribute(file, "gprfwi_version", std::string(GPRFWI_VERSION) + " (" + GPRFWI_GIT_REVISION + ")", path);
        write_attribute(file, "config", config, path);
    });
    const std::string h5 = std::filesystem::path(path).filename().string();
    std::string xdmf = fmt::format(
        "<?xml version=\"1.0\" ?>\n<Xdmf Version=\"3.0\">\n <Domain>\n  <Grid Name=\"gradient\" GridType=\"Uniform\">\n"
        "   <Topology TopologyType=\"2DCoRectMesh\" Dimensions=\"{0} {1}\"/>\n"
        "   <Geometry GeometryType=\"ORIGIN_DXDY\">\n"
        "    <DataItem Format=\"XML\" Dimensions=\"2\">0 0</DataItem>\n"
        "    <DataItem Format=\"XML\" Dimensions=\"2\">{2} {3}</DataItem>\n   </Geometry>\n",
        grid.nz, grid.nx, grid.dz, grid.dx);
    for (const char* name : {"grad_eps_r", "grad_sigma"})
        xdmf += fmt::format("   <Attribute Name=\"{0}\" AttributeType=\"Scalar\" Center=\"Node\">\n"
                            "    <DataItem Format=\"HDF\" NumberType=\"Float\" Precision=\"8\" Dimensions=\"{1} {2}\">{3}:/{0}</DataItem>\n"
                            "   </Attribute>\n",
                            name, grid.nz, grid.nx, h5);
    xdmf += "  </Grid>\n </Domain>\n</Xdmf>\n";
    write_text_atomically(std::filesystem::path(path).replace_extension(".xdmf").string(), xdmf);
}

Traces read_traces_h5(const std::string& path, const Survey& survey) {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    H5 file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose, fmt::format("{}: cannot open as HDF5", path));
    H5 set(H5Dopen2(file, "/traces", H5P_DEFAULT), H5Dclose, fmt::format("{}: no dataset /traces", path));
    H5 space(H5Dget_space(set), H5Sclose, path + ": /traces has no dataspace");
    if (H5Sget_simple_extent_ndims(space) != 3)
        throw SizeMismatch(fmt::format("{}: /traces must have 3 dimensions [n_shots][n_receivers][nt]", path));
    hsize_t dims[3];
    H5Sget_simple_extent_dims(space, dims, nullptr);
    hsize_t max_rec = 0;
    for (const Shot& s : survey.shots) max_rec = std::max<hsize_t>(max_rec, s.receivers.size());
    if (dims[0] != survey.shots.size() || dims[1] != max_rec || dims[2] != static_cast<hsize_t>(survey.nt))
        throw SizeMismatch(fmt::format("{}: /traces is [{}][{}][{}], the survey needs [{}][{}][{}]", path, dims[0],
                                       dims[1], dims[2], survey.shots.size(), max_rec, survey.nt));
    double dt = 0;
    {
        H5 attr(H5Aopen(file, "dt", H5P_DEFAULT), H5Aclose, fmt::format("{}: no attribute dt", path));
        check(H5Aread(attr, H5T_NATIVE_DOUBLE, &dt), path + ": cannot read dt");
    }
    if (std::abs(dt - survey.dt) > 1e-9 * survey.dt)
        throw SizeMismatch(fmt::format("{}: dt is {} s, the survey's is {} s", path, dt, survey.dt));
    std::vector<double> data(dims[0] * dims[1] * dims[2]);
    check(H5Dread(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()), path + ": cannot read /traces");
    Traces out = make_traces(survey);
    for (std::size_t s = 0; s < survey.shots.size(); ++s)
        for (int r = 0; r < out[s].n_receivers(); ++r)
            std::copy_n(data.begin() + static_cast<std::ptrdiff_t>((s * max_rec + r) * dims[2]), dims[2], out[s].receiver(r));
    return out;
}

}  // namespace gprfwi
