#pragma once
/// Worker placement over heterogeneous servers (DESIGN.md section 3).
/// Pure: mutates only the free-GPU counts of the servers it is given.
#include <optional>
#include <utility>
#include <vector>

namespace aryl {

enum class placement_mode {
  /// Any free GPUs anywhere (Tiresias' "count").
  count,
  /// A job of <= server-size GPUs on one server; larger jobs on whole free servers.
  consolidated,
};

struct server_slot {
  int id = 0;        ///< caller's server id
  int gpu_type = 0;  ///< caller's GPU type id
  int gpus = 0;      ///< GPUs on the server
  int free = 0;      ///< free GPUs now, 0..gpus
};

struct place_request {
  int id = 0;
  int gpus = 0;
  int gpu_type = -1;         ///< -1: any type, but all of one request's GPUs on one type
  std::vector<int> prefer;   ///< server ids to fill first (servers the job already uses)
};

/// (server id, GPUs) pairs, sorted by server id, GPUs > 0.
using allocation = std::vector<std::pair<int, int>>;

/// Places one request; on success subtracts its GPUs from `servers` and returns where.
/// On failure leaves `servers` unchanged.
std::optional<allocation> place_one(placement_mode mode, std::vector<server_slot>& servers,
                                    const place_request& req);

struct placement_result {
  std::vector<std::pair<int, allocation>> placed;  ///< (request id, allocation)
  std::vector<int> unplaced;                       ///< request ids, in input order
};

/// Best-fit decreasing: requests by GPUs descending (ties: input order), each placed with
/// place_one; a request that does not fit is reported and later ones are still tried.
placement_result place_bfd(placement_mode mode, std::vector<server_slot>& servers,
                           const std::vector<place_request>& requests);

} // namespace aryl
