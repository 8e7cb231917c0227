#pragma once
// Load/store policy separating the type a snapshot is stored in from the
// arithmetic type: T itself, or bfloat16 (8-bit mantissa, float's range).

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "gprfwi/host_device.hpp"

namespace gprfwi {

/// bfloat16 levels: the top 16 bits of an IEEE float (sign, exponent, 7
/// mantissa bits). A level is the float truncated to them (to_bf16) and read
/// back at the middle of the interval they stand for (from_bf16), which
/// bounds the error by half a bf16 step, as rounding to nearest would, with
/// no bias. Truncation makes the level the upper half of the float's bits:
/// the GPU's forward keeps Ey as that half, in the level's own slot, and a
/// lower half beside it, so that a kept level costs no store of its own.
struct Bf16 {
    std::uint16_t bits;
};

GPRFWI_HD std::uint32_t float_bits(float v) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(v);
#else
    std::uint32_t u;
    std::memcpy(&u, &v, sizeof u);
    return u;
#endif
}

GPRFWI_HD float bits_float(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    float v;
    std::memcpy(&v, &u, sizeof v);
    return v;
#endif
}

/// The upper 16 bits of v (v truncated towards zero; Inf and NaN stay so,
/// a NaN whose payload lies in the lower bits becomes Inf).
GPRFWI_HD Bf16 to_bf16(float v) {
    return Bf16{static_cast<std::uint16_t>(float_bits(v) >> 16)};
}

/// The middle of the interval of floats whose upper bits are b (zero, Inf
/// and NaN as they are).
GPRFWI_HD float from_bf16(Bf16 b) {
    std::uint32_t u = static_cast<std::uint32_t>(b.bits) << 16;
    if ((b.bits & 0x7fffu) != 0 && (b.bits & 0x7f80u) != 0x7f80u) u |= 0x8000u;
    return bits_float(u);
}

/// fp8 E4M3 (1 sign, 4 exponent bits with bias 7, 3 mantissa bits; largest
/// finite 448, no infinities). Kept levels in this type carry a scale per
/// level and shot (max |Ey| / 448), applied outside these conversions.
struct Fp8 {
    std::uint8_t bits;
};

inline constexpr float kFp8Max = 448.0f;

/// Round to nearest even, saturating at +-448; NaN stays NaN.
GPRFWI_HD Fp8 to_fp8(float v) {
    const std::uint8_t sign = static_cast<std::uint8_t>((float_bits(v) >> 24) & 0x80u);
    const float a = v < 0 ? -v : v;
    if (!(a == a)) return Fp8{static_cast<std::uint8_t>(sign | 0x7F)};
    if (a >= 464.0f) return Fp8{static_cast<std::uint8_t>(sign | 0x7E)};  // beyond the 448/480 midpoint
    if (a < 0.015625f) {  // below 2^-6: subnormal steps of 2^-9 (8 rounds up to the smallest normal)
        return Fp8{static_cast<std::uint8_t>(sign | static_cast<std::uint8_t>(rintf(a * 512.0f)))};
    }
    int e = static_cast<int>((float_bits(a) >> 23) & 0xFFu) - 127;  // floor(log2 a)
    int q = static_cast<int>(rintf((ldexpf(a, -e) - 1.0f) * 8.0f));
    if (q == 8) {
        ++e;
        q = 0;
    }
    const int field = e + 7;
    if (field > 15 || (field == 15 && q == 7)) return Fp8{static_cast<std::uint8_t>(sign | 0x7E)};
    return Fp8{static_cast<std::uint8_t>(sign | (field << 3) | q)};
}

GPRFWI_HD float from_fp8(Fp8 b) {
    const int field = (b.bits >> 3) & 0xF, q = b.bits & 7;
    if (field == 15 && q == 7) return NAN;
    const float mag = field == 0 ? ldexpf(static_cast<float>(q), -9) : ldexpf(1.0f + q / 8.0f, field - 7);
    return (b.bits & 0x80) ? -mag : mag;
}

/// Whether S is a storage type that needs a scale per level and shot.
template <typename S>
inline constexpr bool kScaledStorage = std::is_same_v<S, Fp8>;

/// Store an arithmetic value as S.
template <typename S, typename T>
GPRFWI_HD S store_as(T v) {
    if constexpr (std::is_same_v<S, Bf16>) return to_bf16(static_cast<float>(v));
    else if constexpr (std::is_same_v<S, Fp8>) return to_fp8(static_cast<float>(v));
    else return static_cast<S>(v);
}

/// Load a stored S as the arithmetic type T.
template <typename T, typename S>
GPRFWI_HD T load_as(S v) {
    if constexpr (std::is_same_v<S, Bf16>) return static_cast<T>(from_bf16(v));
    else if constexpr (std::is_same_v<S, Fp8>) return static_cast<T>(from_fp8(v));
    else return static_cast<T>(v);
}

}  // namespace gprfwi
