#include "inversion/stage_checkpoint.hpp"

#include <filesystem>

namespace gprfwi {

ModelFileExtras checkpoint_attributes(const CheckpointState& s) {
    ModelFileExtras a;
    a.numbers = {{"stage", s.stage},
                 {"stage_done", s.stage_done ? 1.0 : 0.0},
                 {"iterations", s.iterations},
                 {"evaluations", s.evaluations},
                 {"seconds", s.seconds},
                 {"stage_seconds", s.stage_seconds},
                 {"j0", s.j0},
                 {"scale_eps_r", s.scale_eps_r},
                 {"scale_sigma", s.scale_sigma},
                 {"sigma_ref", s.sigma_ref},
                 {"eps_ref", s.eps_ref},
                 {"sigma_sensitivity", s.sigma_sensitivity}};
    a.optional = {"sigma_sensitivity"};  // (not in the checkpoints of earlier versions)
    a.texts = {{"history", s.history_csv}};
    return a;
}

std::string checkpoint_path(const std::string& out_dir) {
    return (std::filesystem::path(out_dir) / "checkpoint.h5").string();
}

CheckpointState checkpoint_state(const ModelFileExtras& a) {
    auto number = [&](const char* key) { return a.numbers.at(key); };
    CheckpointState s;
    s.stage = static_cast<int>(number("stage"));
    s.stage_done = number("stage_done") != 0;
    s.iterations = static_cast<int>(number("iterations"));
    s.evaluations = static_cast<int>(number("evaluations"));
    s.seconds = number("seconds");
    s.stage_seconds = number("stage_seconds");
    s.j0 = number("j0");
    s.scale_eps_r = number("scale_eps_r");
    s.scale_sigma = number("scale_sigma");
    s.sigma_ref = number("sigma_ref");
    s.eps_ref = number("eps_ref");
    s.sigma_sensitivity = number("sigma_sensitivity");
    s.history_csv = a.texts.at("history");
    return s;
}

}  // namespace gprfwi
