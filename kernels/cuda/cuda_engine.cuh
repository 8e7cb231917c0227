#pragma once
// The CUDA engine: the same time loops as the CPU engine
// (lib/src/propagation/cpu_propagator.cpp), with every array on the GPU and
// every step a sequence of kernels on one stream; kept levels on the
// device, in a ring of page-locked host buffers, or on disk.
#include <cuda_runtime.h>
#include <algorithm>
#include <array>
#include <string>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>
#include "cuda_check.hpp"
#include "gprfwi/checkpoint_schedule.hpp"
#include "gprfwi/cuda_backend.hpp"
#include "gprfwi/dispatch.hpp"
#include "gprfwi/engine.hpp"
#include "gprfwi/error.hpp"
#include "gprfwi/kernels.hpp"
#include "gprfwi/memory_plan.hpp"
#include "gprfwi/parallel.hpp"
#include "device_data.cuh"
#include "level_ring.cuh"

namespace gprfwi {
// Internal to the CUDA backend (cuda_propagator.cu includes it).
namespace {

namespace k = kernels;

template <typename T, int ORDER, typename Stored>
class CudaEngine final : public Engine {
public:
    CudaEngine(const PropagationSetup& s, const PropagatorOptions& o, int device, DeviceTally& tally)
        : s_(s), opt_(o), device_(device), tally_(tally), bytes_(tally, o.cuda.poison_device_memory), ring_(device) {
        GPRFWI_CUDA_CHECK(cudaSetDevice(device_));
        GPRFWI_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    }
    ~CudaEngine() override {
        if (flags_host_) cudaFreeHost(flags_host_);
        // (a failed call here would leave CUDA's last error set for the next engine)
        for (cudaEvent_t e : checked_)
            if (e) cudaEventDestroy(e);
        if (stream_) cudaStreamDestroy(stream_);
    }

    void prepare(bool keep_levels) override {
        GPRFWI_CUDA_CHECK(cudaSetDevice(device_));
        levels_kept_ = false;
        born_kept_ = false;
        const k::GridParams<T> g = grid_params<T>(s_);
        if (g.nx != g_.nx || g.nz != g_.nz || g.stride != g_.stride) release();  // another grid: nothing to reuse
        g_ = g;
        check_memory(keep_levels);
        try {
            allocate(keep_levels);
        } catch (const DeviceAllocationFailed&) {  // held memory in the way: all of it given back, allocated anew
            release();
            check_memory(keep_levels);
            allocate(keep_levels);
        }
        load();  // here, so that the time loops measure propagation only
    }

    void release() override {
        ring_.release();
        drop_l2_window();
        coefs_.release();
        cq_.release();
        for (DeviceAxis<T>* a : {&x_, &z_})
            for (auto* p : {&a->ik_int, &a->a_int, &a->b_int, &a->ik_half, &a->a_half, &a->b_half}) p->release();
        for (auto* f : {&fields_[0], &fields_[1], &adjoint_[0], &adjoint_[1], &mid_}) f->release();
        sparse_.release();
        for (auto* a : {&q_x_, &q_z_, &p_x_, &p_z_, &lambda_third_, &checkpoints_}) a->release();
        for (auto* a : {&traces_, &g_prev_, &g_next_, &illumination_, &grad_wavelet_, &scales_}) a->release();
        frame_first_node_.release();
        max_scratch_.release();
        hi_planes_.release();
        levels_.release();
        for (auto* a : {&traces_host_, &g_prev_host_, &g_next_host_, &illumination_host_}) a->release();
        for (auto* f : {&born_[0], &born_[1]}) f->release();
        for (auto* a : {&dca_, &dcb_over_cb_, &dcb_}) a->release();
        born_traces_.release();
        born_traces_host_.release();
        dlevels_.release();
        for (auto* a : {&dscales_, &dg_prev_, &dg_next_}) a->release();
        for (auto* a : {&dg_prev_host_, &dg_next_host_}) a->release();
        born_kept_ = false;
        coefs_pageable_ = {};
        coefs_pinned_.release();
        levels_ready_ = false;
        levels_kept_ = false;
    }

    InternalTraces forward(bool keep_levels) override {
        GPRFWI_CUDA_CHECK(cudaSetDevice(device_));
        if (keep_levels && !levels_ready_) throw Error("CudaEngine::forward(true) needs prepare(true)");
        const int nt = s_.time.nt_internal, c = s_.checkpoint_steps;
        zero_fields();
        checks_ = {};  // (those of a run that threw)
        pairs_ = pairs_possible_ && !mid_.empty() && nt >= 2 && (!keep_levels || levels_are_ey(!host_levels_));
        notes_.forward_paired_share = pairs_ ? k::cuda::step_pair_share<T, ORDER>(g_, x_.view(), z_.view()) : 0.0;
        notes_.imaging_steps = paired_imaging(!host_levels_) ? 2 : 1;
        // bf16 levels in single precision, all kept: Ey as two planes, the upper one the level (split_planes)
        if (keep_levels && split_planes()) {
            hi_planes_.zero(stream_);  // (the first is step 0's Ey, zero)
            hi_cur_ = hi_planes_.get();
        }
        // the kept level that holds Ey^L (0: none; checkpointed modes keep theirs in the adjoint)
        auto level_of = [&](int L) { return keep_levels && !c && !s_.binomial_slots ? kept_index(L) : 0; };
        for (int m = 0; m < nt; ++m) {
            if (pairs_ && m + 1 < nt) {  // two steps at once (the last step of an odd count alone, below)
                const int j1 = level_of(m + 1), j2 = level_of(m + 2);
                step_pair(m, j1 ? level_for_writing(j1) : nullptr, j2 ? level_for_writing(j2) : nullptr);
                if (j1) level_written(j1);
                if (j2) level_written(j2);
                if (check_now(m) || check_now(m + 1)) check_finite(fields(), m + 1, "Ey");
                report_progress(opt_, "forward", m + 2, s_.time.nt_internal);
                ++m;
                continue;
            }
            if (keep_levels && c && m % c == 0) copy_state(fields(), checkpoint(m / c));  // the state at step m
            const int j = level_of(m + 1);
            Stored* keep = j ? level_for_writing(j) : nullptr;
            step(m, keep, j, true, /*ey_into_level=*/true);
            if (j) level_written(j);
            if (check_now(m)) check_finite(fields(), m, "Ey");
            report_progress(opt_, "forward", m + 1, s_.time.nt_internal);
        }
        // the last step's receiver samples (each step takes the previous one's)
        if (nt > 0) k::cuda::sample_receivers<T>(g_, sparse_.view, fields(), traces_.get(), nt, nt - 1, stream_);
        finish_forward(keep_levels);
        return download(traces_, traces_host_);
    }

    /// The Born run: the perturbation's fields step as the background's do,
    /// without a source, each step's Ey taking the scattering term in the
    /// same launch (k::cuda::born_step), every value as the CPU's. The
    /// background takes the forward's steps one at a time, keeping its
    /// levels as forward(true) does; but where Ey is two planes
    /// (split_planes), which the scattering term cannot read, forward(true)
    /// keeps them first and the Born run takes the background's steps again.
    /// With `from_levels`, the background is read from the kept levels
    /// (levels_exact) instead. BornLevels::both also keeps dEy at the same
    /// steps (dlevels_), on the device, for second_order_adjoint().
    bool levels_exact() const override {
        return levels_kept_ && std::is_same_v<Stored, T> && s_.snapshot_interval == 1 && !s_.checkpoint_steps &&
               !s_.binomial_slots && !host_levels_;
    }

    BornTraces born(const CoefficientPerturbation& p, BornLevels keep, bool from_levels) override {
        GPRFWI_CUDA_CHECK(cudaSetDevice(device_));
        const bool keep_d = keep == BornLevels::both;
        born_kept_ = false;
        if (keep_d && (s_.checkpoint_steps || s_.binomial_slots))
            throw InvalidArgument("second-order adjoint runs read every kept level: snapshots.checkpoint_steps and "
                                  "snapshots.binomial_slots are not available for them");
        if (keep_d && host_levels_)
            throw InvalidArgument(
                "full Hessian-vector products on the CUDA backend keep the background's and the perturbation's "
                "levels on the device: snapshots.storage host or disk (or automatic, where the levels do not fit "
                "on the device) is not available for them; set snapshots.storage: device (a larger "
                "snapshots.interval keeps fewer levels), or use backend cpu");
        if (from_levels && !levels_exact())
            throw Error("CudaEngine::born from kept levels needs every level of a forward run, uncompressed, on the device");
        const bool keep_levels = keep != BornLevels::none && !from_levels;
        if (keep_levels && !levels_ready_) throw Error("CudaEngine::born with kept levels needs prepare(true)");
        const int nt = s_.time.nt_internal, c = s_.checkpoint_steps;
        const std::size_t n = batch_size();
        BornTraces out;
        const bool separate = keep_levels && split_planes();
        if (separate) out.forward = forward(true);
        const bool kept_here = keep_levels && !separate;  // the levels kept by this run
        try {
            born_[0].resize(n, bytes_);
            born_[1].resize(n, bytes_, DeviceFields<T>::Memories::ey_z);
            dca_.upload(convert<T>(p.dca), bytes_, stream_);
            dcb_over_cb_.upload(convert<T>(p.dcb_over_cb), bytes_, stream_);
            born_traces_.resize(traces_.size(), bytes_);
        } catch (const DeviceAllocationFailed& e) {
            throw OutOfMemory(std::string("the Born run's fields: ") + e.what());
        }
        if (keep_d) {
            try {
                dcb_.upload(convert<T>(p.dcb), bytes_, stream_);
                dlevels_.resize(static_cast<std::size_t>(n_levels_) * n, bytes_);
                if constexpr (kScaledStorage<Stored>) dscales_.resize(static_cast<std::size_t>(n_levels_) * g_.n_shots, bytes_);
            } catch (const DeviceAllocationFailed& e) {
                const double mb = static_cast<double>(n_levels_) * static_cast<double>(level_bytes()) / 1e6;
                throw OutOfMemory("the perturbation's kept levels of a full Hessian-vector product (" +
                                  std::to_string(static_cast<long long>(mb)) +
                                  " MB beyond a gradient's; a larger snapshots.interval keeps fewer): " + e.what());
            }
        }
        zero_fields();
        pairs_ = false;
        notes_.forward_paired_share = 0;
        born_[0].zero(stream_);
        born_[1].zero(stream_);
        int current = 0;
        checks_ = {};
        auto level_of = [&](int L) { return kept_here && !c && !s_.binomial_slots ? kept_index(L) : 0; };
        const auto x = x_.view(), z = z_.view();
        for (int m = 0; m < nt; ++m) {
            k::TmFields<T> e_in = fields(), e_out = e_in;
            if (from_levels) {
                if constexpr (std::is_same_v<Stored, T>) {  // (level 0, Ey^0 = 0: the zeroed fields' Ey)
                    if (m > 0) e_in.ey = levels_.get() + static_cast<std::size_t>(m - 1) * n;
                    e_out.ey = levels_.get() + static_cast<std::size_t>(m) * n;
                }
            } else {
                if (kept_here && c && m % c == 0) copy_state(fields(), checkpoint(m / c));  // the state at step m
                const int j = level_of(m + 1);
                step(m, j ? level_for_writing(j) : nullptr, j, /*sample=*/!separate, /*ey_into_level=*/true);
                if (j) level_written(j);
                e_out = fields();
            }
            const k::TmFields<T> d_in = buffer_view(born_, current), d_out = buffer_view(born_, 1 - current);
            current = 1 - current;
            const k::cuda::StepSamples previous{sparse_.view, born_traces_.get(), nt, m - 1};  // of dEy^m
            k::cuda::born_step<T, ORDER>(g_, materials(), x, z, d_in, d_out, m > 0 ? &previous : nullptr,
                                         {coefs_.get(), dca_.get(), dcb_over_cb_.get(), e_in.ey, e_out.ey, d_out.ey},
                                         opt_.cuda, stream_);
            if (keep_d)
                if (const int j = kept_index(m + 1)) keep_level(d_out.ey, dlevel(j), dscales_for(j));
            if (check_now(m)) {
                if (!from_levels) check_finite(e_out, m, "Ey");
                check_finite(d_out, m, "the Born field dEy");
            }
            report_progress(opt_, "born", m + 1, nt);
        }
        const bool stepped = !separate && !from_levels;  // the background's traces taken here
        if (nt > 0) {
            k::cuda::sample_receivers<T>(g_, sparse_.view, buffer_view(born_, current), born_traces_.get(), nt, nt - 1,
                                         stream_);
            if (stepped) k::cuda::sample_receivers<T>(g_, sparse_.view, fields(), traces_.get(), nt, nt - 1, stream_);
        }
        finish_forward(separate || kept_here || from_levels);
        out.born = download(born_traces_, born_traces_host_);
        if (stepped) out.forward = download(traces_, traces_host_);
        born_kept_ = keep_d;
        return out;
    }

    /// The second-order adjoint: the adjoint (the gradient's, driven by
    /// `source`) takes the gradient's fused steps (k::cuda::adjoint_step),
    /// imaging with Ey into the first-order sums; its derivative (driven by
    /// `d_source`) takes each pass as a launch over the grid
    /// (k::cuda::second_order_passes), its first pass reading the adjoint's
    /// lambda_ey of the step, which the fused step leaves in its input buffer;
    /// the derivative's sums per node in the CPU's order
    /// (k::cuda::second_order_imaging). The derivative's fields are the Born
    /// run's (its dEy lives in the kept levels by now), its source goes
    /// through the Born traces' array.
    SecondOrderResult second_order_adjoint(const InternalTraces& source, const InternalTraces& d_source) override {
        if (!born_kept_)
            throw Error("CudaEngine::second_order_adjoint needs a Born run that kept the background's and its own levels");
        GPRFWI_CUDA_CHECK(cudaSetDevice(device_));
        const int nt = s_.time.nt_internal;
        const std::size_t n = batch_size(), cells = g_.shot_stride;
        upload_adjoint_source(source, traces_, traces_host_, "CudaEngine::second_order_adjoint");
        upload_adjoint_source(d_source, born_traces_, born_traces_host_, "CudaEngine::second_order_adjoint");
        try {
            for (auto* a : {&q_x_, &q_z_, &p_x_, &p_z_}) a->resize(n, bytes_);
            dg_prev_.resize(cells, bytes_);
            dg_next_.resize(cells, bytes_);
        } catch (const DeviceAllocationFailed& e) {
            throw OutOfMemory(std::string("the second-order adjoint's arrays: ") + e.what());
        }
        const k::TmFields<T> sec = born_[0].view();
        adjoint_[0].zero(stream_);
        adjoint_[1].zero(stream_);
        born_[0].zero(stream_);
        for (const auto* a : {&q_x_, &q_z_, &p_x_, &p_z_}) a->zero(stream_);
        for (const auto* a : {&g_prev_, &g_next_, &dg_prev_, &dg_next_}) a->zero(stream_);
        const k::AdjointScratch<T> scratch{q_x_.get(), q_z_.get(), p_x_.get(), p_z_.get()};
        const auto x = x_.view(), z = z_.view();
        const double w = s_.snapshot_interval;
        checks_ = {};
        int adj_cur = 0;
        if (nt > 0)  // the first step's source (each fused step adds the next one's)
            k::cuda::inject_adjoint_sources<T>(g_, sparse_.view, traces_.get(), nt, nt - 1, adjoint_[0].ey.get(),
                                               opt_.cuda, stream_);
        for (int m = nt - 1; m >= 0; --m) {
            const k::TmFields<T> adj = buffer_view(adjoint_, adj_cur), next_adj = buffer_view(adjoint_, 1 - adj_cur);
            k::cuda::inject_adjoint_sources<T>(g_, sparse_.view, born_traces_.get(), nt, m, sec.ey, opt_.cuda, stream_);
            const int j_prev = kept_index(m), j_next = kept_index(m + 1);
            const Stored* prev = level_for_reading(j_prev);
            const Stored* next = level_for_reading(j_next);
            const k::ImagingView<T, Stored> e{prev, next, w, dg_prev_.get(), dg_next_.get(), scales_for(j_prev),
                                              scales_for(j_next)};
            const k::ImagingView<T, Stored> de{j_prev ? dlevel(j_prev) : nullptr, j_next ? dlevel(j_next) : nullptr, w,
                                               dg_prev_.get(), dg_next_.get(), dscales_for(j_prev), dscales_for(j_next)};
            k::cuda::second_order_imaging<T, Stored>(g_, adj.ey, sec.ey, e, de, stream_);
            const k::ImagingView<T, Stored> img{prev, next, w, g_prev_.get(), g_next_.get(), scales_for(j_prev),
                                                scales_for(j_next)};
            const k::cuda::AdjointSparse sparse{sparse_.view, grad_wavelet_.get(), traces_.get(), nt, m,
                                                frame_first_node_.get()};
            k::cuda::adjoint_step<T, ORDER, Stored>(g_, materials(), x, z, adj, next_adj, scratch, &img, nullptr, sparse,
                                                    opt_.cuda, stream_);
            const k::BornCoupling<T> coupling{dca_.get(), dcb_.get(), adj.ey};  // (the step left it as it was)
            k::cuda::second_order_passes<T, ORDER>(g_, materials(), x, z, sec, scratch, coupling, stream_);
            adj_cur = 1 - adj_cur;
            if (check_now(m)) {
                check_finite(next_adj, m, "the adjoint field lambda_ey");
                check_finite(sec, m, "the second-order adjoint field");
            }
            report_progress(opt_, "second-order adjoint", nt - m, nt);
        }
        for (auto [d, h] : {std::pair{&g_prev_, &g_prev_host_}, std::pair{&g_next_, &g_next_host_},
                            std::pair{&dg_prev_, &dg_prev_host_}, std::pair{&dg_next_, &dg_next_host_}})
            h->resize(d->size());
        GPRFWI_CUDA_CHECK(cudaStreamSynchronize(stream_));
        settle_checks();
        for (auto [d, h] : {std::pair{&g_prev_, &g_prev_host_}, std::pair{&g_next_, &g_next_host_},
                            std::pair{&dg_prev_, &dg_prev_host_}, std::pair{&dg_next_, &dg_next_host_}})
            d->download_async(*h, stream_);
        GPRFWI_CUDA_CHECK(cudaStreamSynchronize(stream_));
        return {g_prev_host_.view(), g_next_host_.view(), dg_prev_host_.view(), dg_next_host_.view()};
    }

    AdjointResult adjoint(const InternalTraces& r_internal) override {
        if (!levels_kept_) throw Error("CudaEngine::adjoint needs a forward run that kept its levels");
        GPRFWI_CUDA_CHECK(cudaSetDevice(device_));
        const int nt = s_.time.nt_internal;
        upload_adjoint_source(r_internal, traces_, traces_host_, "CudaEngine::adjoint");
        int adj_cur = 0;  // the adjoint buffer holding the current step
        // lambda_ey: the buffers' two arrays, and a third where the imaging
        // takes steps in pairs (paired_imaging): the lambda_ey of the step
        // before, which this one's launch images at half of the rows, stays
        // unwritten there
        const bool paired = paired_imaging(!host_levels_);
        const std::array<T*, 3> lambda{adjoint_[0].ey.get(), adjoint_[1].ey.get(), lambda_third_.get()};
        const int n_lambda = paired ? 3 : 2;
        int lam_cur = 0;  // the one holding the current step
        struct Levels {
            int j_prev = 0, j_next = 0;
            const Stored* prev = nullptr;
            const Stored* next = nullptr;
        } left;  // the step before's, whose imaging it left to this one's launch at half of the rows
        const k::AdjointScratch<T> scratch{q_x_.get(), q_z_.get(), p_x_.get(), p_z_.get()};
        const auto x = x_.view(), z = z_.view();
        zero_adjoint_state(paired);
        if (host_levels_) ring_.start_reading();
        int injected = -1;  // the step whose adjoint source the step before added (k::cuda::AdjointSparse)
        // adjoint step m, imaging with kept levels j_prev = m, j_next = m+1 (0: not kept) at prev, next; `last`:
        // the last step whose levels are resident with these (the imaging leaves nothing to the next step)
        auto adjoint_step = [&](int m, int j_prev, const Stored* prev, int j_next, const Stored* next, bool last) {
            // transpose of the receiver sampling (unless added already), then of the source term with the step
            k::TmFields<T> adj = buffer_view(adjoint_, adj_cur), next_adj = buffer_view(adjoint_, 1 - adj_cur);
            adj.ey = lambda[lam_cur];
            next_adj.ey = lambda[(lam_cur + 1) % n_lambda];
            if (injected != m)
                k::cuda::inject_adjoint_sources<T>(g_, sparse_.view, traces_.get(), nt, m, adj.ey, opt_.cuda, stream_);
            const k::cuda::AdjointSparse sparse{sparse_.view, grad_wavelet_.get(), traces_.get(), nt, m,
                                                frame_first_node_.get()};
            const k::ImagingView<T, Stored> img{prev, next, static_cast<double>(s_.snapshot_interval),
                                                g_prev_.get(), g_next_.get(), scales_for(j_prev), scales_for(j_next),
                                                opt_.illumination ? illumination_.get() : nullptr};
            // in pairs: this step at the rows of m's parity (all rows when last), after the step before's
            k::cuda::PairedImaging<T, Stored> pair{};
            if (paired) {
                pair.later_parity = m & 1;
                if (!last) {
                    pair.first_row = m & 1;
                    pair.row_step = 2;
                }
                pair.later = img;
                pair.later.ey_prev = left.prev;
                pair.later.ey_next = left.next;
                pair.later.scale_prev = scales_for(left.j_prev);
                pair.later.scale_next = scales_for(left.j_next);
                pair.later_lambda = lambda[(lam_cur + 2) % 3];
                left = last ? Levels{} : Levels{j_prev, j_next, prev, next};
            }
            k::cuda::adjoint_step<T, ORDER, Stored>(g_, materials(), x, z, adj, next_adj, scratch, &img, &pair,
                                                    sparse, opt_.cuda, stream_);
            injected = m - 1;  // the step added the next one's
            adj_cur = 1 - adj_cur;
            lam_cur = (lam_cur + 1) % n_lambda;
            if (check_now(m)) check_finite(next_adj, m, "the adjoint field lambda_ey");
            report_progress(opt_, "adjoint", s_.time.nt_internal - m, s_.time.nt_internal);
        };
        // the reverse-time schedule (run_reverse_time): recomputed levels in a window of slots in levels_,
        // the binomial schedule's saved states in checkpoint(slot), the current state in fields()
        auto slot = [&](int k) { return k < 0 ? nullptr : levels_.get() + static_cast<std::size_t>(k) * batch_size(); };
        ReverseTimeSteps steps;
        steps.start_from_zero = [&] { zero_fields(); };
        steps.advance = [&](int m) { step(m, nullptr, 0, false); };
        steps.save = [&](int k) { copy_state(fields(), checkpoint(k)); };
        steps.load = [&](int k) {
            level_ey_ = nullptr;  // into the fields' own Ey
            copy_state(checkpoint(k), fields());
        };
        steps.load_segment = [&](int seg, int a) {
            // uncompressed levels hold Ey itself: Ey^a copied straight into its slot
            level_ey_ = nullptr;
            if constexpr (std::is_same_v<Stored, T>) level_ey_ = slot(0);
            copy_state(checkpoint(seg), fields());
            if (a > 0 && !level_ey_) keep_level(fields().ey, slot(0), a);
        };
        steps.keep = [&](int m, int k) { keep_level(fields().ey, slot(k), m); };
        steps.step_keeping = [&](int m, int k) { step(m, slot(k), m + 1, false, /*ey_into_level=*/true); };
        steps.adjoint = [&](int m, int prev, int next, bool last) {
            adjoint_step(m, m, slot(prev), m + 1, slot(next), last);
        };
        steps.adjoint_kept = [&](int m) {
            const int j_prev = kept_index(m), j_next = kept_index(m + 1);
            adjoint_step(m, j_prev, level_for_reading(j_prev), j_next, level_for_reading(j_next), m == 0);
            // level m+1 was used for the last time: its ring slot takes the level a ring below
            if (j_next && host_levels_) ring_.consumed(j_next, stream_);
        };
        run_reverse_time(nt, s_.checkpoint_steps, s_.binomial_slots ? &schedule_ : nullptr, steps);
        return adjoint_result();
    }

    /// The adjoint fields, the q and p scratch and the imaging sums at zero,
    /// for an adjoint run (a third lambda_ey where the imaging takes steps in
    /// pairs).
    void zero_adjoint_state(bool paired) {
        adjoint_[0].zero(stream_);
        adjoint_[1].zero(stream_);
        if (paired) lambda_third_.zero(stream_);
        for (const auto* a : {&q_x_, &q_z_, &p_x_, &p_z_}) a->zero(stream_);
        g_prev_.zero(stream_);
        g_next_.zero(stream_);
        if (opt_.illumination) illumination_.zero(stream_);
    }

    /// An adjoint run's sums, once its steps are queued: the imaging sums (and
    /// the illumination) in this engine's page-locked buffers, which the
    /// result views, and each shot's wavelet gradient; a disk run's levels go.
    AdjointResult adjoint_result() {
        const int nt = s_.time.nt_internal;
        // what AdjointResult views, page-locked while the last steps run, where it must grow
        g_prev_host_.resize(g_prev_.size());
        g_next_host_.resize(g_next_.size());
        illumination_host_.resize(illumination_.size());
        // (the downloads below copy on the legacy stream, which does not wait for stream_)
        GPRFWI_CUDA_CHECK(cudaStreamSynchronize(stream_));
        settle_checks();
        AdjointResult out;  // the accumulators hold the sums over the shots
        g_prev_.download_async(g_prev_host_, stream_);
        g_next_.download_async(g_next_host_, stream_);
        illumination_.download_async(illumination_host_, stream_);  // (none without the option)
        GPRFWI_CUDA_CHECK(cudaStreamSynchronize(stream_));
        out.g_prev = g_prev_host_.view();
        out.g_next = g_next_host_.view();
        out.illumination = illumination_host_.view();
        const std::vector<double> gw = grad_wavelet_.download();
        out.grad_wavelet_internal.resize(s_.shots.size());
        for (std::size_t si = 0; si < s_.shots.size(); ++si)
            out.grad_wavelet_internal[si].assign(gw.begin() + static_cast<std::ptrdiff_t>(si * nt),
                                                 gw.begin() + static_cast<std::ptrdiff_t>((si + 1) * nt));
        if (host_levels_) ring_.finish_reading();
        return out;
    }

private:
    std::size_t batch_size() const { return g_.shot_stride * g_.n_shots; }
    /// Whether the forward keeps Ey as two 16-bit planes, the upper one the
    /// bf16 level itself (storage.hpp), so that keeping a level costs no
    /// store of its own: bf16 levels in single precision, all of them kept
    /// (not recomputed from checkpoints).
    static bool split_planes(const PropagationSetup& s) {
        return std::is_same_v<T, float> && std::is_same_v<Stored, Bf16> && !s.checkpoint_steps && !s.binomial_slots;
    }
    bool split_planes() const { return split_planes(s_); }
    k::MaterialView<T> materials() const {
        return {coefs_.get(), coefs_.get() + g_.shot_stride, cq_.get(), cq_uniform_};
    }

    /// Several shots read the same ca and cb at every node and step, each
    /// shot's warps at their own time, by which the fields streaming through
    /// L2 have pushed them out (a batch of 8 shots read them from DRAM
    /// about twice a step). Where they fit in half of the L2 that may be set
    /// aside for persisting accesses, the engine's stream gets an
    /// access-policy window over them and they stay in L2. Larger
    /// coefficients are left alone: a window over a share of them slows the
    /// steps (docs/performance.md, "CUDA tuning constants").
    /// CudaTuning::l2_persist = false turns it off, for measurements (docs/gpu.md).
    void keep_coefficients_in_l2() {
        const std::size_t bytes = coefs_.size() * sizeof(T);
        int set_aside = 0, max_window = 0;  // (two attributes, not all of cudaGetDeviceProperties: each call)
        GPRFWI_CUDA_CHECK(cudaDeviceGetAttribute(&set_aside, cudaDevAttrMaxPersistingL2CacheSize, device_));
        GPRFWI_CUDA_CHECK(cudaDeviceGetAttribute(&max_window, cudaDevAttrMaxAccessPolicyWindowSize, device_));
        const bool wanted = opt_.cuda.l2_persist && g_.n_shots >= 2 && bytes > 0 &&
                            bytes <= static_cast<std::size_t>(max_window);
        if (l2_window_ && wanted && window_base_ == coefs_.get() && window_bytes_ == bytes) return;  // as it is
        drop_l2_window();
        if (!wanted) return;
        // The windows of the engines alive at once (a batch's shot groups, each with its copy of the
        // coefficients) together within half the set-aside; the persisting lines limited to one window's
        // bytes, which they share (docs/performance.md, "Shot groups")
        if (!tally_.add_window(bytes, static_cast<std::size_t>(set_aside) / 2)) return;
        l2_window_.emplace(tally_, bytes);
        window_base_ = coefs_.get();
        window_bytes_ = bytes;
        GPRFWI_CUDA_CHECK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, bytes));
        cudaStreamAttrValue attr{};
        attr.accessPolicyWindow.base_ptr = coefs_.get();
        attr.accessPolicyWindow.num_bytes = bytes;
        attr.accessPolicyWindow.hitRatio = 1.0f;
        attr.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
        attr.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
        GPRFWI_CUDA_CHECK(cudaStreamSetAttribute(stream_, cudaStreamAttributeAccessPolicyWindow, &attr));
    }

    /// Takes the stream's L2 window away (its share given back).
    void drop_l2_window() {
        if (!l2_window_) return;
        l2_window_.reset();
        cudaStreamAttrValue none{};  // (a window of no bytes: none)
        GPRFWI_CUDA_CHECK(cudaStreamSetAttribute(stream_, cudaStreamAttributeAccessPolicyWindow, &none));
    }

public:
    std::string level_storage() const override {
        if (s_.checkpoint_steps) return "device memory, recomputed from checkpoints every " + std::to_string(s_.checkpoint_steps) + " steps";
        if (s_.binomial_slots)
            return "device memory, recomputed by binomial checkpointing from " + std::to_string(s_.binomial_slots) + " saved states";
        return host_levels_ ? ring_.describe() : "device memory";
    }

private:
    /// The forward fields at the current step (Ey in a kept level when the
    /// step wrote it there), and the buffer the next step writes.
    k::TmFields<T> buffer(int b) const { return buffer_view(fields_, b); }
    k::TmFields<T> fields() const {
        k::TmFields<T> f = buffer(current_);
        if (level_ey_) f.ey = level_ey_;
        f.ey_hi = hi_cur_;
        return f;
    }
    void zero_fields() {
        fields_[0].zero(stream_);
        fields_[1].zero(stream_);
        // the pairs' second step reads nodes of the middle buffer that no step writes (zeros on the CPU)
        if (!mid_.empty()) mid_.zero(stream_);
        current_ = 0;
        level_ey_ = nullptr;
        hi_cur_ = nullptr;
    }

    /// Forward step m: H and E from one buffer of Ey, Hx, Hz into the other,
    /// the source term; Ey^{m+1} kept as level j in `keep` when non-null.
    /// With `ey_into_level` and uncompressed levels, the step writes Ey^{m+1}
    /// into the level itself instead of a copy (the next step reads it
    /// there). When `sample`, the step also takes the receivers' samples of
    /// Ey^m (the previous step's; forward() takes the last step's itself).
    void step(int m, Stored* keep, int j, bool sample, bool ey_into_level = false) {
        const auto x = x_.view(), z = z_.view();
        const int nt = s_.time.nt_internal;
        const int b = 1 - current_;
        const k::TmFields<T> in = fields();
        k::TmFields<T> out = buffer(b);
        current_ = b;
        level_ey_ = nullptr;
        if (hi_cur_) {  // Ey as two planes: the upper one into the kept level, or a scratch plane between levels
            std::uint16_t* scratch = hi_planes_.get() + static_cast<std::size_t>(1 + (m + 1) % 2) * batch_size();
            out.ey_hi = hi_cur_ = keep ? reinterpret_cast<std::uint16_t*>(keep) : scratch;
        }
        if constexpr (std::is_same_v<Stored, T>) {
            if (keep && ey_into_level) {
                out.ey = level_ey_ = keep;
                keep = nullptr;
            }
        }
        // H^{m-1/2} -> H^{m+1/2};  Ey^m -> Ey^{m+1} (+ source term); sample Ey^{m+1}
        const k::cuda::StepSources sources{sparse_.view, sparse_.wavelets.get(), nt, m, sources_interior_};
        const k::cuda::StepSamples previous{sparse_.view, traces_.get(), nt, m - 1};  // of Ey^m, in `in`
        const k::cuda::StepSamples* samples = sample && m > 0 ? &previous : nullptr;
        if constexpr (kScaledStorage<Stored>) {
            // fp8 levels need the finished Ey^{m+1} for their scale: quantised after the source term
            k::cuda::step<T, ORDER, T>(g_, materials(), x, z, in, out, nullptr, &sources, samples, opt_.cuda, stream_);
            if (keep) keep_level(out.ey, keep, j);
        } else {
            k::cuda::step<T, ORDER, Stored>(g_, materials(), x, z, in, out, keep, &sources, samples, opt_.cuda, stream_);
        }
    }

    /// Forward steps m and m + 1 at once (k::cuda::step_pair): from the
    /// current buffer through the middle one into the other; Ey^{m+1} and
    /// Ey^{m+2} into kept levels `keep1` and `keep2` instead where non-null
    /// (only where levels_are_ey: the pairs write each Ey at every node, as
    /// step() does into its level with `ey_into_level`).
    void step_pair(int m, Stored* keep1, Stored* keep2) {
        const int nt = s_.time.nt_internal;
        const k::TmFields<T> in = fields();
        k::TmFields<T> out = buffer(1 - current_);
        k::TmFields<T> mid = out;
        mid.ey = mid_.ey.get();
        mid.hx = mid_.hx.get();
        mid.hz = mid_.hz.get();
        mid.psi_ey_z = mid_.psi_ey_z.get();
        current_ = 1 - current_;
        level_ey_ = nullptr;
        if constexpr (std::is_same_v<Stored, T>) {
            if (keep1) mid.ey = keep1;
            if (keep2) out.ey = level_ey_ = keep2;
        }
        const k::cuda::StepSources first{sparse_.view, sparse_.wavelets.get(), nt, m, true};
        const k::cuda::StepSources second{sparse_.view, sparse_.wavelets.get(), nt, m + 1, true};
        const k::cuda::StepSamples of_in{sparse_.view, traces_.get(), nt, m - 1};  // Ey^m
        const k::cuda::StepSamples of_mid{sparse_.view, traces_.get(), nt, m};     // Ey^{m+1}
        k::cuda::step_pair<T, ORDER>(g_, materials(), x_.view(), z_.view(), in, mid, out, first, second,
                                     m > 0 ? &of_in : nullptr, of_mid, opt_.cuda, stream_);
    }

    /// What a forward time loop leaves to do once its steps are queued: wait
    /// for them and for the kept levels' copies, read the blow-up checks, and
    /// mark the levels kept (or not).
    void finish_forward(bool keep_levels) {
        hi_cur_ = nullptr;
        traces_host_.resize(traces_.size());  // (page-locked while the last steps run, where it must grow)
        if (coefs_pinned_.size() < 3 * g_.shot_stride) {  // the next calls' coefficients go up from here (load())
            coefs_pinned_.resize(3 * g_.shot_stride);
            coefs_pageable_ = {};
        }
        GPRFWI_CUDA_CHECK(cudaStreamSynchronize(stream_));
        settle_checks();
        if (host_levels_) ring_.finish_writing();
        levels_kept_ = keep_levels;
    }

    /// Device traces [row][nt_internal] into internal traces, through `host`.
    InternalTraces download(const DeviceArray<double>& traces, PinnedArray<double>& host) {
        const int nt = s_.time.nt_internal;
        host.resize(traces.size());
        traces.download_async(host, stream_);
        GPRFWI_CUDA_CHECK(cudaStreamSynchronize(stream_));
        InternalTraces out = make_internal_traces(s_);
        std::size_t row = 0;
        for (auto& shot : out)
            for (auto& trace : shot) std::copy_n(host.get() + row++ * nt, nt, trace.begin());
        return out;
    }

    /// Copies an adjoint source (internal traces, the batch's receivers) into
    /// `device` through `host`, on the engine's stream, before the steps that
    /// read it (a cudaMemcpy would run on the legacy stream, which this one
    /// does not wait for, and may return before the copy has landed); the
    /// host buffer is not written again before the stream's synchronisation
    /// at the end of the call.
    void upload_adjoint_source(const InternalTraces& source, const DeviceArray<double>& device,
                               PinnedArray<double>& host, const char* caller) {
        const std::size_t nt = static_cast<std::size_t>(s_.time.nt_internal);
        std::size_t row = 0;
        for (const auto& shot : source)
            for (const auto& trace : shot) {
                if (trace.size() != nt || (row + 1) * nt > host.size() || (row + 1) * nt > device.size())
                    throw Error(std::string(caller) + ": the adjoint source does not match the batch's receivers");
                std::copy(trace.begin(), trace.end(), host.get() + row * nt);
                ++row;
            }
        if (row * nt != host.size() || row * nt != device.size())
            throw Error(std::string(caller) + ": the adjoint source does not match the batch's receivers");
        GPRFWI_CUDA_CHECK(cudaMemcpyAsync(device.get(), host.get(), row * nt * sizeof(double), cudaMemcpyHostToDevice,
                                          stream_));
    }

    /// Keeps the field `ey` as level j in `level` (fp8 with its per-shot scales).
    void keep_level(const T* ey, Stored* level, int j) { keep_level(ey, level, scales_for(j)); }
    void keep_level(const T* ey, Stored* level, double* scales) {
        if constexpr (kScaledStorage<Stored>) k::cuda::keep_level_fp8<T>(g_, ey, level, scales, max_scratch_.get(), stream_);
        else k::cuda::store_level<T, Stored>(g_, ey, level, stream_);
    }
    /// The Born run's kept dEy level j (1..n_levels_) and its per-shot scales (fp8 only, else nullptr).
    Stored* dlevel(int j) const { return dlevels_.get() + static_cast<std::size_t>(j - 1) * batch_size(); }
    double* dscales_for(int j) const {
        if (!kScaledStorage<Stored> || !j) return nullptr;
        return dscales_.get() + static_cast<std::size_t>(j - 1) * g_.n_shots;
    }

    /// The 7 fields of checkpoint `seg` (checkpoint_steps mode).
    k::TmFields<T> checkpoint(int seg) const {
        T* base = checkpoints_.get() + static_cast<std::size_t>(seg) * 7 * batch_size();
        const std::size_t n = batch_size();
        return {base, base + n, base + 2 * n, base + 3 * n, base + 4 * n, base + 5 * n, base + 6 * n};
    }

    void copy_state(const k::TmFields<T>& from, const k::TmFields<T>& to) {
        const std::size_t bytes = batch_size() * sizeof(T);
        const T* const src[7] = {from.ey, from.hx, from.hz, from.psi_ey_x, from.psi_ey_z, from.psi_hz_x, from.psi_hx_z};
        T* const dst[7] = {to.ey, to.hx, to.hz, to.psi_ey_x, to.psi_ey_z, to.psi_hz_x, to.psi_hx_z};
        for (int i = 0; i < 7; ++i)
            GPRFWI_CUDA_CHECK(cudaMemcpyAsync(dst[i], src[i], bytes, cudaMemcpyDeviceToDevice, stream_));
    }

    /// Whether the forward writes Ey into the kept levels themselves:
    /// uncompressed levels, all of them on the device (no checkpoints, whose
    /// segments are recomputed one step a pass); then its steps may go in pairs.
    static bool levels_are_ey(const PropagationSetup& s, bool levels_on_device) {
        return std::is_same_v<Stored, T> && levels_on_device && !s.checkpoint_steps && !s.binomial_slots;
    }
    bool levels_are_ey(bool levels_on_device) const { return levels_are_ey(s_, levels_on_device); }
    /// Kept levels are numbered j = L / interval = 1..n_levels_; 0 means not kept.
    int kept_index(int L) const {
        const int k = s_.snapshot_interval;
        return (L > 0 && L % k == 0 && L / k <= n_levels_) ? L / k : 0;
    }
    /// Per-shot scales of kept level j (fp8 only, else nullptr).
    double* scales_for(int j) const {
        if (!kScaledStorage<Stored> || !j) return nullptr;
        return scales_.get() + static_cast<std::size_t>(j - 1) * g_.n_shots;
    }
    std::size_t level_bytes() const { return batch_size() * sizeof(Stored); }
    /// Where the forward writes kept level j: its device slot, or a slot of the ring.
    Stored* level_for_writing(int j) {
        if (!host_levels_) return levels_.get() + static_cast<std::size_t>(j - 1) * batch_size();
        return ring_.for_writing(j, stream_);
    }
    /// After the step that wrote level j: the ring copies it out.
    void level_written(int j) {
        if (host_levels_) ring_.written(j, stream_);
    }
    /// The adjoint's view of kept level j (nullptr for 0), waiting for the ring's copy in.
    const Stored* level_for_reading(int j) {
        if (!j) return nullptr;
        if (!host_levels_) return levels_.get() + static_cast<std::size_t>(j - 1) * batch_size();
        return ring_.for_reading(j, stream_);
    }

    /// Whether the adjoint images its steps in pairs (k::cuda::PairedImaging),
    /// with a third lambda_ey array: where the levels of three steps are
    /// resident together (not those of binomial checkpointing, nor a ring
    /// of host or disk levels, where PCIe or the disk sets the pace anyway),
    /// and not for fp8 levels, whose bytes the pairs hardly reduce while
    /// their imaging threads, half as many with loops twice as long, lose
    /// (docs/performance.md, "CUDA tuning constants").
    static bool paired_imaging(const PropagationSetup& s, bool levels_on_device) {
        return levels_on_device && !s.binomial_slots && !kScaledStorage<Stored>;
    }
    bool paired_imaging(bool levels_on_device) const { return paired_imaging(s_, levels_on_device); }

    /// Whether the adjoint step needs q, p and frame_first_node (k::cuda::adjoint_uses_scratch).
    static bool adjoint_scratch(const PropagationSetup& s) {
        const auto [x, z] = strips(s);
        return k::cuda::adjoint_uses_scratch<T, ORDER>(grid_params<T>(s), x, z);
    }
    bool adjoint_scratch() const { return adjoint_scratch(s_); }

    /// Whether the forward may take its steps in pairs: every source point in
    /// the step's interior (k::cuda::StepSources) and a pair's launch that
    /// pays (k::cuda::step_pair_applies).
    static bool pairs_possible(const PropagationSetup& s, const PropagatorOptions& o) {
        const k::GridParams<T> g = grid_params<T>(s);
        const auto [x, z] = strips(s);
        return sources_interior(s) && k::cuda::step_pair_applies<T, ORDER>(g, x, z, o.cuda);
    }
    static bool sources_interior(const PropagationSetup& s) {
        const k::GridParams<T> g = grid_params<T>(s);
        const auto [x, z] = strips(s);
        for (const auto& op : s.shots)
            for (const PointWeight& p : op.source)
                if (!k::cuda::step_interior_contains<T, ORDER>(g, x, z, p.index)) return false;
        return true;
    }

    /// Per shot and pack of the adjoint step's frame, the first receiver node
    /// in it (k::cuda::AdjointSparse::frame_first_node), or -1.
    std::vector<int> frame_first_nodes() const {
        const auto x = x_.view(), z = z_.view();
        const std::size_t packs = k::cuda::adjoint_frame_packs<T, ORDER>(g_, x, z);
        std::vector<int> first(packs * s_.shots.size(), -1);
        const auto& shot = sparse_.host_node_shot;
        for (std::size_t j = shot.size(); j-- > 0;) {  // the first of a pack is the last seen backwards
            const int t = k::cuda::adjoint_frame_pack<T, ORDER>(g_, x, z, sparse_.host_node_index[j]);
            if (t >= 0) first[static_cast<std::size_t>(shot[j]) * packs + static_cast<std::size_t>(t)] = static_cast<int>(j);
        }
        return first;
    }

public:
    /// What allocate() and load() allocate on the device for a call over `s`
    /// (a forward, or a gradient's forward and adjoint) in a fresh engine,
    /// with the kept levels on the device or in host memory: the backend's
    /// memory plan (memory_plan.hpp), which check_memory() reads before
    /// anything is allocated. One term an array; where an array is added
    /// there, it is added here.
    static MemoryEstimate plan(const PropagationSetup& s, const PropagatorOptions& o, bool gradient,
                               bool levels_on_device) {
        const std::size_t cells = s.grid.storage_size(), shots = s.shots.size(), n = cells * shots;
        const auto nt = static_cast<std::size_t>(s.time.nt_internal);
        // the point operators as DeviceSparse flattens them: receiver nodes are distinct (shot, node) pairs
        std::size_t sources = 0, rows = 0, weights = 0, wavelet = 0;
        std::vector<std::pair<std::size_t, std::size_t>> nodes;  // (shot, node) of every receiver weight
        for (std::size_t si = 0; si < shots; ++si) {
            const ShotOperators& op = s.shots[si];
            sources += op.source.size();
            rows += op.receivers.size();
            for (const auto& r : op.receivers) {
                weights += r.size();
                for (const PointWeight& w : r) nodes.emplace_back(si, w.index);
            }
            wavelet += op.wavelet_internal.size();
        }
        std::sort(nodes.begin(), nodes.end());
        nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
        const std::size_t sparse = sources * (sizeof(int) + sizeof(std::size_t) + sizeof(double)) +
                                   rows * sizeof(int) + (rows + 1) * sizeof(int) +
                                   weights * (sizeof(std::size_t) + 2 * sizeof(double) + sizeof(int)) +
                                   nodes.size() * (2 * sizeof(int) + sizeof(std::size_t)) + sizeof(int) +
                                   (shots + 1) * sizeof(int);
        std::size_t profiles = 0;  // padded to 4 values (convert_padded)
        for (const CpmlAxisProfile* p : {&s.cpml_x, &s.cpml_z})
            for (const std::vector<double>* a : p->arrays())
                profiles += (a->size() + 3) / 4 * 4;
        MemoryEstimate e;
        // ca and cb, cq; the CPML; two buffers of forward fields (7 and 4 arrays); the point operators
        e.fields_bytes = (3 * cells + profiles + 11 * n) * sizeof(T) + sparse;
        if (pairs_possible(s, o) && (!gradient || levels_are_ey(s, levels_on_device)))
            e.fields_bytes += 4 * n * sizeof(T);  // the step pairs' middle buffer
        e.traces_bytes = (rows * nt + wavelet) * sizeof(double);  // the traces (then the adjoint source); the wavelets
        if (!gradient) return e;
        e.fields_bytes += 12 * n * sizeof(T) + (o.illumination ? 3 : 2) * cells * sizeof(double);  // 7 + 5; g_prev, g_next
        e.traces_bytes += shots * nt * sizeof(double);  // the wavelets' gradient
        if (paired_imaging(s, levels_on_device)) e.fields_bytes += n * sizeof(T);  // a third lambda_ey
        if (adjoint_scratch(s)) {  // q, p; frame_first_node
            const auto [x, z] = strips(s);
            e.fields_bytes += 4 * n * sizeof(T) +
                              static_cast<std::size_t>(k::cuda::adjoint_frame_packs<T, ORDER>(grid_params<T>(s), x, z)) *
                                  shots * sizeof(int);
        }
        const std::size_t levels = nt / static_cast<std::size_t>(s.snapshot_interval);
        if constexpr (kScaledStorage<Stored>) e.fields_bytes += (levels + 1) * shots * sizeof(double);  // scales, max
        if (split_planes(s)) e.fields_bytes += 3 * n * sizeof(std::uint16_t);  // the zero and scratch upper planes
        const std::size_t state = 7 * n * sizeof(T);
        if (const int slots = s.binomial_slots) {
            e.snapshot_bytes = static_cast<std::size_t>(slots) * state + 2 * n * sizeof(Stored);
        } else if (const int c = s.checkpoint_steps) {
            e.snapshot_bytes = (nt + static_cast<std::size_t>(c) - 1) / static_cast<std::size_t>(c) * state +
                               static_cast<std::size_t>(c + 1) * n * sizeof(Stored);
        } else if (levels_on_device) {
            e.snapshot_bytes = levels * n * sizeof(Stored);
        } else {  // a ring of device slots; every level in pinned host memory, or only the ring's on the way to disk
            constexpr auto slots = static_cast<std::size_t>(LevelRing<Stored>::kSlots);
            e.snapshot_bytes = slots * n * sizeof(Stored);
            const bool disk = o.snapshots.storage == SnapshotStorage::disk;
            e.host_snapshot_bytes = (disk ? slots : levels) * n * sizeof(Stored);
        }
        return e;
    }

    std::size_t bytes_held() const override { return bytes_.held(); }

private:
    /// Chooses where kept levels live and throws OutOfMemory when nothing
    /// fits, counting what this engine holds as free (prepare() gives it
    /// back where it is in the way).
    void check_memory(bool gradient) {
        std::size_t free_b = 0, total_b = 0;
        GPRFWI_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
        free_b += bytes_.held();
        const auto storage = opt_.snapshots.storage;
        const bool recomputed = s_.checkpoint_steps || s_.binomial_slots;  // levels recomputed on the device
        host_levels_ = gradient && !recomputed && (storage == SnapshotStorage::host || storage == SnapshotStorage::disk ||
                                    (storage == SnapshotStorage::automatic &&
                                     plan(s_, opt_, true, true).total() > free_b / 10 * 9));
        const std::size_t need = plan(s_, opt_, gradient, !host_levels_).total();
        if (need <= free_b) return;
        const std::size_t snap = static_cast<std::size_t>(s_.time.nt_internal / s_.snapshot_interval) * batch_size();
        const bool levels_here = gradient && !host_levels_;  // (the level options help only levels on the device)
        cuda_messages::throw_out_of_memory({device_, device_name(device_), g_.n_shots, need, free_b, total_b,
                                            levels_here ? snap * sizeof(Stored) : 0, snap * 2,
                                            snap / 4 * sizeof(Stored)});
    }

    /// The CPML strips' bounds (no profiles), for the kernels' choices of where nodes lie.
    static std::pair<k::CpmlAxis<T>, k::CpmlAxis<T>> strips(const PropagationSetup& s) {
        k::CpmlAxis<T> x{}, z{};
        x.strip_low_end = s.cpml_x.strip_low_end;
        x.strip_high_begin = s.cpml_x.strip_high_begin;
        z.strip_low_end = s.cpml_z.strip_low_end;
        z.strip_high_begin = s.cpml_z.strip_high_begin;
        return {x, z};
    }

    /// Zeros the halos of every plane of `levels` (see allocate()).
    void zero_level_halos(const DeviceArray<Stored>& levels) {
        if (levels.size() == 0) return;
        k::cuda::zero_halos(g_, levels.get(), sizeof(Stored), levels.size() / g_.shot_stride, stream_);
    }

    /// Makes room for this call's arrays: each keeps its memory where that
    /// holds the call's size and is allocated anew where not; the level
    /// stores of other storage modes are given back.
    void allocate(bool gradient) {
        const std::size_t n = batch_size(), cells = g_.shot_stride;
        const int nt = s_.time.nt_internal;
        // ca and cb in one array, so that one L2 access-policy window holds both; new memory holds no values
        const bool fresh_ca_cb = coefs_.resize(2 * cells, bytes_);
        if (cq_.resize(cells, bytes_) || fresh_ca_cb) coefficients_id_ = 0;
        fields_[0].resize(n, bytes_);
        fields_[1].resize(n, bytes_, DeviceFields<T>::Memories::ey_z);
        sources_interior_ = sources_interior(s_);
        // the forward takes its steps in pairs where it can (without kept levels, or with levels that are its
        // Ey): a middle buffer for the first's fields
        pairs_possible_ = pairs_possible(s_, opt_);
        if (pairs_possible_ && (!gradient || levels_are_ey(!host_levels_)))
            mid_.resize(n, bytes_, DeviceFields<T>::Memories::ey_z);
        std::size_t rows = 0;
        for (const auto& op : s_.shots) rows += op.receivers.size();
        traces_.resize(rows * static_cast<std::size_t>(nt), bytes_);
        if (2 * static_cast<std::size_t>(g_.n_shots) > flags_capacity_) {  // NaN/Inf flags: [slot][shot]
            if (flags_host_) cudaFreeHost(flags_host_);
            flags_host_ = nullptr;
            flags_capacity_ = 0;
            GPRFWI_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&flags_host_), 2 * g_.n_shots * sizeof(int),
                                            cudaHostAllocMapped));
            flags_capacity_ = 2 * static_cast<std::size_t>(g_.n_shots);
            std::fill_n(flags_host_, flags_capacity_, 0);
            GPRFWI_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&flags_device_), flags_host_, 0));
        }
        if (!checked_[0])
            for (cudaEvent_t& e : checked_) GPRFWI_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
        levels_ready_ = false;
        if (!gradient) return;

        adjoint_[0].resize(n, bytes_);
        adjoint_[1].resize(n, bytes_, DeviceFields<T>::Memories::z);
        if (paired_imaging(!host_levels_)) lambda_third_.resize(n, bytes_);
        if (adjoint_scratch())  // only the frame kernels of wide CPML strips use them
            for (auto* a : {&q_x_, &q_z_, &p_x_, &p_z_}) a->resize(n, bytes_);
        g_prev_.resize(cells, bytes_);  // per node, summed over the shots
        g_next_.resize(cells, bytes_);
        illumination_.resize(opt_.illumination ? cells : 0, bytes_);
        grad_wavelet_.resize(s_.shots.size() * static_cast<std::size_t>(nt), bytes_);
        n_levels_ = nt / s_.snapshot_interval;
        if constexpr (kScaledStorage<Stored>) {
            scales_.resize(static_cast<std::size_t>(n_levels_) * g_.n_shots, bytes_);
            max_scratch_.resize(g_.n_shots, bytes_);
        }
        // The forward writes Ey (float levels) or its upper plane (split_planes) straight into the levels and
        // the next step reads it there, halo included: the halo, which no step writes, must hold zeros, not what
        // freed memory left. Zeroed when the levels are allocated, the halos only (a missed halo turns the
        // results of CudaBackend.NothingIsReadBeforeItIsWritten into NaN).
        if (host_levels_) {
            levels_.release();
            checkpoints_.release();
            if (ring_.prepare(n, n_levels_, opt_.snapshots.storage == SnapshotStorage::disk, opt_.snapshots.scratch_dir,
                              bytes_))
                zero_level_halos(ring_.slots());
        } else {
            ring_.release();
            bool fresh = false;
            if (const int slots = s_.binomial_slots) {
                checkpoints_.resize(static_cast<std::size_t>(slots) * 7 * n, bytes_);  // the saved states
                fresh = levels_.resize(2 * n, bytes_);  // Ey^m and Ey^{m+1} of the step being reversed
                if (schedule_of_ != std::pair{nt, slots}) {
                    schedule_ = binomial_schedule(nt, slots);
                    schedule_of_ = {nt, slots};
                }
            } else if (const int c = s_.checkpoint_steps) {
                checkpoints_.resize(static_cast<std::size_t>((nt + c - 1) / c) * 7 * n, bytes_);
                fresh = levels_.resize(static_cast<std::size_t>(c + 1) * n, bytes_);  // one segment's levels
            } else {
                checkpoints_.release();
                fresh = levels_.resize(static_cast<std::size_t>(n_levels_) * n, bytes_);
            }
            if (fresh) zero_level_halos(levels_);
        }
        if (split_planes()) hi_planes_.resize(3 * n, bytes_);
        levels_ready_ = true;
    }

    /// Loads what the call's setup holds: the model's coefficients (unless
    /// the device holds these already: MaterialCoefficients::id), the CPML
    /// profiles, the point operators and wavelets, and the receiver nodes of
    /// the adjoint's frame. With CudaTuning::poison_device_memory, everything
    /// is poisoned first (but the levels' halos, which must hold zeros).
    void load() {
        if (opt_.cuda.poison_device_memory) {
            bytes_.poison(stream_);
            sparse_.forget();
            coefficients_id_ = 0;
            zero_level_halos(levels_);
            zero_level_halos(ring_.slots());
        }
        if (coefficients_id_ != s_.coefficients->id) load_coefficients();
        keep_coefficients_in_l2();
        x_.upload(s_.cpml_x, bytes_, stream_);
        z_.upload(s_.cpml_z, bytes_, stream_);
        sparse_.upload(s_, bytes_, stream_);
        if (levels_ready_ && adjoint_scratch()) frame_first_node_.upload(frame_first_nodes(), bytes_, stream_);
    }

    /// The model's coefficients in the arithmetic type, up to the device.
    void load_coefficients() {
        coefficients_id_ = 0;  // (until their copies are queued)
        const std::size_t cells = g_.shot_stride;
        const double* ca = s_.ca().data();
        const double* cb = s_.cb().data();
        const double* cq = s_.cq().data();
        // A call stages them in page-locked memory that an earlier call's time loop pinned (its copies up are DMA
        // and queued); the first call in pageable memory (a copy from it is staged before it returns), since
        // pinning before its time loop would cost more than the copy.
        T* staged = nullptr;
        if (coefs_pinned_.size() >= 3 * cells) {
            GPRFWI_CUDA_CHECK(cudaStreamSynchronize(stream_));  // (no copy up of a call that threw still reads it)
            staged = coefs_pinned_.get();
        } else {
            coefs_pageable_.resize(3 * cells);
            staged = coefs_pageable_.data();
        }
#pragma omp parallel for schedule(static)
        for (std::size_t i = 0; i < cells; ++i) {
            staged[i] = static_cast<T>(ca[i]);
            staged[cells + i] = static_cast<T>(cb[i]);
            staged[2 * cells + i] = static_cast<T>(cq[i]);
        }
        GPRFWI_CUDA_CHECK(cudaMemcpyAsync(coefs_.get(), staged, 2 * cells * sizeof(T), cudaMemcpyHostToDevice, stream_));
        GPRFWI_CUDA_CHECK(cudaMemcpyAsync(cq_.get(), staged + 2 * cells, cells * sizeof(T), cudaMemcpyHostToDevice, stream_));
        cq_uniform_ = static_cast<T>(s_.coefficients->cq_uniform);
        coefficients_id_ = s_.coefficients->id;
    }

    bool check_now(int step) const { return blowup_check_due(s_, opt_.blowup_check_interval, step); }

    /// Checks `field` (all shots) for NaN/Inf after internal step `step`,
    /// without waiting for the GPU: one launch stamps the flag of each shot
    /// that has one, in mapped pinned host memory, and the flags are read at
    /// the check after next (by then long done) or by settle_checks() at the
    /// end of the time loop. A blow-up is so reported at most two check
    /// intervals late, as of the step it was found at.
    void check_finite(const k::TmFields<T>& f, int step, const char* what) {
        const int slot = check_slot_;
        check_slot_ = 1 - slot;
        settle_check(slot);  // its last use, two checks ago
        const int stamp = ++check_stamp_;  // (flags of earlier checks hold smaller stamps)
        k::cuda::flag_non_finite<T>(g_, f, flags_device_ + slot * g_.n_shots, stamp, opt_.cuda, stream_);
        GPRFWI_CUDA_CHECK(cudaEventRecord(checked_[slot], stream_));
        checks_[slot] = {true, step, stamp, what};
    }
    /// Reads the flags of the check in `slot`, if any: throws for a blow-up.
    void settle_check(int slot) {
        PendingCheck& c = checks_[slot];
        if (!c.pending) return;
        c.pending = false;
        GPRFWI_CUDA_CHECK(cudaEventSynchronize(checked_[slot]));
        for (int si = 0; si < g_.n_shots; ++si)
            if (flags_host_[slot * g_.n_shots + si] == c.stamp) throw_blowup(s_, c.what, si, c.step);
    }
    /// Reads the flags of the checks not read yet, the earlier first.
    void settle_checks() {
        settle_check(check_slot_);
        settle_check(1 - check_slot_);
    }

    const PropagationSetup& s_;
    const PropagatorOptions& opt_;
    int device_;
    DeviceTally& tally_;
    DeviceBytes bytes_;  // (before the arrays, which it outlives)
    cudaStream_t stream_ = nullptr;
    k::GridParams<T> g_{};
    DeviceArray<T> coefs_, cq_;  // coefs_: ca then cb
    std::vector<T> coefs_pageable_;  // ca, cb, cq on their way up: a first call's staging,
    PinnedArray<T> coefs_pinned_;    // and the later calls' (pinned during the first call's time loop)
    std::optional<L2WindowShare> l2_window_;  // coefs_ kept in L2 (keep_coefficients_in_l2)
    const void* window_base_ = nullptr;       // ... over these bytes
    std::size_t window_bytes_ = 0;
    T cq_uniform_ = 0;  // k::MaterialView::cq_uniform
    std::uint64_t coefficients_id_ = 0;  // MaterialCoefficients::id of the values in coefs_, cq_ (0: none)
    DeviceAxis<T> x_, z_;
    std::array<DeviceFields<T>, 2> fields_;  // the forward fields: step reads one, writes the other
    int current_ = 0;                        // ... the one holding the current step
    T* level_ey_ = nullptr;  // the kept level holding the current step's Ey (written there), or nullptr
    // Ey as two planes (split_planes): the current step's upper plane (a kept level, a scratch plane or, at
    // step 0, the zero plane: the first of hi_planes_, before two scratch planes), or nullptr
    std::uint16_t* hi_cur_ = nullptr;
    DeviceArray<std::uint16_t> hi_planes_;
    std::array<DeviceFields<T>, 2> adjoint_;  // the adjoint fields, double-buffered like fields_
    DeviceSparse sparse_;
    bool sources_interior_ = false;  // every source point in the step's interior (k::cuda::StepSources)
    bool pairs_possible_ = false;    // forward steps may go in pairs (k::cuda::step_pair_applies, sources inside)
    DeviceFields<T> mid_;            // the first step's fields of forward step pairs
    bool pairs_ = false;             // the last forward() took its steps in pairs
    DeviceArray<int> frame_first_node_;  // per shot and pack of the adjoint's frame (k::cuda::AdjointSparse)
    DeviceArray<double> traces_, g_prev_, g_next_, illumination_, grad_wavelet_;
    PinnedArray<double> traces_host_, g_prev_host_, g_next_host_, illumination_host_;  // their transfers
    DeviceArray<T> q_x_, q_z_, p_x_, p_z_;
    DeviceArray<T> lambda_third_;  // paired_imaging's third lambda_ey
    DeviceArray<T> checkpoints_;  // checkpoint_steps mode: 7 fields per segment; binomial: per slot
    std::vector<CheckpointAction> schedule_;  // binomial checkpointing, for schedule_of_
    std::pair<int, int> schedule_of_{-1, -1};  // (nt_internal, slots)
    DeviceArray<Stored> levels_;  // kept levels on the device (one segment's when checkpointing), or
    LevelRing<Stored> ring_;      // ... in host memory or on disk, through a ring of device slots
    bool host_levels_ = false;    // the kept levels are the ring's (on disk where the storage says so)
    struct PendingCheck {  // a NaN/Inf check whose flags are not read yet (check_finite)
        bool pending = false;
        int step = 0, stamp = 0;
        const char* what = "";
    };
    std::array<PendingCheck, 2> checks_{};
    int check_slot_ = 0, check_stamp_ = 0;
    int* flags_host_ = nullptr;    // mapped pinned memory, [slot][shot], zero at first
    int* flags_device_ = nullptr;  // the same, as the device sees it
    std::size_t flags_capacity_ = 0;  // ints
    std::array<cudaEvent_t, 2> checked_{};
    // the Born run's perturbation fields (double-buffered like fields_), coefficient perturbation and traces
    std::array<DeviceFields<T>, 2> born_;
    DeviceArray<T> dca_, dcb_over_cb_, dcb_;  // (dcb_ for the second-order adjoint only)
    DeviceArray<double> born_traces_;  // the Born traces; the second-order adjoint's second source
    PinnedArray<double> born_traces_host_;
    // a full Hessian-vector product's: the Born run's kept dEy levels (like levels_) and their per-shot scales
    // (fp8), the second-order adjoint's sums and their transfers
    DeviceArray<Stored> dlevels_;
    DeviceArray<double> dscales_, dg_prev_, dg_next_;
    PinnedArray<double> dg_prev_host_, dg_next_host_;
    bool born_kept_ = false;  // the last Born run kept both level sets (BornLevels::both)
    DeviceArray<double> scales_;                   // [kept level][shot], fp8 only
    DeviceArray<unsigned long long> max_scratch_;  // per shot, fp8 only
    int n_levels_ = 0;
    bool levels_ready_ = false;  // the last prepare() made room for kept levels
    bool levels_kept_ = false;
};

}  // namespace
}  // namespace gprfwi
