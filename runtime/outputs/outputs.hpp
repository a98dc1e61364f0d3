#pragma once
/// Writes a run's outputs into one folder (README, "Outputs"): events.log and timeline.csv
/// as the run goes, jobs.csv and summary.json at the end. Each is written under a `.partial`
/// name and renamed only when the run succeeds, so a folder never mixes two runs' outputs.
#include <cstdio>
#include <functional>
#include <limits>
#include <memory>
#include <ostream>
#include <algorithm>
#include <string>
#include <vector>

#include "actors/run_records.hpp"
#include "actors/run_sink.hpp"

namespace aryl {

class run_writer : public run_sink {
public:
  /// Creates `out_dir` if needed and removes a previous run's outputs from it; throws
  /// input_error naming the path if it cannot write there. `flush_lines`: each line of
  /// events.log and timeline.csv reaches the OS as it is written, so a killed process loses
  /// none (live mode). `carry_on`: a run carried on after a scheduler restart keeps the
  /// events.log and timeline.csv the killed process left under their `.partial` names and
  /// goes on writing them: a line the kill cut short is dropped, the events are counted and
  /// the timeline's rows replayed into the usage integrals, so the outputs cover the whole
  /// run with each line once. A timeline row that does not parse is an input_error naming the
  /// file and line.
  explicit run_writer(const std::string& out_dir, bool flush_lines = false, bool carry_on = false);
  ~run_writer() override;
  run_writer(const run_writer&) = delete;
  run_writer& operator=(const run_writer&) = delete;

  void event(const event_record& e) override;
  void job(const job_record& j) override;
  /// Called with each event and each job's final record as they are written (live mode's
  /// job book); from the writer's thread.
  void observe(std::function<void(const event_record&)> on_event, std::function<void(const job_record&)> on_job) {
    on_event_ = std::move(on_event);
    on_job_ = std::move(on_job);
  }
  void snapshot(const cluster_snapshot& s) override;
  void slo_misses(int count) override { measures_.slo_misses += static_cast<uint64_t>(count); }
  /// Faults: GPU-seconds lost (work since the last checkpoint, GPUs held while stalled), and
  /// each crashed job's time from its first crash to running again (< 0: none in this report).
  void lost_work(double gpu_s, double recovery_s) override {
    measures_.lost_gpu_s += gpu_s;
    if (recovery_s >= 0) measures_.recoveries_s.push_back(recovery_s);
  }
  /// A reclaim returned its servers `latency_s` after the request, `late_s` past its deadline.
  void reclaim_done(double latency_s, double late_s) override {
    measures_.reclaim_latency_s.push_back(latency_s);
    measures_.reclaim_max_late_s = std::max(measures_.reclaim_max_late_s, late_s);
  }
  /// A quota reclaim's victims all checkpointed `latency_s` after it, `late_s` past its deadline.
  void quota_done(double latency_s, double late_s) override {
    measures_.quota_latency_s.push_back(latency_s);
    if (late_s > 0) ++measures_.quota_late;
    measures_.quota_max_late_s = std::max(measures_.quota_max_late_s, late_s);
  }
  const run_measures& measures() const override { return measures_; }
  /// A run carried on after a scheduler restart goes on from the measures journaled before.
  void restore_measures(const run_measures& before) { measures_ = before; }
  /// Inference GPUs busy serving demand from `t_us` on (idle serving servers are not used).
  void serving(int64_t t_us, int gpus) override;
  /// End of the submission window (the last submit): `window_gpu_usage` covers first to
  /// last submit, where the workload arrives, leaving out the drain of the longest jobs.
  void set_window_end(int64_t t_us) { window_end_us_ = t_us; }

  uint64_t jobs_recorded() const override { return jobs_.size(); }
  uint64_t events_recorded() const { return events_; }

  /// Fills the measured fields of `s`, writes jobs.csv, closes the files.
  run_summary finish(run_summary s) override;

  /// After a successful run: writes summary.json and renames every output to its final
  /// name. Throws input_error naming the file on any write error during the run.
  void commit(const run_summary& s);

  /// After a failed run: closes what is open and leaves the outputs under their `.partial`
  /// names. Returns a note naming them.
  std::string abandon();

private:
  std::string dir_;
  std::string write_error_;  ///< the first failed write, "<file>: <reason>"
  void check(std::FILE* f, const char* name);
  void close(std::FILE*& f, const char* name);
  std::FILE* events_file_ = nullptr;
  std::FILE* timeline_file_ = nullptr;
  /// Lines of events.log and timeline.csv not yet handed to their file: emit() writes them in
  /// blocks of 64 KiB, or each at once with `flush_lines`; write_pending() hands over the rest,
  /// as close_line_files() and the destructor do before closing both files.
  std::string events_out_, timeline_out_;
  void emit(std::FILE* f, std::string& pending);
  void write_pending();
  void close_line_files();
  std::vector<job_record> jobs_;
  std::function<void(const event_record&)> on_event_;
  std::function<void(const job_record&)> on_job_;
  uint64_t events_ = 0;
  run_measures measures_;
  bool flush_lines_ = false;
  bool have_snapshot_ = false;
  cluster_snapshot last_;
  int64_t first_t_us_ = 0;
  // Integrals over time of the snapshot quantities, in GPU- or server-microseconds.
  double busy_training_ = 0, training_total_ = 0, busy_inference_ = 0, inference_total_ = 0;
  double loaned_servers_us_ = 0;
  int serving_busy_ = 0;
  int64_t window_end_us_ = std::numeric_limits<int64_t>::max();
  double window_busy_ = 0, window_total_ = 0;
  int64_t serving_since_ = 0;
  double serving_busy_us_ = 0;
  void integrate_serving_to(int64_t t_us);
  void integrate_to(int64_t t_us);
  /// Integrates up to `s` and keeps it as the state from then on; true if it differs.
  bool take(const cluster_snapshot& s);
  /// Opens `name`.partial to append after its last complete line; returns the lines kept.
  std::vector<std::string> carry_on(const char* name);
};

/// The short human summary table printed on stdout.
void print_summary_table(std::ostream& os, const run_summary& s);

/// summary.json text (a flat object).
std::string summary_json(const run_summary& s);

} // namespace aryl
