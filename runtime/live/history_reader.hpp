#pragma once
/// `aryl history --state` reads a state file's history table (history_table.hpp) directly:
/// after the run, on a copy, and on a simulation's database (`aryl simulate --db`). While a
/// serve runs on the file it holds it exclusively (a second serve is refused that way), and
/// history says so instead of waiting; serve itself answers through its journal's connection
/// (query_history, state_journal::history_page).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/live/history_view.hpp"

struct sqlite3;

namespace aryl::live {

/// The jobs of `path` that `f` keeps, by id. Throws aryl::input_error naming the file: missing,
/// not a regular file, not an aryl state file or simulation database, one from before the
/// history table, or held by a running serve.
std::vector<history_row> read_history(const std::string& path, const history_filter& f);

/// A page of the same from a connection already open on the state file `path` (serve's own,
/// state_journal::history_page): the jobs `f` keeps with an id above `after` (none: from the
/// first), at most `limit`
/// of them (0: every one), by id. Throws aryl::input_error naming the file.
std::vector<history_row> query_history(sqlite3* db, const std::string& path, const history_filter& f,
                                       std::optional<uint32_t> after, size_t limit);

} // namespace aryl::live
