#include "gprfwi/hdf5_io.hpp"

#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>
#include <optional>
#include <typeinfo>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "gprfwi/error.hpp"
#include "gprfwi/files.hpp"

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

/// What every file of gprfwi records: the version (with git revision) and the run file.
void write_provenance(hid_t file, const std::string& config, const std::string& path) {
    write_attribute(file, "gprfwi_version", std::string(GPRFWI_VERSION) + " (" + GPRFWI_REVISION + ")", path);
    write_attribute(file, "config", config, path);
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

namespace {

/// Writes `path` through a temporary file: fill(file) then rename. `payload`
/// is the bytes of its datasets and attributes (check_room).
template <typename Fill>
void write_atomically(const std::string& path, std::uint64_t payload, Fill&& fill) {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // errors become exceptions with context, not stderr dumps
    replace_file_atomically(path, [&](const std::string& tmp) {
        check_room(tmp, path, payload + (64u << 10));  // (+ HDF5's own metadata)
        // attributes of any size (a run file listing every receiver can exceed the 64 KiB of an object
        // header): dense attribute storage from the first one, which needs the HDF5 1.8 file format
        H5 create(H5Pcreate(H5P_FILE_CREATE), H5Pclose, path + ": file creation properties");
        check(H5Pset_attr_phase_change(create, 0, 0), path + ": dense attribute storage");
        H5 access(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, path + ": file access properties");
        check(H5Pset_libver_bounds(access, H5F_LIBVER_V18, H5F_LIBVER_LATEST), path + ": file format 1.8");
        H5 file(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, create, access), H5Fclose,
                fmt::format("{}: cannot create the file", tmp));
        fill(static_cast<hid_t>(file));
        check(H5Fflush(file, H5F_SCOPE_GLOBAL), path + ": cannot flush");
    });
}

/// The XDMF sidecar (same name, .xdmf) that lets ParaView open [nz][nx] float64 datasets of `h5`.
void write_xdmf(const std::string& h5_path, const Grid& grid, const char* grid_name, const std::vector<std::string>& names) {
    const std::string h5 = std::filesystem::path(h5_path).filename().string();
    std::string xdmf = fmt::format(
        "<?xml version=\"1.0\" ?>\n<Xdmf Version=\"3.0\">\n <Domain>\n  <Grid Name=\"{4}\" GridType=\"Uniform\">\n"
        "   <Topology TopologyType=\"2DCoRectMesh\" Dimensions=\"{0} {1}\"/>\n"
        "   <Geometry GeometryType=\"ORIGIN_DXDY\">\n"
        "    <DataItem Format=\"XML\" Dimensions=\"2\">0 0</DataItem>\n"
        "    <DataItem Format=\"XML\" Dimensions=\"2\">{2} {3}</DataItem>\n   </Geometry>\n",
        grid.nz, grid.nx, grid.dz, grid.dx, grid_name);
    for (const std::string& name : names)
        xdmf += fmt::format("   <Attribute Name=\"{0}\" AttributeType=\"Scalar\" Center=\"Node\">\n"
                            "    <DataItem Format=\"HDF\" NumberType=\"Float\" Precision=\"8\" Dimensions=\"{1} {2}\">{3}:/{0}</DataItem>\n"
                            "   </Attribute>\n",
                            name, grid.nz, grid.nx, h5);
    xdmf += "  </Grid>\n </Domain>\n</Xdmf>\n";
    write_text_atomically(std::filesystem::path(h5_path).replace_extension(".xdmf").string(), xdmf);
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
    write_atomically(path, traces_file_bytes(survey, config), [&](hid_t file) {
        write_dataset(file, "/traces", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {shots, max_rec, nt}, data.data(), path);
        write_dataset(file, "/receiver_count", H5T_STD_I32LE, H5T_NATIVE_INT, {shots}, rec_count.data(), path);
        write_dataset(file, "/source_count", H5T_STD_I32LE, H5T_NATIVE_INT, {shots}, src_count.data(), path);
        write_dataset(file, "/receiver_positions", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {shots, max_rec, 2}, rec_pos.data(), path);
        write_dataset(file, "/source_positions", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {shots, max_src, 2}, src_pos.data(), path);
        write_attribute(file, "dt", survey.dt, path);
        write_attribute(file, "units", "traces: V/m (Ey); positions: m as (x, z); dt: s", path);
        write_attribute(file, "time_convention", "trace sample n is Ey at t = (n + 1) * dt", path);
        write_provenance(file, config, path);
    });
}

std::uint64_t traces_file_bytes(const Survey& survey, const std::string& config) {
    std::uint64_t receivers = 0, sources = 0;
    for (const Shot& shot : survey.shots) {
        receivers = std::max<std::uint64_t>(receivers, shot.receivers.size());
        sources = std::max<std::uint64_t>(sources, shot.sources.size());
    }
    const std::uint64_t shots = survey.shots.size(), nt = static_cast<std::uint64_t>(survey.nt);
    // traces and receiver positions, source positions, the two counts
    return 8 * shots * receivers * (nt + 2) + 8 * shots * sources * 2 + 4 * 2 * shots + config.size();
}

std::uint64_t grid_file_bytes(const Grid& grid, int arrays, const std::string& config) {
    return 8 * static_cast<std::uint64_t>(arrays) * static_cast<std::uint64_t>(grid.nz) * static_cast<std::uint64_t>(grid.nx) +
           config.size();
}

namespace {

/// A file of two [nz][nx] float64 arrays over the model grid (a gradient, a
/// Hessian-vector product) with the misfit, dx, dz, units and provenance,
/// and its XDMF sidecar; `extra` adds attributes.
void write_pair_h5(const std::string& path, const Grid& grid, double misfit, const char* what,
                   const std::array<std::pair<const char*, const Array2D*>, 2>& arrays, const char* units,
                   const std::string& config, const std::function<void(hid_t)>& extra = {}) {
    for (const auto& [name, a] : arrays)
        if (a->nz() != grid.nz || a->nx() != grid.nx)
            throw SizeMismatch(fmt::format("{}: {} is [{}][{}], grid is [{}][{}]", path, name, a->nz(), a->nx(), grid.nz, grid.nx));
    const std::vector<hsize_t> dims{static_cast<hsize_t>(grid.nz), static_cast<hsize_t>(grid.nx)};
    write_atomically(path, grid_file_bytes(grid, 2, config), [&](hid_t file) {
        for (const auto& [name, a] : arrays)
            write_dataset(file, (std::string("/") + name).c_str(), H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, dims, a->data(), path);
        write_attribute(file, "misfit", misfit, path);
        write_attribute(file, "dx", grid.dx, path);
        write_attribute(file, "dz", grid.dz, path);
        write_attribute(file, "units", units, path);
        if (extra) extra(file);
        write_provenance(file, config, path);
    });
    write_xdmf(path, grid, what, {arrays[0].first, arrays[1].first});
}

}  // namespace

void write_gradient_h5(const std::string& path, const Grid& grid, double misfit, const Array2D& grad_eps_r,
                       const Array2D& grad_sigma, const std::string& config) {
    write_pair_h5(path, grid, misfit, "gradient", {{{"grad_eps_r", &grad_eps_r}, {"grad_sigma", &grad_sigma}}},
                  "grad_eps_r: dJ/d eps_r; grad_sigma: dJ/d sigma per S/m; "
                  "misfit J = 1/2 sum (synthetic - observed)^2 in (V/m)^2; dx, dz: m",
                  config);
}

void write_hessian_h5(const std::string& path, const Grid& grid, double misfit, const Array2D& hv_eps_r,
                      const Array2D& hv_sigma, const std::string& kind, const std::string& config) {
    write_pair_h5(path, grid, misfit, "hessian", {{{"hv_eps_r", &hv_eps_r}, {"hv_sigma", &hv_sigma}}},
                  "hv_eps_r: (H v) per unit eps_r; hv_sigma: (H v) per S/m, for the direction v = (d eps_r, "
                  "d sigma in S/m) of the direction file; misfit J = 1/2 sum (synthetic - observed)^2 in (V/m)^2; "
                  "dx, dz: m",
                  config, [&](hid_t file) { write_attribute(file, "hessian", kind, path); });
}

namespace {

H5 open_read_only(const std::string& path) {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    if (!std::filesystem::exists(path)) throw InputFileError(fmt::format("{}: no such file", path));
    if (H5Fis_hdf5(path.c_str()) <= 0)
        throw InputFileError(fmt::format("{}: not an HDF5 file (or not readable)", path));
    return H5(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose, fmt::format("{}: cannot open as HDF5", path));
}

std::vector<hsize_t> dataset_dims(hid_t set) {
    H5 space(H5Dget_space(set), H5Sclose, "dataset has no dataspace");
    const int rank = H5Sget_simple_extent_ndims(space);
    std::vector<hsize_t> dims(static_cast<std::size_t>(std::max(rank, 0)));
    if (rank > 0) H5Sget_simple_extent_dims(space, dims.data(), nullptr);
    return dims;
}

/// Deflate's largest compression ratio: no compressed dataset stores less
/// than 1/1032 of its values' bytes.
constexpr double kMaxCompression = 1032;

/// Refuses, before anything is allocated for it, a dataset whose shape
/// declares more values than its file holds: one never or only partly
/// written (its reads would return fill values), or a damaged or hostile
/// file whose few bytes declare terabytes. And one that would not fit this
/// machine's memory.
void check_stored(hid_t set, const std::string& what) {
    const auto dims = dataset_dims(set);
    double values = 1;
    for (hsize_t d : dims) values *= static_cast<double>(d);
    H5 type(H5Dget_type(set), H5Tclose, what + ": no type");
    H5 create(H5Dget_create_plist(set), H5Pclose, what + ": no creation properties");
    const double declared = values * static_cast<double>(H5Tget_size(type));
    const double stored = static_cast<double>(H5Dget_storage_size(set));
    const double ratio = H5Pget_nfilters(create) > 0 ? kMaxCompression : 1.0;
    if (declared > stored * ratio)
        throw InputFileError(fmt::format("{}: the dataset's shape [{}] declares {:.4g} bytes of values, the file stores {:.4g} "
                                         "(a dataset not or only partly written, or a damaged file)",
                                         what, fmt::join(dims, ", "), declared, stored));
    const double needed = 8 * values, memory = static_cast<double>(physical_memory_bytes());
    if (needed > memory)
        throw OutOfMemory(fmt::format("{}: reading it needs {:.3g} GB, this machine has {:.3g} GB", what, needed / 1e9,
                                      memory / 1e9));
}

/// Reads the block [start, start + count) of a dataset as doubles.
std::vector<double> read_block(hid_t set, const std::vector<hsize_t>& start, const std::vector<hsize_t>& count,
                               const std::string& what) {
    check_stored(set, what);
    H5 file_space(H5Dget_space(set), H5Sclose, what + ": no dataspace");
    check(H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr), what + ": bad block");
    hsize_t n = 1;
    for (hsize_t c : count) n *= c;
    std::vector<double> out(n);
    H5 mem_space(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr), H5Sclose, what + ": memory space");
    check(H5Dread(set, H5T_NATIVE_DOUBLE, mem_space, file_space, H5P_DEFAULT, out.data()), what + ": cannot read");
    return out;
}

double read_double_attribute(hid_t object, const char* name, const std::string& path) {
    double v = 0;
    H5 attr(H5Aopen(object, name, H5P_DEFAULT), H5Aclose, fmt::format("{}: no attribute {}", path, name));
    check(H5Aread(attr, H5T_NATIVE_DOUBLE, &v), fmt::format("{}: cannot read attribute {}", path, name));
    return v;
}

/// The shape of a traces file's /traces, [n_shots][n_receivers][nt].
std::vector<hsize_t> traces_dims(hid_t set, const std::string& path) {
    auto dims = dataset_dims(set);
    if (dims.size() != 3)
        throw SizeMismatch(fmt::format("{}: /traces must have 3 dimensions [n_shots][n_receivers][nt]", path));
    return dims;
}

/// Runs a reader. HDF5 calls that fail while a file is read (no such
/// dataset, a damaged header, a read error) are faults of the file: input
/// errors, like every other refusal of a reader.
template <class Read>
auto reading(Read&& read) -> decltype(read()) {
    try {
        return read();
    } catch (const Error& e) {
        if (typeid(e) != typeid(Error)) throw;  // already typed: an input error, OutOfMemory
        throw InputFileError(e.what());
    }
}

}  // namespace

Traces read_traces_h5(const std::string& path, const Survey& survey) {
    std::vector<std::size_t> all(survey.shots.size());
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
    return read_traces_h5(path, survey, all);
}

Traces read_traces_h5(const std::string& path, const Survey& survey, const std::vector<std::size_t>& shots) {
    return reading([&] {
        H5 file = open_read_only(path);
        H5 set(H5Dopen2(file, "/traces", H5P_DEFAULT), H5Dclose, fmt::format("{}: no dataset /traces", path));
        const auto dims = traces_dims(set, path);
        hsize_t max_rec = 0;
        for (const Shot& s : survey.shots) max_rec = std::max<hsize_t>(max_rec, s.receivers.size());
        if (dims[0] != survey.shots.size() || dims[1] != max_rec || dims[2] != static_cast<hsize_t>(survey.nt))
            throw SizeMismatch(fmt::format("{}: /traces is [{}][{}][{}], the survey needs [{}][{}][{}]", path, dims[0],
                                           dims[1], dims[2], survey.shots.size(), max_rec, survey.nt));
        const double dt = read_double_attribute(file, "dt", path);
        if (!(std::abs(dt - survey.dt) <= 1e-9 * survey.dt))
            throw SizeMismatch(fmt::format("{}: dt is {} s, the survey's is {} s", path, dt, survey.dt));
        const bool has_positions = H5Lexists(file, "/receiver_positions", H5P_DEFAULT) > 0;
        std::optional<H5> positions;
        if (has_positions)
            positions.emplace(H5Dopen2(file, "/receiver_positions", H5P_DEFAULT), H5Dclose, path + ": /receiver_positions");
        Traces out;
        for (std::size_t s : shots) {
            const Shot& shot = survey.shots.at(s);
            const hsize_t n_rec = shot.receivers.size();
            out.emplace_back(static_cast<int>(n_rec), survey.nt);
            if (n_rec == 0) continue;
            const auto data = read_block(set, {s, 0, 0}, {1, n_rec, dims[2]}, path + ": /traces");
            std::copy(data.begin(), data.end(), out.back().samples().begin());
            for (std::size_t i = 0; i < data.size(); ++i)
                if (!std::isfinite(data[i]))
                    throw InputFileError(fmt::format("{}: /traces[{}][{}][{}] is {}; observed data must be finite", path, s,
                                            i / dims[2], i % dims[2], data[i]));
            if (!positions) continue;
            const auto pos = read_block(*positions, {s, 0, 0}, {1, n_rec, 2}, path + ": /receiver_positions");
            for (hsize_t r = 0; r < n_rec; ++r) {
                const Position& p = shot.receivers[r];
                if (std::abs(pos[2 * r] - p.x) > 1e-6 || std::abs(pos[2 * r + 1] - p.z) > 1e-6)
                    throw SizeMismatch(fmt::format("{}: shot {} receiver {} is at ({}, {}) m in the file, ({}, {}) m in the survey",
                                                   path, s, r, pos[2 * r], pos[2 * r + 1], p.x, p.z));
            }
        }
        return out;
    });
}

TraceData read_trace_data_h5(const std::string& path) {
    return reading([&] {
        H5 file = open_read_only(path);
        H5 set(H5Dopen2(file, "/traces", H5P_DEFAULT), H5Dclose, fmt::format("{}: no dataset /traces", path));
        const auto dims = traces_dims(set, path);
        for (const char* name : {"/receiver_positions", "/source_positions", "/receiver_count", "/source_count"})
            if (H5Lexists(file, name, H5P_DEFAULT) <= 0)
                throw InputFileError(fmt::format("{}: no dataset {}; the geometry is needed", path, name));
        if (dims[2] < 1 || dims[2] > static_cast<hsize_t>(std::numeric_limits<int>::max()))
            throw InputFileError(fmt::format("{}: /traces has {} samples per trace", path, dims[2]));
        TraceData out;
        out.survey.dt = read_double_attribute(file, "dt", path);
        if (!(out.survey.dt > 0) || !std::isfinite(out.survey.dt))
            throw InputFileError(fmt::format("{}: attribute dt is {}; expected a sample interval > 0 in s", path, out.survey.dt));
        out.survey.nt = static_cast<int>(dims[2]);
        out.t0 = out.survey.dt;
        const auto read_all = [&](const char* name, std::size_t rank) {
            H5 d(H5Dopen2(file, name, H5P_DEFAULT), H5Dclose, fmt::format("{}: cannot open {}", path, name));
            const auto dd = dataset_dims(d);
            if (dd.size() != rank || dd[0] != dims[0] || (rank == 3 && dd[2] != 2))
                throw SizeMismatch(fmt::format("{}: {} has shape [{}]; /traces' {} shots need [{}{}]", path, name,
                                               fmt::join(dd, ", "), dims[0], dims[0], rank == 3 ? ", n, 2" : ""));
            return std::make_pair(read_block(d, std::vector<hsize_t>(rank, 0), dd, path + ": " + name), dd);
        };
        const auto [rec_count, rc_dims] = read_all("/receiver_count", 1);
        const auto [src_count, sc_dims] = read_all("/source_count", 1);
        const auto [rec_pos, rp_dims] = read_all("/receiver_positions", 3);
        const auto [src_pos, sp_dims] = read_all("/source_positions", 3);
        const auto data = read_block(set, {0, 0, 0}, dims, path + ": /traces");
        for (hsize_t s = 0; s < dims[0]; ++s) {
            Shot& shot = out.survey.shots.emplace_back();
            const auto count = [&](double c, hsize_t most, const char* name) {
                if (!(c >= 0 && c <= static_cast<double>(most) && c == std::floor(c)))
                    throw SizeMismatch(fmt::format("{}: {}[{}] is {}; expected a whole number in [0, {}]", path, name, s, c, most));
                return static_cast<hsize_t>(c);
            };
            const hsize_t n_rec = count(rec_count[s], std::min(dims[1], rp_dims[1]), "/receiver_count");
            const hsize_t n_src = count(src_count[s], sp_dims[1], "/source_count");
            for (hsize_t k = 0; k < n_src; ++k)
                shot.sources.push_back({{src_pos[(s * sp_dims[1] + k) * 2], src_pos[(s * sp_dims[1] + k) * 2 + 1]}, 1.0});
            for (hsize_t r = 0; r < n_rec; ++r)
                shot.receivers.push_back({rec_pos[(s * rp_dims[1] + r) * 2], rec_pos[(s * rp_dims[1] + r) * 2 + 1]});
            ShotTraces& t = out.traces.emplace_back(static_cast<int>(n_rec), out.survey.nt);
            for (hsize_t r = 0; r < n_rec; ++r)
                for (hsize_t n = 0; n < dims[2]; ++n) {
                    const double v = data[(s * dims[1] + r) * dims[2] + n];
                    if (!std::isfinite(v))
                        throw InputFileError(fmt::format("{}: /traces[{}][{}][{}] is {}; data must be finite", path, s, r, n, v));
                    t(static_cast<int>(r), static_cast<int>(n)) = v;
                }
        }
        out.summary = fmt::format("HDF5, {} shots, {} samples of {:.6g} s", dims[0], dims[2], out.survey.dt);
        return out;
    });
}

void write_model_h5(const std::string& path, const Model& model, const std::string& config) {
    write_model_h5(path, model, config, {});
}

void write_model_h5(const std::string& path, const Model& model, const std::string& config, const ModelFileExtras& extra) {
    model.validate();
    const Grid& g = model.grid;
    const std::vector<hsize_t> dims{static_cast<hsize_t>(g.nz), static_cast<hsize_t>(g.nx)};
    std::uint64_t payload = grid_file_bytes(g, 3 + static_cast<int>(extra.arrays.size()), config);
    for (const auto& [name, text] : extra.texts) payload += name.size() + text.size();
    for (const auto& [name, values] : extra.arrays)
        if (values.nz() != g.nz || values.nx() != g.nx)
            throw SizeMismatch(fmt::format("{}: dataset /{} is [{}, {}], the model [{}, {}]", path, name, values.nz(),
                                           values.nx(), g.nz, g.nx));
    write_atomically(path, payload, [&](hid_t file) {
        write_dataset(file, "/eps_r", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, dims, model.eps_r.data(), path);
        write_dataset(file, "/sigma", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, dims, model.sigma.data(), path);
        write_dataset(file, "/mu_r", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, dims, model.mu_r.data(), path);
        write_attribute(file, "dx", g.dx, path);
        write_attribute(file, "dz", g.dz, path);
        write_attribute(file, "units", "eps_r, mu_r: relative (dimensionless); sigma: S/m; dx, dz: m; arrays [nz][nx], "
                                       "node (iz, ix) at (x, z) = (ix dx, iz dz)", path);
        write_provenance(file, config, path);
        for (const auto& [name, value] : extra.numbers) write_attribute(file, name.c_str(), value, path);
        for (const auto& [name, value] : extra.texts) write_attribute(file, name.c_str(), value, path);
        for (const auto& [name, values] : extra.arrays)
            write_dataset(file, ("/" + name).c_str(), H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, dims, values.data(), path);
    });
    write_xdmf(path, g, "model", {"eps_r", "sigma", "mu_r"});
}

Array2D read_model_array_h5(const std::string& path, const std::string& dataset, const Grid& grid) {
    return reading([&] {
        H5 file = open_read_only(path);
        const std::string name = dataset.empty() || dataset[0] == '/' ? dataset : "/" + dataset;
        if (H5Lexists(file, name.c_str(), H5P_DEFAULT) <= 0) throw InputFileError(fmt::format("{}: no dataset {}", path, name));
        H5 set(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose, fmt::format("{}: cannot open dataset {}", path, name));
        {
            H5 type(H5Dget_type(set), H5Tclose, path + ": no type");
            if (H5Tget_class(type) != H5T_FLOAT && H5Tget_class(type) != H5T_INTEGER)
                throw InputFileError(fmt::format("{}: dataset {} is not numeric (float32 or float64 expected)", path, name));
        }
        const auto dims = dataset_dims(set);
        if (dims.size() != 2 || dims[0] != static_cast<hsize_t>(grid.nz) || dims[1] != static_cast<hsize_t>(grid.nx))
            throw SizeMismatch(fmt::format("{}: dataset {} has shape [{}], the grid needs [{}, {}] ([nz, nx])", path, name,
                                           fmt::join(dims, ", "), grid.nz, grid.nx));
        for (const auto& [attr, expect] : {std::pair{"dx", grid.dx}, std::pair{"dz", grid.dz}}) {
            if (H5Aexists(file, attr) <= 0) continue;
            const double v = read_double_attribute(file, attr, path);
            if (!(std::abs(v - expect) <= 1e-9 * expect))
                throw SizeMismatch(fmt::format("{}: attribute {} is {} m, the grid's is {} m", path, attr, v, expect));
        }
        Array2D out(grid.nz, grid.nx);
        const auto data = read_block(set, {0, 0}, dims, fmt::format("{}: {}", path, name));
        std::copy(data.begin(), data.end(), out.data());
        for (std::size_t i = 0; i < data.size(); ++i)
            if (!std::isfinite(data[i]))
                throw InputFileError(fmt::format("{}: {}[{}][{}] is {}", path, name, i / dims[1], i % dims[1], data[i]));
        return out;
    });
}

bool h5_has_dataset(const std::string& path, const std::string& dataset) {
    return reading([&] {
        H5 file = open_read_only(path);
        const std::string name = dataset.empty() || dataset[0] == '/' ? dataset : "/" + dataset;
        return H5Lexists(file, name.c_str(), H5P_DEFAULT) > 0;
    });
}

std::vector<double> read_vector_h5(const std::string& path, const std::string& dataset, double dt) {
    return reading([&] {
        H5 file = open_read_only(path);
        const std::string name = dataset.empty() || dataset[0] == '/' ? dataset : "/" + dataset;
        if (H5Lexists(file, name.c_str(), H5P_DEFAULT) <= 0) throw InputFileError(fmt::format("{}: no dataset {}", path, name));
        H5 set(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose, fmt::format("{}: cannot open dataset {}", path, name));
        const auto dims = dataset_dims(set);
        if (dims.size() != 1) throw SizeMismatch(fmt::format("{}: dataset {} must be 1D, it has {} dimensions", path, name, dims.size()));
        if (H5Aexists(set, "dt") > 0) {
            const double file_dt = read_double_attribute(set, "dt", path + ":" + name);
            if (!(std::abs(file_dt - dt) <= 1e-9 * dt))
                throw SizeMismatch(fmt::format("{}: {} has dt = {} s, time.dt is {} s", path, name, file_dt, dt));
        }
        auto v = read_block(set, {0}, dims, fmt::format("{}: {}", path, name));
        for (std::size_t i = 0; i < v.size(); ++i)
            if (!std::isfinite(v[i])) throw InputFileError(fmt::format("{}: {}[{}] is {}", path, name, i, v[i]));
        return v;
    });
}

void write_vector_h5(const std::string& path, const std::string& dataset, const std::vector<double>& values, double dt,
                     const std::string& units, const std::string& config) {
    write_atomically(path, 8 * values.size() + units.size() + config.size(), [&](hid_t file) {
        const std::string name = "/" + dataset;
        write_dataset(file, name.c_str(), H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {values.size()}, values.data(), path);
        H5 set(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose, path + ": reopen " + name);
        write_attribute(set, "dt", dt, path);
        write_attribute(file, "units", units, path);
        write_provenance(file, config, path);
    });
}

Model read_model_h5(const std::string& path, const Grid& grid, ModelFileExtras* attributes) {
    return reading([&] {
        Model m;
        m.grid = grid;
        m.eps_r = read_model_array_h5(path, "eps_r", grid);
        m.sigma = read_model_array_h5(path, "sigma", grid);
        m.mu_r = h5_has_dataset(path, "mu_r") ? read_model_array_h5(path, "mu_r", grid) : Array2D(grid.nz, grid.nx, 1.0);
        if (!attributes) return m;
        H5 file = open_read_only(path);
        for (auto& [name, value] : attributes->numbers) {
            const bool absent = H5Aexists(file, name.c_str()) <= 0;
            if (absent && attributes->optional.count(name)) continue;
            if (absent) throw InputFileError(fmt::format("{}: no attribute {}", path, name));
            value = read_double_attribute(file, name.c_str(), path);
        }
        for (auto& [name, value] : attributes->texts) {
            if (H5Aexists(file, name.c_str()) <= 0) throw InputFileError(fmt::format("{}: no attribute {}", path, name));
            H5 attr(H5Aopen(file, name.c_str(), H5P_DEFAULT), H5Aclose, fmt::format("{}: attribute {}", path, name));
            H5 type(H5Aget_type(attr), H5Tclose, path + ": attribute type");
            if (H5Tget_class(type) != H5T_STRING || H5Tis_variable_str(type) > 0)
                throw InputFileError(fmt::format("{}: attribute {} is not a fixed-length string", path, name));
            std::string text(H5Tget_size(type), '\0');
            check(H5Aread(attr, type, text.data()), fmt::format("{}: cannot read attribute {}", path, name));
            if (const auto nul = text.find('\0'); nul != std::string::npos) text.resize(nul);
            value = text;
        }
        return m;
    });
}


}  // namespace gprfwi
