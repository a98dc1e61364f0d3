#pragma once
/// An enum's words, in one table per enum whose order is the enum's: the word of a value and
/// the value of a word.
#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace aryl {

/// The value whose word is `name`; nothing for a word that is none of them.
template <class E, size_t N>
constexpr std::optional<E> enum_named(const std::array<std::string_view, N>& names, std::string_view name) {
  for (size_t i = 0; i < N; ++i)
    if (names[i] == name) return static_cast<E>(i);
  return std::nullopt;
}

} // namespace aryl
