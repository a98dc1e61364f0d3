#pragma once
/// `aryl history`: every job a state file (`serve --state`, `simulate --db`) holds, filtered
/// as sacct's -S, -E, -u, -s and --format filter (docs/live.md, "Job history").
#include <CLI/CLI.hpp>

#include <ostream>
#include <string>
#include <vector>

namespace aryl::cli {

struct history_flags {
  std::string file, since, until, format;
  std::vector<std::string> users, tenants, outcomes;
  bool json = false, csv = false;
};

/// The subcommand and its flags, filling `f`.
CLI::App* add_history_command(CLI::App& app, history_flags& f);

/// Prints the jobs `f` asks for to `out`; `now_us`: the wall clock (unix µs) relative times
/// count back from. Throws aryl::input_error naming the flag or the file.
int run_history(const history_flags& f, int64_t now_us, std::ostream& out);

} // namespace aryl::cli
