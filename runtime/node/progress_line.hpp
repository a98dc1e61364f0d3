#pragma once
/// The line a worker prints on stdout to report its progress, and its reading by the agent:
/// both ends of that format in one place. Any program can be a worker (docs/live.md): it
/// prints "ARYL_PROGRESS work_done=<number >= 0> step=<integer>" lines.
#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/wire/messages.hpp"

namespace aryl::live {

/// "ARYL_PROGRESS work_done=<shortest round-trip decimal> step=<step>", no newline.
std::string format_progress_line(double work_done, uint64_t step);

/// The `progress` a worker's stdout line reports: the line is
/// "ARYL_PROGRESS work_done=<number >= 0> step=<integer>" (fields in any order, step
/// optional, unknown fields ignored); false for any other line. Only work_done and step of
/// `out` are set.
bool parse_progress_line(std::string_view line, wire::progress& out);

} // namespace aryl::live
