#pragma once
/// `aryl status`: one status request (or one every --watch seconds), narrowed and printed as
/// the flags say (status_view.hpp).
#include <atomic>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "runtime/live/client.hpp"

namespace aryl::live {

/// The flags of `aryl status`, as given (empty: not given).
struct status_flags {
  bool json = false;
  bool all = false;
  std::vector<std::string> users, tenants, servers;
  std::string states, sort, format;
  std::optional<double> watch_s;  ///< nothing: once
  bool expand_arrays = false;     ///< a row per array task (tables fold each array otherwise)
};

/// Checks every flag before connecting (aryl::input_error naming the flag), then asks and
/// prints; with `watch_s`, again every `watch_s` seconds until `stop` is set. A state filter
/// naming an ended state asks for the ended jobs too, as --all does.
void run_status(const client_options& o, const status_flags& f, std::ostream& out, const std::atomic<bool>& stop);

} // namespace aryl::live
