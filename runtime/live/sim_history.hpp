#pragma once
/// `aryl simulate --db FILE`: a simulation's jobs written to the history table of a state
/// file (history_table.hpp), so that `aryl history --db FILE` reads an experiment as it reads
/// a live run. Written after the run, from the records jobs.csv is made of: the run's
/// decisions are the same with and without it.
#include <string>
#include <vector>

#include "actors/run_records.hpp"

namespace aryl::live {

/// Whether `path` is a simulation's database (false: no file there); throws aryl::input_error
/// naming the file if it is anything else. `simulate --db` asks before the run, so that a run
/// is not made in vain.
bool check_simulation_db(const std::string& path);

/// Writes `records` (each job's final record) to `path`, `users[i]` as job i's user. A file
/// already there is replaced if it is a simulation's database, else refused: throws
/// aryl::input_error naming the file.
void write_simulation_db(const std::string& path, const std::vector<job_record>& records,
                         const std::vector<std::string>& users);

} // namespace aryl::live
