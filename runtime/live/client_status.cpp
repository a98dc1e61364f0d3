#include "runtime/live/client_status.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "solvers/input_error.hpp"
#include "runtime/live/array_rows.hpp"
#include "runtime/live/status_view.hpp"

namespace aryl::live {

void run_status(const client_options& o, const status_flags& f, std::ostream& out, const std::atomic<bool>& stop) {
  status_filter filter;
  filter.users = {f.users.begin(), f.users.end()};
  filter.tenants = {f.tenants.begin(), f.tenants.end()};
  filter.servers = {f.servers.begin(), f.servers.end()};
  if (!f.states.empty()) filter.states = parse_states("status: --state", f.states);
  status_sort sort;
  if (!f.sort.empty()) sort = parse_sort("status: --sort", f.sort);
  std::vector<const status_column*> columns;
  if (!f.format.empty()) columns = parse_columns("status: --format", f.format);
  if (f.watch_s && !(*f.watch_s > 0 && *f.watch_s <= 86400))
    throw input_error(fmt::format("status: --watch: {} is not a number of seconds in (0, 86400]", *f.watch_s));
  wire::status_request ask_status;
  bool ended = std::any_of(filter.states.begin(), filter.states.end(),
                           [](auto s) { return s != wire::job_state::queued && s != wire::job_state::running; });
  if (f.all || ended) ask_status.all = true;
  for (bool first = true; first || (f.watch_s && !stop.load()); first = false) {
    if (!first) {
      // In short steps, so that SIGINT or SIGTERM ends the watch at once.
      auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(*f.watch_s);
      while (!stop.load() && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (stop.load()) break;
      out << '\n';
    }
    auto reply = ask(o, ask_status, true);
    auto* s = std::get_if<wire::status_reply>(&*reply);
    if (!s) throw input_error("status: the scheduler answered '" + std::string(wire::type_of(*reply)) + "'");
    auto shown = narrowed(*s, filter, sort);
    if (f.json) {
      out << status_json(shown, json_keys(columns)) << '\n';
    } else {
      auto rows = fold_arrays(shown.jobs, f.expand_arrays);
      shown.jobs = std::move(rows.jobs);
      if (!columns.empty()) out << job_table(shown.jobs, columns, rows.ids);
      else print_status(out, shown, rows.ids);
    }
    out << std::flush;
  }
}

} // namespace aryl::live
