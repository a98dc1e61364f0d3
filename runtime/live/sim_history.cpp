#include "runtime/live/sim_history.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "runtime/live/state_journal.hpp"
#include "solvers/input_error.hpp"

namespace aryl::live {
namespace {

/// A job as the history table takes it: ended, with the spec fields it keeps.
saved_job ended(const job_record& r, const std::vector<std::string>& users) {
  saved_job j;
  j.spec.index = r.index;
  j.spec.name = r.name;
  j.spec.gpus = r.gpus;
  j.spec.submit = sim_time::from_us(r.submit_us);
  j.spec.tenant = r.tenant;
  if (r.index < users.size()) j.spec.user = users[r.index];
  j.status = saved_status::ended;
  j.workers = r.last_workers;
  j.record = r;
  return j;
}

} // namespace

bool check_simulation_db(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  bool ours = false;
  {
    state_journal existing(path);  // refuses what is not an aryl state file, naming it
    ours = existing.simulated();
  }
  if (!ours)
    throw input_error(fmt::format("{}: --db: a serve's state file, not a simulation's database; give another path", path));
  return true;
}

void write_simulation_db(const std::string& path, const std::vector<job_record>& records,
                         const std::vector<std::string>& users) {
  if (check_simulation_db(path))
    for (auto* suffix : {"", "-wal", "-shm"}) ::unlink((path + suffix).c_str());
  state_journal db(path);
  db.mark_simulated();
  // In batches: a million jobs' rows in one go would hold them all in memory twice.
  constexpr size_t batch = 20'000;
  std::vector<saved_job> rows;
  rows.reserve(std::min(batch, records.size()));
  for (auto& r : records) {
    rows.push_back(ended(r, users));
    if (rows.size() < batch) continue;
    db.put_history(rows);
    rows.clear();
  }
  if (!rows.empty()) db.put_history(rows);
}

} // namespace aryl::live
