#pragma once
// The names a run file and the command line give an enum's values, in one
// table per enum: parsing, printing and the list of choices a bad run file's
// error offers all read it, so they cannot disagree.

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "gprfwi/error.hpp"

namespace gprfwi {

template <class E>
struct Named {
    E value;
    const char* name;
};

template <class E, std::size_t N>
struct NameTable {
    const char* what;  // the setting, in messages: "backend"
    std::array<Named<E>, N> entries;

    /// The value named `name`; InvalidArgument listing the choices for any other.
    E parse(std::string_view name) const {
        for (const Named<E>& e : entries)
            if (name == e.name) return e.value;
        throw InvalidArgument(std::string(what) + " must be " + choices() + ", got '" + std::string(name) + "'");
    }

    const char* name(E value) const {
        for (const Named<E>& e : entries)
            if (e.value == value) return e.name;
        return "?";  // only a value cast from outside the enum
    }

    /// Every name, in the table's order.
    std::vector<std::string> names() const {
        std::vector<std::string> all;
        for (const Named<E>& e : entries) all.emplace_back(e.name);
        return all;
    }

    /// "'a', 'b' or 'c'".
    std::string choices() const {
        std::string s;
        for (std::size_t i = 0; i < N; ++i) {
            if (i > 0) s += i + 1 == N ? " or " : ", ";
            s += std::string("'") + entries[i].name + "'";
        }
        return s;
    }
};

}  // namespace gprfwi
