#pragma once
// The built-in example: a crosshole survey over a lossy model with a few
// permittivity and conductivity anomalies (4 m x 2.4 m, 200 MHz Ricker).

#include "gprfwi/model.hpp"
#include "gprfwi/survey.hpp"

namespace gprfwi {

/// True model of the example: background eps_r 6, sigma 2 mS/m, with a wet
/// (high eps_r, conductive) disc, a dry (low eps_r) disc and a clay layer.
Model example_model();

/// Smooth starting model of the example (the background alone).
Model example_starting_model();

/// Sources down a borehole at x = 0.4 m, receivers down one at x = 3.6 m.
Survey example_survey();

}  // namespace gprfwi
