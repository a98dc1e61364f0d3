#pragma once
/// The inference-load actor (docs/loaning.md, "Loaning"): follows the inference demand, lends the
/// servers it does not need to training, and asks for them back with a deadline when
/// demand rises. It never takes a server back by force.
#include <deque>
#include <set>
#include <vector>

#include "actors/inference_protocol.hpp"
#include "actors/recorder_protocol.hpp"
#include "actors/scheduler_protocol.hpp"
#include "actors/demand_point.hpp"
#include "actors/timebase.hpp"

namespace aryl {

struct inference_setup {
  std::vector<int> servers;           ///< ids of the inference servers
  std::vector<demand_point> demand;   ///< servers needed over time (repeats after its span)
  int64_t interval_s = 300;
  double headroom = 0.1;
  int64_t grace_s = 120;
  int gpus_per_server = 8;
  /// Lend idle servers to training (policies with loaning); otherwise only report demand.
  bool lend = true;
  /// Lent from the start (loans that carry on after a scheduler restart).
  std::vector<int> lent;
};

struct inference_state {
  inference_setup setup;
  std::set<int> serving;
  std::set<int> loaned;
  std::set<int> down;  ///< lost (a server fault) until its agent is back
  struct pending { uint64_t id; int outstanding; sim_time deadline; bool missed; };
  std::deque<pending> reclaims;
  uint64_t next_reclaim = 0;
  int reported_busy = -1;  ///< GPUs serving demand, as last told to the recorder
  int reported_need = -1;  ///< servers needed (headroom included), as last told to the recorder
  int pushed = -1;         ///< demand pushed live (servers, before headroom); -1: none
  static inline const char* name = "inference";
};

/// servers needed at t = ceil(demand(t) * (1 + headroom)), at most all inference servers.
int servers_needed(const inference_setup& s, sim_time t);

/// ceil(raw * (1 + headroom)), at most all inference servers.
int with_headroom(const inference_setup& s, int raw);

inference_actor::behavior_type inference_behavior(inference_actor::stateful_pointer<inference_state> self,
                                                  inference_setup setup, scheduler_actor scheduler,
                                                  recorder_actor recorder, timebase tb);

} // namespace aryl
