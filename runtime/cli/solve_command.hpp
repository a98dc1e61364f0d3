#pragma once
/// `aryl solve`: runs one solver on a JSON problem and prints the JSON answer. The formats
/// are a contract (docs/solvers.md, "aryl solve"):
///
///   mckp     in  {"capacity": C, "classes": [{"id": "j1", "items": [{"weight": 2,
///                 "value": 3.5}, ...]}, ...]}
///            out {"value": V, "choices": {"j1": 1, "j2": null, ...}}
///                (index into that class's items, or null; V = total value of the choices)
///   reclaim  in  {"count": r, "loaned_servers": [{"id": "s1", "gpus": 8}, ...],
///                 "jobs": [{"id": "j1", "min_workers": 2, "gpus_per_worker": 1,
///                           "placement": {"s1": 2, "t3": 1}}, ...]}
///                (placement servers that are not loaned are training servers and stay;
///                 gpus_per_worker defaults to 1)
///            out {"returned": ["s1", ...], "preempted": ["j1", ...], "scaled_in": {"j2": 1}}
///   place    in  {"mode": "count"|"consolidated", "servers": [{"id": "s1", "gpu_type":
///                 "V100", "gpus": 8, "free_gpus": 5}, ...], "requests": [{"id": "j1",
///                 "gpus": 4, "gpu_type": "V100", "prefer": ["s1"]}, ...]}
///                (free_gpus defaults to gpus; request gpu_type and prefer are optional)
///            out {"placed": {"j1": {"s1": 4}}, "unplaced": ["j2"]}
///
/// Ids are strings. Where a solver breaks ties by lowest id, the JSON front end means
/// "earliest in the input list"; GPU types are ranked by first appearance among servers.
/// Output lists and objects follow input order.
#include <iosfwd>
#include <string>

namespace aryl {

/// Reads one problem from `in`, writes the answer to `out` (pretty JSON and a newline).
/// `problem`: mckp | reclaim | place. `method`: for reclaim, greedy (also when empty) or
/// exact (at most 32 loaned servers); ignored by the other problems, which have one method.
/// Returns 0 on success; 2 when the problem, method or input is malformed, after writing
/// one line to `err` that names what is wrong (e.g. "aryl solve mckp: classes[2].items[0]
/// .weight: must be an integer >= 1"). Nothing is written to `out` on error.
int run_solve_command(const std::string& problem, const std::string& method, std::istream& in,
                      std::ostream& out, std::ostream& err);

} // namespace aryl
