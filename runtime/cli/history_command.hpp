#pragma once
/// `aryl history`: every job a state file (`serve --state`, `simulate --db`) holds, filtered
/// as sacct's -S, -E, -u, -s and --format filter (docs/live.md, "Job history"): read from the
/// file with --state/--db, else asked of the running serve, a page at a time.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "runtime/live/client.hpp"
#include "runtime/live/history_view.hpp"

namespace aryl::cli {

struct history_flags {
  std::string file, since, until, format;
  std::vector<std::string> users, tenants, outcomes;
  bool json = false, csv = false;
  /// Jobs per page asked of serve (hidden: tests page through small answers); 0: serve's own.
  uint32_t page_size = 0;
};

/// The subcommand and its flags, filling `f` (the client flags, --port and the others, are
/// the caller's, as every client command's).
CLI::App* add_history_command(CLI::App& app, history_flags& f);

/// Prints the jobs `f` asks for to `out`; `now_us`: the wall clock (unix µs) relative times
/// count back from. Without a file, `serve` gives where the scheduler is (the usual client
/// flags and variables) and serve is asked. Throws aryl::input_error naming the flag, the
/// file or the scheduler's address.
int run_history(const history_flags& f, int64_t now_us, std::ostream& out,
                const std::function<live::client_options()>& serve);

/// The jobs `filter` keeps, asked of the scheduler at `o`, page after page (`page_size`
/// jobs each; 0: serve's page), on one connection.
std::vector<live::history_row> ask_history(const live::client_options& o, const live::history_filter& filter,
                                           uint32_t page_size);

} // namespace aryl::cli
