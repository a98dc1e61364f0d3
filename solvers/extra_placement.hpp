#pragma once
/// Where an elastic job's extra workers go (docs/round.md, "The steps", 8). Every server a
/// job spans beyond its first costs it throughput (throughput.hpp, cross_server_eff), so
/// extras go on the fewest servers that hold them. Pure: mutates only the free-GPU counts
/// of the servers it is given.
#include <optional>
#include <vector>

#include "solvers/placement.hpp"

namespace aryl {

struct extras_request {
  int gpus = 0;       ///< extra workers to place, one GPU each
  int gpu_type = 0;   ///< all of them on this GPU type
  /// Servers the job's other workers are on: filling them spans no new server. Fill order.
  std::vector<int> home;
  /// Servers the job had workers on before (not in `home`): among the placements on the
  /// fewest servers, these are used first (in this order), so fewer workers move.
  std::vector<int> occupied;
};

/// span[k] = servers the job spans (home servers included) once k extra workers are placed
/// as place_extras places them, k = 0 .. max_extra; -1 where k extras do not fit.
/// O(servers log servers).
std::vector<int> spans_with_extras(const std::vector<server_slot>& servers, const extras_request& req,
                                   int max_extra);

/// The servers of type `gpu_type` with free GPUs, most free first (ties lowest id): the order
/// in which spans_with_extras counts new servers. One ranking serves every job of the type
/// in a round.
std::vector<server_slot> most_free_first(const std::vector<server_slot>& servers, int gpu_type);
/// The same into `out` (a round reuses one vector per type).
void most_free_first(const std::vector<server_slot>& servers, int gpu_type, std::vector<server_slot>& out);

/// spans_with_extras from that ranking of the servers (the request's home servers may be in
/// it) and the free GPUs on the home servers, into `out` (a round reuses one vector).
/// O(home * new servers counted).
void spans_from_ranking(const std::vector<server_slot>& ranking, long home_free, const extras_request& req,
                        int max_extra, std::vector<int>& out);

/// Places req.gpus extra workers so that the job spans the fewest servers: home servers are
/// filled first (home order), then the rest goes on the fewest other servers of the type
/// that hold it, picked one at a time among those that still let the rest fit on the picks
/// left: an occupied server (occupied order), else the best fit for all that is left
/// (fewest free GPUs that hold it, ties lowest id), else the server with the most free GPUs
/// (ties lowest id). Returns the extras' allocation and subtracts it from `servers`.
/// Fails (nullopt, servers unchanged) when gpus < 0 or the type has fewer than gpus free
/// GPUs; gpus == 0 gives an empty allocation. Preconditions: server ids unique,
/// 0 <= free <= gpus. O(new servers * servers log servers).
std::optional<allocation> place_extras(std::vector<server_slot>& servers, const extras_request& req);
/// The same into `out` (replaced; left empty on failure); false where that gives nullopt.
bool place_extras(std::vector<server_slot>& servers, const extras_request& req, allocation& out);

} // namespace aryl
