#pragma once
/// `aryl history` reads a state file's history table (history_table.hpp) directly, not
/// through serve: it works after the run, on a copy, and on a simulation's database (`aryl
/// simulate --db`). While a serve runs on the file it holds it exclusively (a second serve is
/// refused that way), and history says so instead of waiting.
#include <string>
#include <vector>

#include "runtime/live/history_view.hpp"

namespace aryl::live {

/// The jobs of `path` that `f` keeps, by id. Throws aryl::input_error naming the file: missing,
/// not a regular file, not an aryl state file or simulation database, one from before the
/// history table, or held by a running serve.
std::vector<history_row> read_history(const std::string& path, const history_filter& f);

} // namespace aryl::live
