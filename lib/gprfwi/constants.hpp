#pragma once
// Physical constants (SI, CODATA 2018).

namespace gprfwi {

inline constexpr double kEps0 = 8.8541878128e-12;  // vacuum permittivity, F/m
inline constexpr double kMu0 = 1.25663706212e-6;   // vacuum permeability, H/m
inline constexpr double kPi = 3.14159265358979323846;

/// Speed of light in vacuum, m/s (1 / sqrt(eps0 * mu0)).
double speed_of_light();

}  // namespace gprfwi
