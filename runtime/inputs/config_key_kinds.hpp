#pragma once
/// The kinds of config key the table is written in (number, integer, boolean, choice, text):
/// each checks its text the one way every key of its kind does and shows its value in the
/// effective config as a JSON value of the field's type. Only the table's files include this.
#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "runtime/inputs/config_keys.hpp"
#include "runtime/inputs/input_limits.hpp"

namespace aryl::config_kinds {

[[noreturn]] inline void bad_value(const std::string& what) { throw std::invalid_argument(what); }

inline double to_double(const std::string& v) {
  double out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec == std::errc::result_out_of_range) bad_value("'" + v + "' is out of range");
  if (ec != std::errc{} || p != v.data() + v.size()) bad_value("'" + v + "' is not a number");
  if (!std::isfinite(out)) bad_value("'" + v + "' is not a finite number");
  return out;
}

inline int64_t to_int(const std::string& v) {
  int64_t out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec == std::errc::result_out_of_range) bad_value("'" + v + "' is out of range");
  if (ec != std::errc{} || p != v.data() + v.size()) bad_value("'" + v + "' is not an integer");
  return out;
}

inline std::optional<bool> parse_bool(const std::string& v) {
  if (v == "true" || v == "1" || v == "on" || v == "yes") return true;
  if (v == "false" || v == "0" || v == "off" || v == "no") return false;
  return std::nullopt;
}

inline bool to_bool(const std::string& v) {
  if (auto b = parse_bool(v)) return *b;
  bad_value("'" + v + "' is not a boolean (true/false)");
}

inline std::string show(double v) { return fmt::format("{:g}", v); }
inline std::string show(int64_t v) { return std::to_string(v); }

/// Every number a run takes has a stated range: within what the clock, the solvers and the
/// int types hold, checked before narrowing.
template <class T>
T within(T v, T lo, T hi) {
  if (v < lo || v > hi) bad_value(fmt::format("{} is outside [{}, {}]", show(v), show(lo), show(hi)));
  return v;
}

inline double fraction(double v) {
  if (v < 0 || v > 1) bad_value("must be within [0, 1]");
  return v;
}

inline std::string one_of(const std::string& v, const std::vector<std::string>& allowed) {
  std::string list;
  for (auto& a : allowed) {
    if (v == a) return v;
    list += list.empty() ? a : "|" + a;
  }
  bad_value("'" + v + "' is not one of " + list);
}

inline std::string range_text(double lo, double hi) {
  return "[" + config_number_text(lo) + ", " + config_number_text(hi) + "]";
}

/// The texts the table's entries are written with.
struct about {
  std::string unit;
  std::string description;
};

/// A key's texts; its parsing and its effective entry are set by its kind.
inline config_key key_of(std::string name, std::string type, std::string range, about a) {
  config_key k;
  k.name = std::move(name);
  k.type = std::move(type);
  k.range = std::move(range);
  k.unit = std::move(a.unit);
  k.description = std::move(a.description);
  return k;
}

/// The effective entry of a key of one field: `as(field(c))` under the key's name.
template <class F, class As>
void shown_as(config_key& k, F field, As as) {
  k.effective = [field, as, key = k.name](const config& c, const config_emit& emit) { emit(key, as(field(c))); };
}

/// A real number within [lo, hi]. `field(c)` is the config member it sets.
template <class F>
config_key number(std::string name, F field, double lo, double hi, about a) {
  auto k = key_of(std::move(name), "number", range_text(lo, hi), std::move(a));
  k.bounds = std::pair{lo, hi};
  k.set = [field, lo, hi](config& c, const std::string&, const std::string& v) { field(c) = within(to_double(v), lo, hi); };
  shown_as(k, field, [](double v) { return config_value{v}; });
  return k;
}

/// A duration in seconds within [lo, 1e9] (max_input_seconds).
template <class F>
config_key seconds(std::string name, F field, double lo, std::string description) {
  return number(std::move(name), field, lo, max_input_seconds, {"s", std::move(description)});
}

/// A share within [0, 1].
template <class F>
config_key share(std::string name, F field, std::string description) {
  auto k = key_of(std::move(name), "number", "[0, 1]", {"", std::move(description)});
  k.bounds = std::pair{0.0, 1.0};
  k.set = [field](config& c, const std::string&, const std::string& v) { field(c) = fraction(to_double(v)); };
  shown_as(k, field, [](double v) { return config_value{v}; });
  return k;
}

/// An integer within [lo, hi], stored in the field's own integer type.
template <class F>
config_key integer(std::string name, F field, int64_t lo, int64_t hi, about a) {
  using T = std::remove_cvref_t<decltype(field(std::declval<config&>()))>;
  auto k = key_of(std::move(name), "integer", range_text(static_cast<double>(lo), static_cast<double>(hi)), std::move(a));
  k.bounds = std::pair{static_cast<double>(lo), static_cast<double>(hi)};
  k.set = [field, lo, hi](config& c, const std::string&, const std::string& v) {
    field(c) = static_cast<T>(within<int64_t>(to_int(v), lo, hi));
  };
  shown_as(k, field, [](T v) { return config_value{static_cast<int64_t>(v)}; });
  return k;
}

template <class F>
config_key boolean(std::string name, F field, std::string description) {
  auto k = key_of(std::move(name), "boolean", "true, false", {"", std::move(description)});
  k.set = [field](config& c, const std::string&, const std::string& v) { field(c) = to_bool(v); };
  shown_as(k, field, [](bool v) { return config_value{v}; });
  return k;
}

/// One of the named values `options` (in the order errors and the docs list them); the field
/// holds the value (an enum, or the name itself).
template <class F, class E>
config_key choice(std::string name, F field, std::vector<std::pair<std::string, E>> options, std::string description) {
  std::vector<std::string> names;
  std::string range;
  for (auto& o : options) {
    names.push_back(o.first);
    range += (range.empty() ? "" : ", ") + o.first;
  }
  auto k = key_of(std::move(name), "choice", std::move(range), {"", std::move(description)});
  k.set = [field, options, names](config& c, const std::string&, const std::string& v) {
    auto chosen = one_of(v, names);
    for (auto& o : options)
      if (o.first == chosen) field(c) = o.second;
  };
  shown_as(k, field, [options](const E& v) {
    if constexpr (std::is_same_v<E, std::string>) {
      return config_value{v};
    } else {
      for (auto& o : options)
        if (o.second == v) return config_value{o.first};
      return config_value{std::string()};
    }
  });
  return k;
}

/// Text taken as it is (a path, a name, a date); `range` says what it should be.
template <class F>
config_key text(std::string name, F field, std::string range, std::string description) {
  auto k = key_of(std::move(name), "text", std::move(range), {"", std::move(description)});
  k.set = [field](config& c, const std::string&, const std::string& v) { field(c) = v; };
  shown_as(k, field, [](const std::string& v) { return config_value{v}; });
  return k;
}

/// `k` as the flag `flag` of simulate and serve sets it too.
inline config_key with_flag(config_key k, std::string flag) {
  k.flag = std::move(flag);
  return k;
}

} // namespace aryl::config_kinds

/// The config member a key sets, as an accessor that works on a const config too.
#define ARYL_CONFIG_FIELD(member) [](auto& c) -> auto& { return c.member; }
