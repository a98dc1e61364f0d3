#pragma once
/// Inference-load actor <-> scheduler protocol (docs/loaning.md, "Loaning").
#include <caf/all.hpp>

#include "actors/atoms.hpp"

#include <cstdint>
#include <vector>

namespace aryl {

/// loan(server ids): these serving servers are lent to training from now on.
/// reclaim(count, deadline_us): give back `count` loaned servers by the deadline.
/// returned(server ids): the scheduler hands servers back (they serve again).
/// demand(periodic): re-read the demand now (self-sent every interval with periodic=1; 0 for
/// once). tick(id): deadline of reclaim id. push(servers): live mode, from an external
/// autoscaler: the inference servers needed from now on (before headroom), replacing the
/// demand trace. gone(server id, settles): the scheduler lost this inference server (serving or
/// lent); `settles`: it counts as one server of the oldest reclaim still outstanding (it was
/// being returned, or no lent server is left to return instead). rejoin(server id): it is back,
/// serving.
using inference_actor = caf::typed_actor<caf::reacts_to<returned_atom, std::vector<int>>,
                                         caf::reacts_to<gone_atom, int, bool>,
                                         caf::reacts_to<rejoin_atom, int>,
                                         caf::reacts_to<demand_atom, uint64_t>,
                                         caf::reacts_to<push_atom, int>,
                                         caf::reacts_to<tick_atom, uint64_t>>;

} // namespace aryl
