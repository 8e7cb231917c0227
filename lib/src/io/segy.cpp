#include "gprfwi/segy.hpp"

#include <segyio/segy.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "gprfwi/error.hpp"
#include "gprfwi/files.hpp"

namespace gprfwi {

namespace {

constexpr int kTextSize = SEGY_TEXT_HEADER_SIZE;
constexpr int kBinarySize = SEGY_BINARY_HEADER_SIZE;
constexpr int kTraceHeaderSize = SEGY_TRACE_HEADER_SIZE;
constexpr int kCoordinateScalar = -1000;  // written positions are in mm
constexpr int kBinExtendedInterval = 3273 - 3201;  // rev 2: IEEE double, same unit as 3217-3218
constexpr int kBinByteOrder = 3297 - 3201;         // rev 2: the integer 16909060 in the file's byte order
constexpr int kBinRevisionMajor = 3501 - 3201;

/// Owns a segyio file handle.
class SegyFile {
public:
    SegyFile(const std::string& path, const char* mode) : file_(segy_open(path.c_str(), mode)) {
        if (!file_) throw Error(fmt::format("{}: cannot open ({})", path, std::strerror(errno)));
    }
    ~SegyFile() {
        if (file_) segy_close(file_);
    }
    SegyFile(const SegyFile&) = delete;
    SegyFile& operator=(const SegyFile&) = delete;
    operator segy_file*() const { return file_; }
    void close(const std::string& path) {
        const int err = segy_close(file_);
        file_ = nullptr;
        if (err != SEGY_OK) throw Error(fmt::format("{}: cannot close (segyio error {})", path, err));
    }

private:
    segy_file* file_;
};

/// Throws E naming `what` when a segyio call failed.
template <typename E = Error>
void check(int err, const std::string& what) {
    if (err != SEGY_OK) throw E(fmt::format("{} (segyio error {})", what, err));
}

void put_big_endian(char* at, const void* value, std::size_t bytes) {
    const auto* v = static_cast<const unsigned char*>(value);
    for (std::size_t i = 0; i < bytes; ++i)
        at[i] = static_cast<char>(std::endian::native == std::endian::little ? v[bytes - 1 - i] : v[i]);
}

template <typename T>
T get_raw(const unsigned char* at, bool little_endian) {
    unsigned char b[sizeof(T)];
    const bool swap = little_endian != (std::endian::native == std::endian::little);
    for (std::size_t i = 0; i < sizeof(T); ++i) b[i] = swap ? at[sizeof(T) - 1 - i] : at[i];
    T v;
    std::memcpy(&v, b, sizeof(T));
    return v;
}

std::int32_t field(const char* header, int offset) {
    std::int32_t v = 0;
    segy_get_field(header, offset, &v);
    return v;
}

void set_field(char* header, int offset, long long value, const std::string& path) {
    if (value < INT32_MIN || value > INT32_MAX || segy_set_field(header, offset, static_cast<std::int32_t>(value)) != SEGY_OK)
        throw InvalidArgument(fmt::format("{}: {} does not fit trace header bytes {}-", path, value, offset));
}

void set_bfield(char* header, int offset, long long value, const std::string& path) {
    if (value < INT32_MIN || value > INT32_MAX || segy_set_bfield(header, offset, static_cast<std::int32_t>(value)) != SEGY_OK)
        throw InvalidArgument(fmt::format("{}: {} does not fit binary header bytes {}-", path, value, offset));
}

/// SEG-Y scalar convention: positive multiplies, negative divides, zero is one.
double scaled(std::int32_t value, std::int32_t scalar) {
    if (scalar > 0) return static_cast<double>(value) * scalar;
    if (scalar < 0) return static_cast<double>(value) / -scalar;
    return value;
}

bool supported_format(int f) { return f == 1 || f == 2 || f == 3 || f == 5 || f == 8; }

std::string textual_header(const Survey& survey, const std::string& description) {
    std::vector<std::string> lines{
        "gprfwi " GPRFWI_VERSION " (" GPRFWI_REVISION "): 2D TM Ey traces, V/m, IEEE float",
        fmt::format("sample interval {:.6g} s, exactly: rev 2 extended interval (us)", survey.dt),
        "16-bit sample interval fields hold picoseconds (GPR convention)",
        "sample k is Ey at t = k dt; sample 0 (t = 0) is zero; no delay",
        "field record (bytes 9-12) = shot + 1, trace number (13-16) = receiver + 1",
        "x: source X (73-76), group X (81-84); scalar (71-72) -1000: mm",
        "z down: source depth (49-52), receiver -group elevation (41-44), mm",
        "positions in model coordinates: m from the top-left model node"};
    std::string rest = description;
    for (char& c : rest)
        if (c == '\n' || c == '\t') c = ' ';
    while (!rest.empty() && lines.size() < 38) {
        lines.push_back(rest.substr(0, 75));
        rest.erase(0, std::min<std::size_t>(75, rest.size()));
    }
    lines.resize(39);
    lines.push_back("SEG-Y_REV2.0");
    std::string text;
    for (std::size_t i = 0; i < 40; ++i) {
        std::string line = fmt::format("C{:2d} {}", i + 1, lines[i]);
        for (char& c : line)
            if (static_cast<unsigned char>(c) < 32 || static_cast<unsigned char>(c) > 126) c = '?';
        line.resize(80, ' ');
        text += line;
    }
    return text;
}

}  // namespace

void write_segy(const std::string& path, const Survey& survey, const Traces& traces, const std::string& description) {
    check_traces_match(traces, survey, "traces to write");
    const int ns = survey.nt + 1;
    if (ns > 65535)
        throw InvalidArgument(fmt::format("{}: {} samples per trace; SEG-Y's 16-bit count holds at most 65535", path, ns));
    const long long picoseconds = std::llround(survey.dt * 1e12);
    replace_file_atomically(path, [&](const std::string& tmp) {
        SegyFile file(tmp, "w+b");
        std::string text = textual_header(survey, description);
        text.push_back('\0');
        check(segy_write_textheader(file, 0, text.c_str()), tmp + ": cannot write the textual header");

        std::array<char, kBinarySize> bin{};
        std::size_t max_receivers = 0;
        for (const Shot& s : survey.shots) max_receivers = std::max(max_receivers, s.receivers.size());
        set_bfield(bin.data(), SEGY_BIN_TRACES, static_cast<long long>(std::min<std::size_t>(max_receivers, 32767)), path);
        set_bfield(bin.data(), SEGY_BIN_INTERVAL, picoseconds <= 65535 ? picoseconds : 0, path);
        set_bfield(bin.data(), SEGY_BIN_INTERVAL_ORIG, picoseconds <= 65535 ? picoseconds : 0, path);
        set_bfield(bin.data(), SEGY_BIN_SAMPLES, ns, path);
        set_bfield(bin.data(), SEGY_BIN_SAMPLES_ORIG, ns, path);
        set_bfield(bin.data(), SEGY_BIN_FORMAT, SEGY_IEEE_FLOAT_4_BYTE, path);
        set_bfield(bin.data(), SEGY_BIN_SORTING_CODE, 1, path);  // as recorded
        set_bfield(bin.data(), SEGY_BIN_MEASUREMENT_SYSTEM, 1, path);  // metres
        set_bfield(bin.data(), SEGY_BIN_SEGY_REVISION, 0x0200, path);  // rev 2.0
        set_bfield(bin.data(), SEGY_BIN_TRACE_FLAG, 1, path);          // fixed trace length
        const double interval_us = survey.dt * 1e6;
        put_big_endian(bin.data() + kBinExtendedInterval, &interval_us, sizeof interval_us);
        const std::int32_t order = 16909060;
        put_big_endian(bin.data() + kBinByteOrder, &order, sizeof order);
        check(segy_write_binheader(file, bin.data()), tmp + ": cannot write the binary header");
        check(segy_set_format(file, SEGY_IEEE_FLOAT_4_BYTE), tmp + ": sample format");

        const long trace0 = kTextSize + kBinarySize;
        const int bsize = segy_trsize(SEGY_IEEE_FLOAT_4_BYTE, ns);
        std::vector<float> samples(static_cast<std::size_t>(ns));
        int index = 0;
        for (std::size_t s = 0; s < survey.shots.size(); ++s) {
            const Shot& shot = survey.shots[s];
            const Position source = shot.sources.empty() ? Position{} : shot.sources.front().position;
            for (std::size_t r = 0; r < shot.receivers.size(); ++r, ++index) {
                const Position& g = shot.receivers[r];
                std::array<char, kTraceHeaderSize> h{};
                const auto mm = [](double m) { return std::llround(m * 1000.0); };
                set_field(h.data(), SEGY_TR_SEQ_LINE, index + 1, path);
                set_field(h.data(), SEGY_TR_SEQ_FILE, index + 1, path);
                set_field(h.data(), SEGY_TR_FIELD_RECORD, static_cast<long long>(s) + 1, path);
                set_field(h.data(), SEGY_TR_NUMBER_ORIG_FIELD, static_cast<long long>(r) + 1, path);
                set_field(h.data(), SEGY_TR_ENERGY_SOURCE_POINT, static_cast<long long>(s) + 1, path);
                set_field(h.data(), SEGY_TR_TRACE_ID, 1, path);
                set_field(h.data(), SEGY_TR_RECV_GROUP_ELEV, -mm(g.z), path);
                set_field(h.data(), SEGY_TR_SOURCE_DEPTH, mm(source.z), path);
                set_field(h.data(), SEGY_TR_ELEV_SCALAR, kCoordinateScalar, path);
                set_field(h.data(), SEGY_TR_SOURCE_GROUP_SCALAR, kCoordinateScalar, path);
                set_field(h.data(), SEGY_TR_SOURCE_X, mm(source.x), path);
                set_field(h.data(), SEGY_TR_GROUP_X, mm(g.x), path);
                set_field(h.data(), SEGY_TR_COORD_UNITS, 1, path);
                set_field(h.data(), SEGY_TR_SAMPLE_COUNT, ns, path);
                set_field(h.data(), SEGY_TR_SAMPLE_INTER, picoseconds <= 65535 ? picoseconds : 0, path);
                set_field(h.data(), SEGY_TR_MEASURE_UNIT, -1, path);  // "other": V/m, as the textual header says
                check(segy_write_traceheader(file, index, h.data(), trace0, bsize),
                      fmt::format("{}: cannot write trace header {}", tmp, index));
                samples[0] = 0.0f;
                const double* x = traces[s].receiver(static_cast<int>(r));
                for (int n = 0; n < survey.nt; ++n) samples[static_cast<std::size_t>(n) + 1] = static_cast<float>(x[n]);
                check(segy_from_native(SEGY_IEEE_FLOAT_4_BYTE, ns, samples.data()), tmp + ": sample conversion");
                check(segy_writetrace(file, index, samples.data(), trace0, bsize),
                      fmt::format("{}: cannot write trace {} (disk full?)", tmp, index));
            }
        }
        check(segy_flush(file, false), tmp + ": cannot flush");
        file.close(tmp);
    });
}

namespace {

/// What a SEG-Y file's headers say of its layout.
struct SegyLayout {
    std::array<char, kBinarySize> bin{};  // the binary header, as segyio reads it
    int format = 0;                       // sample format code
    bool little = false;                  // byte order of the samples and headers
    int revision = 0;                     // SEG-Y revision (major)
    double extended_us = 0;               // rev 2's extended sample interval, us
    long trace0 = 0;                      // byte offset of the first trace header
    int ns = 0;                           // samples a trace
    int bsize = 0;                        // bytes of a trace's samples
    int n_traces = 0;
};

/// The layout of `path`, opened as `file`, whose sample format it sets:
/// byte order and format from the binary header's format code, the sample
/// count (binary header, else the first trace header) and the trace count.
SegyLayout read_layout(const std::string& path, std::uintmax_t file_bytes, SegyFile& file) {
    SegyLayout l;
    std::array<unsigned char, kBinarySize> raw{};  // the binary header as stored
    {
        std::ifstream in(path, std::ios::binary);
        in.seekg(kTextSize);
        in.read(reinterpret_cast<char*>(raw.data()), kBinarySize);
        if (!in) throw InputFileError(fmt::format("{}: cannot read the binary header", path));
    }
    const int format_be = get_raw<std::uint16_t>(raw.data() + 24, false);
    const int format_le = get_raw<std::uint16_t>(raw.data() + 24, true);
    l.format = format_be;
    if (!supported_format(format_be) && supported_format(format_le)) {
        l.little = true;
        l.format = format_le;
    }
    if (!supported_format(l.format))
        throw InputFileError(fmt::format("{}: sample format code {} (binary header bytes 3225-3226) is not one gprfwi reads "
                                "(1 IBM float, 2 int32, 3 int16, 5 IEEE float, 8 int8)", path, format_be));
    l.revision = raw[kBinRevisionMajor];
    l.extended_us = get_raw<double>(raw.data() + kBinExtendedInterval, l.little);

    check<InputFileError>(segy_set_format(file, l.format | (l.little ? SEGY_LSB : SEGY_MSB)), path + ": sample format");
    check<InputFileError>(segy_binheader(file, l.bin.data()), path + ": cannot read the binary header");
    l.trace0 = segy_trace0(l.bin.data());
    l.ns = segy_samples(l.bin.data());
    if (l.ns <= 0) {  // some writers leave the binary count empty: the first trace's
        std::ifstream in(path, std::ios::binary);
        in.seekg(l.trace0 + 114);
        unsigned char b[2];
        in.read(reinterpret_cast<char*>(b), 2);
        l.ns = in ? get_raw<std::uint16_t>(b, l.little) : 0;
    }
    if (l.ns <= 0) throw InputFileError(fmt::format("{}: no sample count (binary header 3221-3222, trace header 115-116)", path));
    l.bsize = segy_trsize(l.format, l.ns);
    const int err = segy_traces(file, &l.n_traces, l.trace0, l.bsize);
    if (err == SEGY_TRACE_SIZE_MISMATCH)
        throw InputFileError(fmt::format("{}: {} bytes after the headers are not a whole number of traces of {} samples "
                                "(format {}); traces of different lengths are not supported", path,
                                file_bytes - static_cast<std::uintmax_t>(l.trace0), l.ns, l.format));
    check<InputFileError>(err, path + ": cannot count the traces");
    if (l.n_traces <= 0) throw InputFileError(fmt::format("{}: no traces", path));
    return l;
}

/// The sample interval, s, and where it came from: the run file's override,
/// rev 2's extended interval, or the 16-bit fields of the binary header or
/// the first trace header (`h`) in options.interval_unit_s.
std::pair<double, std::string> sample_interval(const std::string& path, const SegyLayout& l, const char* h,
                                               const SegyReadOptions& options) {
    if (options.sample_interval_s > 0) return {options.sample_interval_s, "as configured"};
    if (l.revision >= 2 && std::isfinite(l.extended_us) && l.extended_us > 0)
        return {l.extended_us * 1e-6, "rev 2 extended sample interval"};
    std::int32_t interval = 0;
    segy_get_bfield(l.bin.data(), SEGY_BIN_INTERVAL, &interval);
    const std::int32_t trace_interval = static_cast<std::uint16_t>(field(h, SEGY_TR_SAMPLE_INTER));
    if (interval > 0 || trace_interval > 0)
        return {static_cast<std::uint16_t>(interval > 0 ? interval : trace_interval) * options.interval_unit_s,
                fmt::format("{} x {:g} s", interval > 0 ? "bytes 3217-3218" : "trace bytes 117-118",
                            options.interval_unit_s)};
    throw InputFileError(fmt::format("{}: no sample interval (binary header 3217-3218 and trace header 117-118 are 0); "
                            "give data.observed.sample_interval", path));
}

/// The shots from the trace headers: a new shot where the field record
/// changes (or, without record numbers, the source position), its source
/// and each trace's receiver in metres.
void read_geometry(const std::string& path, SegyFile& file, const SegyLayout& l, Survey& survey) {
    std::int32_t measurement = 0;
    segy_get_bfield(l.bin.data(), SEGY_BIN_MEASUREMENT_SYSTEM, &measurement);
    const double to_metres = measurement == 2 ? 0.3048 : 1.0;
    std::array<char, kTraceHeaderSize> h{};
    std::int32_t last_record = 0;
    bool records = false;
    for (int i = 0; i < l.n_traces; ++i) {
        check<InputFileError>(segy_traceheader(file, i, h.data(), l.trace0, l.bsize), fmt::format("{}: cannot read trace header {}", path, i));
        const int count = static_cast<std::uint16_t>(field(h.data(), SEGY_TR_SAMPLE_COUNT));
        if (count != 0 && count != l.ns)
            throw InputFileError(fmt::format("{}: trace {} has {} samples (bytes 115-116), the file {}; traces of different "
                                    "lengths are not supported", path, i, count, l.ns));
        const std::int32_t units = field(h.data(), SEGY_TR_COORD_UNITS);
        if (units == 2 || units == 3)
            throw InputFileError(fmt::format("{}: trace {}: coordinates in {} (bytes 89-90); gprfwi needs lengths: project them first",
                                    path, i, units == 2 ? "seconds of arc" : "degrees"));
        const std::int32_t cs = field(h.data(), SEGY_TR_SOURCE_GROUP_SCALAR), es = field(h.data(), SEGY_TR_ELEV_SCALAR);
        const Position source{to_metres * scaled(field(h.data(), SEGY_TR_SOURCE_X), cs),
                              to_metres * (scaled(field(h.data(), SEGY_TR_SOURCE_DEPTH), es) -
                                           scaled(field(h.data(), SEGY_TR_SOURCE_SURF_ELEV), es))};
        const Position receiver{to_metres * scaled(field(h.data(), SEGY_TR_GROUP_X), cs),
                                -to_metres * scaled(field(h.data(), SEGY_TR_RECV_GROUP_ELEV), es)};
        const std::int32_t record = field(h.data(), SEGY_TR_FIELD_RECORD);
        if (i == 0) records = record != 0;
        bool new_shot = i == 0;
        if (!new_shot) {
            const Position& prev = survey.shots.back().sources.front().position;
            new_shot = records ? record != last_record : (source.x != prev.x || source.z != prev.z);
            if (!new_shot && (source.x != prev.x || source.z != prev.z))
                throw InputFileError(fmt::format("{}: trace {} is in field record {} but its source ({}, {}) m differs from the "
                                        "record's ({}, {}) m", path, i, record, source.x, source.z, prev.x, prev.z));
        }
        last_record = record;
        if (new_shot) {
            survey.shots.emplace_back();
            survey.shots.back().sources.push_back({source, 1.0});
        }
        survey.shots.back().receivers.push_back(receiver);
    }
}

/// Every trace's samples as doubles, shot by shot in file order; a
/// non-finite sample is an error.
std::vector<ShotTraces> read_samples(const std::string& path, SegyFile& file, const SegyLayout& l, const Survey& survey) {
    std::vector<ShotTraces> traces;
    std::vector<char> buffer(static_cast<std::size_t>(l.bsize));
    const std::size_t bytes = static_cast<std::size_t>(l.bsize / l.ns);
    int index = 0;
    for (const Shot& shot : survey.shots) {
        const int n_rec = static_cast<int>(shot.receivers.size());
        ShotTraces& t = traces.emplace_back(n_rec, l.ns);
        for (int r = 0; r < n_rec; ++r, ++index) {
            check<InputFileError>(segy_readtrace(file, index, buffer.data(), l.trace0, l.bsize), fmt::format("{}: cannot read trace {}", path, index));
            check<InputFileError>(segy_to_native(l.format, l.ns, buffer.data()), fmt::format("{}: trace {}: sample conversion", path, index));
            double* x = t.receiver(r);
            for (int k = 0; k < l.ns; ++k) {
                const char* at = buffer.data() + static_cast<std::size_t>(k) * bytes;
                switch (l.format) {
                case 1:
                case 5: {
                    float v;
                    std::memcpy(&v, at, 4);
                    x[k] = v;
                    break;
                }
                case 2: {
                    std::int32_t v;
                    std::memcpy(&v, at, 4);
                    x[k] = v;
                    break;
                }
                case 3: {
                    std::int16_t v;
                    std::memcpy(&v, at, 2);
                    x[k] = v;
                    break;
                }
                default: x[k] = static_cast<std::int8_t>(*at);
                }
                if (!std::isfinite(x[k]))
                    throw InputFileError(fmt::format("{}: trace {} sample {} is {}; data must be finite", path, index, k, x[k]));
            }
        }
    }
    return traces;
}

}  // namespace

TraceData read_segy(const std::string& path, const SegyReadOptions& options, bool samples) {
    if (!std::filesystem::exists(path)) throw InputFileError(fmt::format("{}: no such file", path));
    const auto file_bytes = std::filesystem::file_size(path);
    if (file_bytes < static_cast<std::uintmax_t>(kTextSize + kBinarySize))
        throw InputFileError(fmt::format("{}: {} bytes, shorter than the SEG-Y file headers (3600 bytes)", path, file_bytes));
    SegyFile file(path, "rb");
    const SegyLayout l = read_layout(path, file_bytes, file);
    std::array<char, kTraceHeaderSize> h{};
    check<InputFileError>(segy_traceheader(file, 0, h.data(), l.trace0, l.bsize), path + ": cannot read trace header 0");
    const auto [dt, interval_source] = sample_interval(path, l, h.data(), options);

    TraceData out;
    out.survey.dt = dt;
    out.survey.nt = l.ns;
    out.t0 = field(h.data(), SEGY_TR_DELAY_REC_TIME) * 1e-3;
    read_geometry(path, file, l, out.survey);
    out.summary = fmt::format("SEG-Y rev {} {}, format {}, {} traces in {} shots, {} samples of {:.6g} s ({})", l.revision,
                              l.little ? "little-endian" : "big-endian", l.format, l.n_traces, out.survey.shots.size(),
                              l.ns, dt, interval_source);
    if (samples) out.traces = read_samples(path, file, l, out.survey);
    return out;
}

}  // namespace gprfwi
