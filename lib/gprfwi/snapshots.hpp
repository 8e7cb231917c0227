#pragma once
// Storage of forward Ey levels for the imaging condition.
//
// Level L (Ey^L, L = 1..nt_internal) is kept when L % interval == 0. The
// adjoint step n (which holds lambda^{n+1}) images with the kept levels n and
// n+1, each weighted by `interval`:
//   g_prev += interval * lambda^{n+1} * Ey^n       when level n is kept
//   g_next += interval * lambda^{n+1} * Ey^{n+1}   when level n+1 is kept
// With interval 1 every level is kept and the sums are exact; with interval k
// they are rectangle-rule estimates from 1/k of the levels.

#include <cstddef>
#include <vector>

#include "gprfwi/storage.hpp"

namespace gprfwi {

template <typename Stored>
class SnapshotStore {
public:
    SnapshotStore(int nt_internal, int interval, std::size_t level_size) { reset(nt_internal, interval, level_size); }

    /// The store of another run's levels, in the memory of this one's where
    /// it is large enough (the levels' values are then those left there).
    void reset(int nt_internal, int interval, std::size_t level_size) {
        interval_ = interval;
        level_size_ = level_size;
        data_.resize(static_cast<std::size_t>(nt_internal / interval) * level_size);
    }

    static std::size_t bytes(int nt_internal, int interval, std::size_t level_size) {
        return static_cast<std::size_t>(nt_internal / interval) * level_size * sizeof(Stored);
    }

    int interval() const { return interval_; }
    /// The values its memory holds.
    std::size_t capacity() const { return data_.capacity(); }
    bool kept(int level) const { return level > 0 && level % interval_ == 0; }
    /// Storage of a kept level (level_size values), or nullptr.
    Stored* level(int level) {
        if (!kept(level)) return nullptr;
        const std::size_t slot = static_cast<std::size_t>(level / interval_ - 1);
        return slot * level_size_ < data_.size() ? data_.data() + slot * level_size_ : nullptr;
    }

private:
    int interval_ = 1;
    std::size_t level_size_ = 0;
    std::vector<Stored> data_;
};

}  // namespace gprfwi
