#include "runtime/cli/history_command.hpp"

#include <fmt/format.h>

#include "runtime/live/history_reader.hpp"
#include "runtime/live/history_view.hpp"
#include "solvers/input_error.hpp"

namespace aryl::cli {
namespace {

std::string column_names() {
  std::string out;
  for (auto& c : live::history_columns()) out += (out.empty() ? "" : ", ") + std::string(c.name);
  return out;
}

} // namespace

CLI::App* add_history_command(CLI::App& app, history_flags& f) {
  auto* h = app.add_subcommand("history",
                               "every job a state file holds, ended or not, across restarts (as sacct): serve's "
                               "--state file once serve has stopped, or a simulation's --db");
  h->add_option("--state,--db", f.file, "the state file (serve --state) or simulation database (simulate --db)")
      ->required();
  h->add_option("--since", f.since,
                "only jobs that ended at or after T, or have not ended: 2026-11-01, 2026-11-01T12:00[:SS] (UTC), or "
                "-7d, -12h, -30m, -45s before now (a simulation's clock starts at 1970-01-01T00:00)");
  h->add_option("--until", f.until, "only jobs submitted at or before T (as --since)");
  auto list = [&](const char* name, std::vector<std::string>& to, const std::string& what) {
    h->add_option(name, to, what)->delimiter(',')->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  };
  list("--user", f.users, "only jobs these users submitted (comma list)");
  list("--tenant", f.tenants, "only jobs of these tenants (comma list)");
  list("--outcome", f.outcomes,
       "only jobs that ended so: done, failed, timeout, node_lost, cancelled, dependency_never_met, or queued, running for jobs not ended; "
       "sacct's CD, F, TO, NF, CA, PD, R (comma list)");
  h->add_option("--format", f.format, "these columns (comma list): " + column_names());
  auto* json = h->add_flag("--json", f.json, "one JSON object: {\"jobs\": [...]}, durations in seconds");
  h->add_flag("--csv", f.csv, "CSV: a header of column names, durations in seconds")->excludes(json);
  return h;
}

int run_history(const history_flags& f, int64_t now_us, std::ostream& out) {
  live::history_filter filter;
  if (!f.since.empty()) filter.since_us = live::parse_history_time("history: --since", f.since, now_us);
  if (!f.until.empty()) filter.until_us = live::parse_history_time("history: --until", f.until, now_us);
  filter.users = {f.users.begin(), f.users.end()};
  filter.tenants = {f.tenants.begin(), f.tenants.end()};
  if (!f.outcomes.empty()) {
    std::string joined;
    for (auto& o : f.outcomes) joined += (joined.empty() ? "" : ",") + o;
    filter.outcomes = live::parse_outcomes("history: --outcome", joined);
  }
  std::vector<const live::history_column*> columns;
  if (!f.format.empty()) columns = live::parse_history_columns("history: --format", f.format);
  auto rows = live::read_history(f.file, filter);
  if (f.json) out << live::history_json(rows, columns) << '\n';
  else if (f.csv) out << live::history_csv(rows, columns);
  else out << live::history_table(rows, columns);
  out << std::flush;
  return 0;
}

} // namespace aryl::cli
