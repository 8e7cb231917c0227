#pragma once
// Numbers read from text (run files, wavelet and picks files): every finite
// double in the forms strtod reads, and nothing else.

#include <optional>
#include <string_view>

namespace gprfwi {

/// The finite double that `text` spells, whole: a sign, digits with a point
/// and an exponent (`1E-5`, `+3`, `.5`, `2.5e8`), subnormals such as numpy's
/// `-2.181391268132436256e-308` included; nullopt for anything else, NaN,
/// infinities and numbers too large for a double included.
std::optional<double> parse_finite_double(std::string_view text);

}  // namespace gprfwi
