#pragma once
/// What an agent's register must hold before the gateway makes anything of it: a slot, a server
/// actor, a ledger entry. A bad registration is refused to that agent only.
#include <cstdint>
#include <string>

#include "runtime/wire/messages.hpp"

namespace aryl::live {

/// Most GPUs one machine may register (the protocol's GPU index list bounds it too).
inline constexpr uint32_t max_gpus_per_server = wire::max_gpu_list;
/// Longest server name and GPU type, in bytes.
inline constexpr size_t max_node_name_bytes = 63;

/// Empty if `r` may be taken; else why not, naming the field and its limit. A name (server or
/// GPU type) is 1 to max_node_name_bytes of letters, digits, '.', '_' and '-', starting with a
/// letter or digit (a host name's label, as Kubernetes node names); GPUs 1 to
/// max_gpus_per_server; each listed worker's GPU indices below the machine's count.
std::string registration_problem(const wire::register_& r);

} // namespace aryl::live
