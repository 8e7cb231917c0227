#pragma once
// What an inversion's checkpoint.h5 holds besides the model: where the
// campaign stands, as the model file's attributes (inversion.cpp writes them
// after every accepted iteration and reads them for --resume).

#include <string>

#include "gprfwi/hdf5_io.hpp"

namespace gprfwi {

struct CheckpointState {
    int stage = 0;       // index of the stage in progress (or done)
    bool stage_done = false;
    int iterations = 0;  // accepted iterations of that stage
    int evaluations = 0; // of that stage
    double seconds = 0;  // campaign wall time so far
    double stage_seconds = 0;
    double j0 = 0, scale_eps_r = 0, scale_sigma = 0, sigma_ref = 0, eps_ref = 0;
    double sigma_sensitivity = 0;  // the campaign's, from its first calibration (0: not known)
    std::string history_csv;
};

/// The checkpoint in an inversion's output folder.
std::string checkpoint_path(const std::string& out_dir);

/// The checkpoint's datasets of the least-misfit iterate of a stage in
/// progress that ends at it (ends_at_least_misfit), where that iterate is
/// not the checkpoint's model; the history's least row of the stage says
/// which iteration it is.
inline constexpr const char* kLeastEpsR = "least_eps_r";
inline constexpr const char* kLeastSigma = "least_sigma";

/// The state as attributes: one number per field, the history as text. Of a
/// default state: the keys that read_model_h5 is to read.
ModelFileExtras checkpoint_attributes(const CheckpointState& s);

/// The state from attributes that checkpoint_attributes wrote.
CheckpointState checkpoint_state(const ModelFileExtras& a);

}  // namespace gprfwi
