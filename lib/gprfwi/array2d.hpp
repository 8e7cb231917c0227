#pragma once
// A dense [nz][nx] row-major array of doubles: models and gradients.

#include <cstddef>
#include <vector>

namespace gprfwi {

class Array2D {
public:
    Array2D() = default;
    Array2D(int nz, int nx, double value = 0.0)
        : nz_(nz), nx_(nx), data_(static_cast<std::size_t>(nz) * nx, value) {}

    int nz() const { return nz_; }
    int nx() const { return nx_; }
    std::size_t size() const { return data_.size(); }
    double& operator()(int iz, int ix) { return data_[static_cast<std::size_t>(iz) * nx_ + ix]; }
    double operator()(int iz, int ix) const { return data_[static_cast<std::size_t>(iz) * nx_ + ix]; }
    double* data() { return data_.data(); }
    const double* data() const { return data_.data(); }
    std::vector<double>& values() { return data_; }
    const std::vector<double>& values() const { return data_; }

private:
    int nz_ = 0;
    int nx_ = 0;
    std::vector<double> data_;
};

}  // namespace gprfwi
