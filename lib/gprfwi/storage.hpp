#pragma once
// Load/store policy separating the type a snapshot is stored in from the
// arithmetic type: T itself, or bfloat16 (8-bit mantissa, float's range).

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "gprfwi/host_device.hpp"

namespace gprfwi {

/// bfloat16: the top 16 bits of an IEEE float.
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

GPRFWI_HD Bf16 to_bf16(float v) {
    std::uint32_t u = float_bits(v);
    if ((u & 0x7f800000u) == 0x7f800000u) return Bf16{static_cast<std::uint16_t>(u >> 16)};  // Inf, NaN
    u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
    return Bf16{static_cast<std::uint16_t>(u >> 16)};
}

GPRFWI_HD float from_bf16(Bf16 b) {
    return bits_float(static_cast<std::uint32_t>(b.bits) << 16);
}

/// Store an arithmetic value as S.
template <typename S, typename T>
GPRFWI_HD S store_as(T v) {
    if constexpr (sizeof(S) == sizeof(Bf16) && !std::is_arithmetic_v<S>) return to_bf16(static_cast<float>(v));
    else return static_cast<S>(v);
}

/// Load a stored S as the arithmetic type T.
template <typename T, typename S>
GPRFWI_HD T load_as(S v) {
    if constexpr (sizeof(S) == sizeof(Bf16) && !std::is_arithmetic_v<S>) return static_cast<T>(from_bf16(v));
    else return static_cast<T>(v);
}

}  // namespace gprfwi
