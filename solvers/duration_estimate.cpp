#include "solvers/duration_estimate.hpp"

#include <algorithm>

namespace aryl {

void duration_history::sample::add(double w) { pending.push_back(w); }

std::pair<size_t, double> duration_history::sample::above(double done) const {
  if (!pending.empty()) {
    std::sort(pending.begin(), pending.end());
    auto middle = sorted.insert(sorted.end(), pending.begin(), pending.end());
    std::inplace_merge(sorted.begin(), middle, sorted.end());
    pending.clear();
    suffix.assign(sorted.size() + 1, 0.0);
    for (size_t i = sorted.size(); i-- > 0;) suffix[i] = suffix[i + 1] + sorted[i];
  }
  auto first = static_cast<size_t>(std::upper_bound(sorted.begin(), sorted.end(), done) - sorted.begin());
  return {sorted.size() - first, suffix.empty() ? 0.0 : suffix[first]};
}

void duration_history::add(int tenant, double work) {
  if (tenant < 0 || !(work > 0)) return;
  all_.add(work);
  if (by_tenant_.size() <= static_cast<size_t>(tenant)) by_tenant_.resize(static_cast<size_t>(tenant) + 1);
  by_tenant_[static_cast<size_t>(tenant)].add(work);
}

double duration_history::expected_remaining(int tenant, double done, double prior) const {
  done = std::max(0.0, done);
  const sample* s = &all_;
  if (tenant >= 0 && static_cast<size_t>(tenant) < by_tenant_.size() &&
      by_tenant_[static_cast<size_t>(tenant)].size() >= min_tenant_samples)
    s = &by_tenant_[static_cast<size_t>(tenant)];
  double left = 0;
  if (s->size() == 0) {
    left = prior > done ? prior - done : done;
  } else {
    auto [n, sum] = s->above(done);
    // Past every ended duration, the heavy tail's rule: as long again as it has run.
    left = n > 0 ? sum / static_cast<double>(n) - done : done;
  }
  return std::max(1.0, left);
}

void refresh_estimates(cluster_ledger& ledger, const duration_history& history, double prior_s, sim_time now) {
  auto refresh = [&](uint32_t id) {
    auto& j = ledger.jobs[id];
    if (j.estimated) return;
    double done = j.progress.done_at(now);
    double work = done + history.expected_remaining(j.tenant, done, prior_s);
    if (work != j.predicted_work) ledger.set_predicted_work(id, work);
  };
  for (auto id : ledger.running) refresh(id);
  // Re-keying moves entries of the queue's index, not of `queued`: safe to walk.
  for (auto id : ledger.queued) refresh(id);
}

} // namespace aryl
