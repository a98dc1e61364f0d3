#pragma once
/// Durations as Slurm's --time writes them, for time limits (`aryl submit --time-limit`, a job
/// file's `time_limit`, a trace's `time_limit` column).
#include <string>
#include <string_view>
#include <variant>

namespace aryl {

/// The longest time limit taken: a year. Longer ones are almost surely a typo.
inline constexpr double max_time_limit_s = 365.0 * 86400;

/// Seconds of `text`, or why it is not a duration (a phrase to follow the value's name).
/// Forms: `S` (seconds, a whole or decimal number: unlike Slurm, where it means minutes, a
/// bare number is seconds, as every other aryl duration), `M:SS`, `H:MM:SS`, `D-H`, `D-H:MM`,
/// `D-H:MM:SS` (whole numbers; minutes and seconds after a colon below 60, hours after a day
/// below 24), and a number with a unit: `30s`, `10m`, `2h`, `1d`. More than 0 and at most
/// max_time_limit_s; no sign, space or other character.
std::variant<double, std::string> parse_duration(std::string_view text);

} // namespace aryl
