#pragma once
// What a CUDA engine keeps on the device of a batch: the CPML profiles, the
// fields (two buffers: a step reads one and writes the other) and the
// batch's sparse point operators, flattened for the kernels.

#include <array>
#include <cstddef>
#include <vector>

#include "device_memory.cuh"
#include "gprfwi/kernels.hpp"
#include "gprfwi/setup.hpp"

namespace gprfwi {
// Internal to the CUDA backend (cuda_propagator.cu includes it).
namespace {

namespace k = kernels;

template <typename T>
struct DeviceAxis {
    DeviceArray<T> ik_int, a_int, b_int, ik_half, a_half, b_half;
    int low_end = 0, high_begin = 0;
    void upload(const CpmlAxisProfile& p, DeviceBytes& bytes, cudaStream_t s) {
        ik_int.upload(convert_padded<T>(p.inv_kappa_int), bytes, s);
        a_int.upload(convert_padded<T>(p.a_int), bytes, s);
        b_int.upload(convert_padded<T>(p.b_int), bytes, s);
        ik_half.upload(convert_padded<T>(p.inv_kappa_half), bytes, s);
        a_half.upload(convert_padded<T>(p.a_half), bytes, s);
        b_half.upload(convert_padded<T>(p.b_half), bytes, s);
        low_end = p.strip_low_end;
        high_begin = p.strip_high_begin;
    }
    k::CpmlAxis<T> view() const {
        return {ik_int.get(), a_int.get(), b_int.get(), ik_half.get(), a_half.get(), b_half.get(), low_end,
                high_begin};
    }
};

template <typename T>
struct DeviceFields {
    DeviceArray<T> ey, hx, hz, psi_ey_x, psi_ey_z, psi_hz_x, psi_hx_z;
    /// What a buffer holds of the CPML memories: all, psi_ey_z only (the
    /// forward's second: the forward step reads it from one buffer and
    /// writes it to the other, see kernels::cuda::step), or psi_ey_z and
    /// psi_hx_z (the adjoint's second, likewise); a second buffer shares the
    /// others with the first.
    enum class Memories { all, ey_z, z };
    void resize(std::size_t n, DeviceBytes& bytes, Memories memories = Memories::all) {
        ey.resize(n, bytes);
        hx.resize(n, bytes);
        hz.resize(n, bytes);
        psi_ey_x.resize(memories == Memories::all ? n : 0, bytes);
        psi_ey_z.resize(n, bytes);
        psi_hz_x.resize(memories == Memories::all ? n : 0, bytes);
        psi_hx_z.resize(memories != Memories::ey_z ? n : 0, bytes);
    }
    void release() {
        for (auto* a : {&ey, &hx, &hz, &psi_ey_x, &psi_ey_z, &psi_hz_x, &psi_hx_z}) a->release();
    }
    bool empty() const { return !ey.get(); }
    void zero(cudaStream_t s) const {
        for (const auto* a : {&ey, &hx, &hz, &psi_ey_x, &psi_ey_z, &psi_hz_x, &psi_hx_z}) a->zero(s);
    }
    k::TmFields<T> view() const {
        return {ey.get(), hx.get(), hz.get(), psi_ey_x.get(), psi_ey_z.get(), psi_hz_x.get(), psi_hx_z.get()};
    }
};

/// Fields whose steps read Ey, Hx, Hz from one buffer and write them to the
/// other: buffer b's, with the CPML memories (updated in place) of buffer 0,
/// except those buffer b has itself.
template <typename T>
k::TmFields<T> buffer_view(const std::array<DeviceFields<T>, 2>& f, int b) {
    k::TmFields<T> v = f[0].view();
    v.ey = f[b].ey.get();
    v.hx = f[b].hx.get();
    v.hz = f[b].hz.get();
    if (f[b].psi_ey_z.get()) v.psi_ey_z = f[b].psi_ey_z.get();
    if (f[b].psi_hx_z.get()) v.psi_hx_z = f[b].psi_hx_z.get();
    return v;
}

/// The batch's point operators, flattened (see kernels::SparseOperators).
struct DeviceSparse {
    DeviceArray<int> source_shot, row_shot, row_begin, node_shot, node_begin, node_row, shot_source_begin;
    DeviceArray<std::size_t> source_index, row_index, node_index;
    DeviceArray<double> source_weight, row_weight, node_weight, wavelets;
    k::SparseOperators view{};
    std::vector<int> host_node_shot;  // the receiver nodes, in (shot, index) order
    std::vector<std::size_t> host_node_index;
    std::vector<ShotOperators> loaded;  // what the arrays hold

    /// Uploads the operators of `s`'s shots, unless they are those uploaded last.
    void upload(const PropagationSetup& s, DeviceBytes& bytes, cudaStream_t stream) {
        if (loaded == s.shots && source_shot.get()) return;
        std::vector<int> src_shot, r_shot, r_begin{0}, n_shot, n_begin{0}, n_row, shot_begin{0};
        std::vector<std::size_t> src_index, r_index, n_index;
        std::vector<double> src_weight, r_weight, n_weight, wav;
        struct Entry {  // a receiver weight at a node, in (shot, index) order, rows in order
            int shot;
            std::size_t index;
            int row;
            double weight;
        };
        std::vector<Entry> by_node;
        for (std::size_t si = 0; si < s.shots.size(); ++si) {
            const ShotOperators& op = s.shots[si];
            for (const PointWeight& pw : op.source) {
                src_shot.push_back(static_cast<int>(si));
                src_index.push_back(pw.index);
                src_weight.push_back(pw.weight);
            }
            shot_begin.push_back(static_cast<int>(src_index.size()));
            for (const auto& rec : op.receivers) {
                const int row = static_cast<int>(r_shot.size());
                r_shot.push_back(static_cast<int>(si));
                for (const PointWeight& pw : rec) {
                    r_index.push_back(pw.index);
                    r_weight.push_back(pw.weight);
                    by_node.push_back({static_cast<int>(si), pw.index, row, pw.weight});
                }
                r_begin.push_back(static_cast<int>(r_index.size()));
            }
            wav.insert(wav.end(), op.wavelet_internal.begin(), op.wavelet_internal.end());
        }
        std::stable_sort(by_node.begin(), by_node.end(), [](const Entry& a, const Entry& b) {
            return a.shot != b.shot ? a.shot < b.shot : a.index < b.index;
        });
        for (std::size_t i = 0; i < by_node.size(); ++i) {
            const Entry& e = by_node[i];
            if (i == 0 || e.shot != by_node[i - 1].shot || e.index != by_node[i - 1].index) {  // a new node
                if (i > 0) n_begin.push_back(static_cast<int>(n_row.size()));
                n_shot.push_back(e.shot);
                n_index.push_back(e.index);
            }
            n_row.push_back(e.row);
            n_weight.push_back(e.weight);
        }
        if (!by_node.empty()) n_begin.push_back(static_cast<int>(n_row.size()));
        source_shot.upload(src_shot, bytes, stream);
        source_index.upload(src_index, bytes, stream);
        source_weight.upload(src_weight, bytes, stream);
        row_shot.upload(r_shot, bytes, stream);
        row_begin.upload(r_begin, bytes, stream);
        row_index.upload(r_index, bytes, stream);
        row_weight.upload(r_weight, bytes, stream);
        node_shot.upload(n_shot, bytes, stream);
        node_index.upload(n_index, bytes, stream);
        node_begin.upload(n_begin, bytes, stream);
        node_row.upload(n_row, bytes, stream);
        node_weight.upload(n_weight, bytes, stream);
        shot_source_begin.upload(shot_begin, bytes, stream);
        wavelets.upload(wav, bytes, stream);
        host_node_shot = std::move(n_shot);
        host_node_index = std::move(n_index);
        view = {static_cast<int>(src_index.size()), source_shot.get(), source_index.get(), source_weight.get(),
                static_cast<int>(r_shot.size()), row_shot.get(), row_begin.get(), row_index.get(), row_weight.get(),
                static_cast<int>(host_node_shot.size()), node_shot.get(), node_index.get(), node_begin.get(), node_row.get(),
                node_weight.get(), static_cast<int>(s.shots.size()), shot_source_begin.get()};
        loaded = s.shots;
    }
    /// Forgets what it uploaded (a later upload() uploads again).
    void forget() { loaded.clear(); }
    void release() {
        for (auto* a : {&source_shot, &row_shot, &row_begin, &node_shot, &node_begin, &node_row, &shot_source_begin})
            a->release();
        for (auto* a : {&source_index, &row_index, &node_index}) a->release();
        for (auto* a : {&source_weight, &row_weight, &node_weight, &wavelets}) a->release();
        forget();
    }
};

}  // namespace
}  // namespace gprfwi
