#include "actors/inference_load.hpp"

#include <fmt/format.h>

#include "actors/end_run_on_exception.hpp"

#include <algorithm>
#include <cmath>

namespace aryl {

int servers_needed(const inference_setup& s, sim_time t) {
  if (s.demand.empty()) return 0;
  auto& d = s.demand;
  // The demand repeats after its span: the last step lasts as long as the one before it.
  int64_t step = d.size() > 1 ? (d.back().t - d[d.size() - 2].t).us : s.interval_s * 1000000;
  int64_t period = d.back().t.us + step;
  int64_t at = t.us;
  if (at >= period && period > 0) at = d.front().t.us + (at - d.front().t.us) % (period - d.front().t.us);
  auto it = std::upper_bound(d.begin(), d.end(), at, [](int64_t v, const demand_point& p) { return v < p.t.us; });
  int raw = it == d.begin() ? d.front().servers_needed : std::prev(it)->servers_needed;
  return with_headroom(s, raw);
}

int with_headroom(const inference_setup& s, int raw) {
  // Capped in floating point, before narrowing: a large headroom means "every server".
  double need = std::ceil(raw * (1.0 + s.headroom) - 1e-9);
  return static_cast<int>(std::min(need, static_cast<double>(s.servers.size())));
}

namespace {

/// What every handler of the inference-load actor works with.
struct inference_ctx {
  inference_actor::stateful_pointer<inference_state> self;
  scheduler_actor scheduler;
  recorder_actor recorder;
  timebase tb;

  inference_state& st() const { return self->state; }
  sim_time now() const { return tb.now(self); }
  void log(sim_time now, std::string event, std::string detail, std::string why) const {
    self->send(recorder, event_atom::value,
               event_record{now.us, "inference", std::move(event), std::move(detail), std::move(why)});
  }
};

/// GPUs that serve demand now (the rest of the serving servers idle), and the servers needed.
void report_busy(const inference_ctx& c, sim_time now, int need) {
  auto& st = c.st();
  int busy = std::min<int>(need, static_cast<int>(st.serving.size())) * st.setup.gpus_per_server;
  if (need != st.reported_need) {
    st.reported_need = need;
    c.self->send(c.recorder, need_atom::value, need);
  }
  if (busy == st.reported_busy) return;
  st.reported_busy = busy;
  c.self->send(c.recorder, serving_atom::value, now.us, busy);
}

int need_now(const inference_state& st, sim_time now) {
  return st.pushed >= 0 ? with_headroom(st.setup, st.pushed) : servers_needed(st.setup, now);
}

/// Lends `count` serving servers, the highest ids first, so the same servers tend to stay
/// serving.
void lend(const inference_ctx& c, sim_time now, int count, int need) {
  auto& st = c.st();
  std::vector<int> ids;
  for (auto it = st.serving.rbegin(); it != st.serving.rend() && static_cast<int>(ids.size()) < count; ++it)
    ids.push_back(*it);
  std::sort(ids.begin(), ids.end());
  for (int id : ids) {
    st.serving.erase(id);
    st.loaned.insert(id);
  }
  c.self->send(c.scheduler, loan_atom::value, ids);
  c.log(now, "loan", fmt::format("servers={} need={} serving={}", ids.size(), need, need),
        "demand below serving capacity");
}

/// Asks for `ask` loaned servers back within the grace period; its deadline is a tick.
void reclaim(const inference_ctx& c, sim_time now, int ask, int need, int serving) {
  auto& st = c.st();
  auto deadline = now + sim_time::from_seconds(static_cast<double>(st.setup.grace_s));
  st.reclaims.push_back({st.next_reclaim, ask, deadline, false});
  c.self->send(c.scheduler, reclaim_atom::value, ask, deadline.us);
  c.self->delayed_send(c.self, c.tb.span(deadline - now), tick_atom::value, st.next_reclaim);
  ++st.next_reclaim;
  c.log(now, "reclaim", fmt::format("servers={} need={} serving={}", ask, need, serving),
        fmt::format("demand rose; due within {} s", st.setup.grace_s));
}

/// demand(periodic): weighs the demand now against the servers serving and those asked back.
void on_demand(const inference_ctx& c, uint64_t periodic) {
  auto& st = c.st();
  auto now = c.now();
  int need = need_now(st, now);
  int serving = static_cast<int>(st.serving.size());
  int awaited = 0;
  for (auto& p : st.reclaims) awaited += p.outstanding;
  report_busy(c, now, need);
  if (!st.setup.lend) {
    // Serving only: nothing to lend or take back.
  } else if (need < serving && awaited == 0) {
    lend(c, now, serving - need, need);
  } else if (need > serving + awaited && !st.loaned.empty()) {
    int ask = std::min<int>(need - serving - awaited, static_cast<int>(st.loaned.size()) - awaited);
    if (ask > 0) reclaim(c, now, ask, need, serving);
  }
  if (periodic)
    c.self->delayed_send(c.self, c.tb.span(sim_time::from_seconds(static_cast<double>(st.setup.interval_s))),
                         demand_atom::value, uint64_t{1});
}

/// returned(ids): servers handed back serve again, settling the oldest reclaims first.
void on_returned(const inference_ctx& c, const std::vector<int>& ids) {
  auto& st = c.st();
  auto now = c.now();
  int n = static_cast<int>(ids.size());
  for (int id : ids) {
    st.loaned.erase(id);
    st.serving.insert(id);
  }
  while (n > 0 && !st.reclaims.empty()) {
    auto& p = st.reclaims.front();
    int take = std::min(n, p.outstanding);
    p.outstanding -= take;
    n -= take;
    if (p.outstanding == 0) st.reclaims.pop_front();
  }
  c.log(now, "returned", fmt::format("servers={} serving={}", ids.size(), st.serving.size()), "");
  report_busy(c, now, need_now(st, now));
}

/// gone(sid, settles): the scheduler lost an inference server.
void on_gone(const inference_ctx& c, int sid, bool settles) {
  auto& st = c.st();
  auto now = c.now();
  st.serving.erase(sid);
  st.loaned.erase(sid);
  st.down.insert(sid);
  // A lost server that was to be returned settles its share of the reclaim as a returned
  // one would (a missed reclaim stays counted as missed); the demand is weighed again.
  if (settles && !st.reclaims.empty() && --st.reclaims.front().outstanding == 0) st.reclaims.pop_front();
  c.log(now, "gone", fmt::format("server_id={} serving={} loaned={}", sid, st.serving.size(), st.loaned.size()),
        "the scheduler lost this server");
  report_busy(c, now, need_now(st, now));
  c.self->send(c.self, demand_atom::value, uint64_t{0});
}

/// rejoin(sid): a lost inference server's agent is back; it serves.
void on_rejoin(const inference_ctx& c, int sid) {
  auto& st = c.st();
  auto now = c.now();
  if (!st.down.erase(sid)) return;
  st.serving.insert(sid);
  c.log(now, "rejoin", fmt::format("server_id={} serving={}", sid, st.serving.size()), "its agent is back");
  report_busy(c, now, need_now(st, now));
  c.self->send(c.self, demand_atom::value, uint64_t{0});
}

/// tick(id): a reclaim's deadline; whatever is still outstanding is late.
void on_deadline(const inference_ctx& c, uint64_t reclaim_id) {
  for (auto& p : c.st().reclaims) {
    if (p.id != reclaim_id || p.outstanding == 0 || p.missed) continue;
    p.missed = true;
    c.self->send(c.recorder, slo_atom::value, p.outstanding);
    c.log(c.now(), "slo_miss", fmt::format("servers={}", p.outstanding), "reclaim deadline passed");
  }
}

} // namespace

inference_actor::behavior_type inference_behavior(inference_actor::stateful_pointer<inference_state> self,
                                                  inference_setup setup, scheduler_actor scheduler,
                                                  recorder_actor recorder, timebase tb) {
  end_run_on_exception(self, recorder);
  self->state.setup = std::move(setup);
  self->state.serving.insert(self->state.setup.servers.begin(), self->state.setup.servers.end());
  for (int id : self->state.setup.lent) {
    self->state.serving.erase(id);
    self->state.loaned.insert(id);
  }
  self->send(self, demand_atom::value, uint64_t{1});
  self->send(scheduler, infer_atom::value, self->address());
  const inference_ctx c{self, std::move(scheduler), std::move(recorder), tb};
  return {
      [c](push_atom, int servers) {
        c.st().pushed = std::max(0, servers);
        c.log(c.now(), "push", fmt::format("demand={}", c.st().pushed), "demand pushed by a client");
        c.self->send(c.self, demand_atom::value, uint64_t{0});
      },
      [c](demand_atom, uint64_t periodic) { on_demand(c, periodic); },
      [c](returned_atom, const std::vector<int>& ids) { on_returned(c, ids); },
      [c](gone_atom, int sid, bool settles) { on_gone(c, sid, settles); },
      [c](rejoin_atom, int sid) { on_rejoin(c, sid); },
      [c](tick_atom, uint64_t reclaim_id) { on_deadline(c, reclaim_id); },
  };
}

} // namespace aryl
