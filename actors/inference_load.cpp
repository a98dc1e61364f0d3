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
  auto log = [=](sim_time now, std::string event, std::string detail, std::string why) {
    self->send(recorder, event_atom::value,
               event_record{now.us, "inference", std::move(event), std::move(detail), std::move(why)});
  };
  // GPUs that serve demand now (the rest of the serving servers idle), and the servers needed.
  auto report_busy = [=](sim_time now, int need) {
    auto& st = self->state;
    int busy = std::min<int>(need, static_cast<int>(st.serving.size())) * st.setup.gpus_per_server;
    if (need != st.reported_need) {
      st.reported_need = need;
      self->send(recorder, need_atom::value, need);
    }
    if (busy == st.reported_busy) return;
    st.reported_busy = busy;
    self->send(recorder, serving_atom::value, now.us, busy);
  };
  self->send(self, demand_atom::value, uint64_t{1});
  self->send(scheduler, infer_atom::value, self->address());
  auto need_now = [=](sim_time now) {
    auto& st = self->state;
    return st.pushed >= 0 ? with_headroom(st.setup, st.pushed) : servers_needed(st.setup, now);
  };
  return {
      [=](push_atom, int servers) {
        self->state.pushed = std::max(0, servers);
        log(tb.now(self), "push", fmt::format("demand={}", self->state.pushed), "demand pushed by a client");
        self->send(self, demand_atom::value, uint64_t{0});
      },
      [=](demand_atom, uint64_t periodic) {
        auto& st = self->state;
        auto now = tb.now(self);
        int need = need_now(now);
        int serving = static_cast<int>(st.serving.size());
        int awaited = 0;
        for (auto& p : st.reclaims) awaited += p.outstanding;
        report_busy(now, need);
        if (!st.setup.lend) {
          // Serving only: nothing to lend or take back.
        } else if (need < serving && awaited == 0) {
          // Lend the highest ids first, so the same servers tend to stay serving.
          std::vector<int> lend;
          for (auto it = st.serving.rbegin(); it != st.serving.rend() && static_cast<int>(lend.size()) < serving - need; ++it)
            lend.push_back(*it);
          std::sort(lend.begin(), lend.end());
          for (int id : lend) {
            st.serving.erase(id);
            st.loaned.insert(id);
          }
          self->send(scheduler, loan_atom::value, lend);
          log(now, "loan", fmt::format("servers={} need={} serving={}", lend.size(), need, need),
              "demand below serving capacity");
        } else if (need > serving + awaited && !st.loaned.empty()) {
          int ask = std::min<int>(need - serving - awaited, static_cast<int>(st.loaned.size()) - awaited);
          if (ask > 0) {
            auto deadline = now + sim_time::from_seconds(static_cast<double>(st.setup.grace_s));
            st.reclaims.push_back({st.next_reclaim, ask, deadline, false});
            self->send(scheduler, reclaim_atom::value, ask, deadline.us);
            self->delayed_send(self, tb.span(deadline - now), tick_atom::value, st.next_reclaim);
            ++st.next_reclaim;
            log(now, "reclaim", fmt::format("servers={} need={} serving={}", ask, need, serving),
                fmt::format("demand rose; due within {} s", st.setup.grace_s));
          }
        }
        if (periodic)
          self->delayed_send(self, tb.span(sim_time::from_seconds(static_cast<double>(st.setup.interval_s))),
                             demand_atom::value, uint64_t{1});
      },
      [=](returned_atom, const std::vector<int>& ids) {
        auto& st = self->state;
        auto now = tb.now(self);
        int n = static_cast<int>(ids.size());
        for (int id : ids) {
          st.loaned.erase(id);
          st.serving.insert(id);
        }
        // Returned servers settle the oldest reclaims first.
        while (n > 0 && !st.reclaims.empty()) {
          auto& p = st.reclaims.front();
          int take = std::min(n, p.outstanding);
          p.outstanding -= take;
          n -= take;
          if (p.outstanding == 0) st.reclaims.pop_front();
        }
        log(now, "returned", fmt::format("servers={} serving={}", ids.size(), st.serving.size()), "");
        report_busy(now, need_now(now));
      },
      [=](gone_atom, int sid, bool settles) {
        auto& st = self->state;
        auto now = tb.now(self);
        st.serving.erase(sid);
        st.loaned.erase(sid);
        st.down.insert(sid);
        // A lost server that was to be returned settles its share of the reclaim as a returned
        // one would (a missed reclaim stays counted as missed); the demand is weighed again.
        if (settles && !st.reclaims.empty() && --st.reclaims.front().outstanding == 0) st.reclaims.pop_front();
        log(now, "gone", fmt::format("server_id={} serving={} loaned={}", sid, st.serving.size(), st.loaned.size()),
            "the scheduler lost this server");
        report_busy(now, need_now(now));
        self->send(self, demand_atom::value, uint64_t{0});
      },
      [=](rejoin_atom, int sid) {
        auto& st = self->state;
        auto now = tb.now(self);
        if (!st.down.erase(sid)) return;
        st.serving.insert(sid);
        log(now, "rejoin", fmt::format("server_id={} serving={}", sid, st.serving.size()), "its agent is back");
        report_busy(now, need_now(now));
        self->send(self, demand_atom::value, uint64_t{0});
      },
      [=](tick_atom, uint64_t reclaim_id) {
        // A reclaim deadline: whatever is still outstanding is late.
        auto& st = self->state;
        for (auto& p : st.reclaims) {
          if (p.id != reclaim_id || p.outstanding == 0 || p.missed) continue;
          p.missed = true;
          self->send(recorder, slo_atom::value, p.outstanding);
          log(tb.now(self), "slo_miss", fmt::format("servers={}", p.outstanding), "reclaim deadline passed");
        }
      },
  };
}

} // namespace aryl
