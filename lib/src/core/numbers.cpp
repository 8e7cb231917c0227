#include "gprfwi/numbers.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

namespace gprfwi {

std::optional<double> parse_finite_double(std::string_view text) {
    if (text.empty() || std::isspace(static_cast<unsigned char>(text.front()))) return std::nullopt;
    const std::string s(text);  // (strtod needs the terminating zero)
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size() || !std::isfinite(v)) return std::nullopt;
    // ERANGE: an overflow (already refused: infinite) or an underflow to a subnormal or zero, which is the
    // nearest double and is kept
    return v;
}

}  // namespace gprfwi
