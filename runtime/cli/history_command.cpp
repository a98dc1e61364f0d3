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
                               "every job a state file holds, ended or not, across restarts (as sacct): asked of the "
                               "running serve (its --state file), or read from a file with --state/--db");
  h->add_option("--state,--db", f.file,
                "read this file instead of asking serve: the state file of a serve that has stopped (serve --state), "
                "or a simulation database (simulate --db)");
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
  h->add_option("--page-size", f.page_size, "jobs per page asked of serve (0: serve's page)")->group("");
  return h;
}

std::vector<live::history_row> ask_history(const live::client_options& o, const live::history_filter& filter,
                                           uint32_t page_size) {
  wire::history_request q;
  auto unix_us = [](int64_t us) { return us < 0 ? uint64_t{0} : static_cast<uint64_t>(us); };
  if (filter.since_us) q.since_us = unix_us(*filter.since_us);
  if (filter.until_us) q.until_us = unix_us(*filter.until_us);
  q.users = {filter.users.begin(), filter.users.end()};
  q.tenants = {filter.tenants.begin(), filter.tenants.end()};
  q.outcomes = {filter.outcomes.begin(), filter.outcomes.end()};
  if (page_size > 0) q.limit = page_size;
  std::vector<live::history_row> rows;
  live::ask_each(o, q, [&](const wire::message& m) -> std::optional<wire::message> {
    auto* r = std::get_if<wire::history_reply>(&m);
    if (!r) throw input_error(fmt::format("history: {}:{} answered '{}'", o.host, o.port, wire::type_of(m)));
    for (auto& j : r->jobs) {
      live::history_row h;
      h.id = static_cast<uint32_t>(j.job_id);
      h.name = j.name;
      h.user = j.user;
      h.tenant = j.tenant;
      h.state = j.state;
      h.outcome = j.outcome.value_or("");
      h.submit_us = static_cast<int64_t>(j.submit_us);
      if (j.start_us) h.start_us = static_cast<int64_t>(*j.start_us);
      if (j.end_us) h.end_us = static_cast<int64_t>(*j.end_us);
      h.wait_s = j.wait_s;
      h.gpus = static_cast<int>(j.gpus);
      h.exits = j.exits;
      h.attempts = static_cast<int>(j.attempts);
      rows.push_back(std::move(h));
    }
    if (!r->next_after) return std::nullopt;
    // Each page starts past the last: a reply that does not move on would loop for ever.
    if (q.after && *r->next_after <= *q.after)
      throw input_error(fmt::format("history: {}:{} gave a page that does not move on (next after job {})", o.host,
                                    o.port, *r->next_after));
    q.after = r->next_after;
    return q;
  });
  return rows;
}

int run_history(const history_flags& f, int64_t now_us, std::ostream& out,
                const std::function<live::client_options()>& serve) {
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
  auto rows = f.file.empty() ? ask_history(serve(), filter, f.page_size) : live::read_history(f.file, filter);
  if (f.json) out << live::history_json(rows, columns) << '\n';
  else if (f.csv) out << live::history_csv(rows, columns);
  else out << live::history_table(rows, columns);
  out << std::flush;
  return 0;
}

} // namespace aryl::cli
