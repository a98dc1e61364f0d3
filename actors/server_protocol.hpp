#pragma once
/// Scheduler -> server actor protocol. A server actor owns its GPU slots: it is told of every
/// worker placed on or removed from it, and refuses (reports) anything that would put two
/// workers on one GPU. In live mode it fronts the node agent of its machine.
#include <caf/all.hpp>

#include <cstdint>

namespace aryl {

using place_atom = caf::atom_constant<caf::atom("place")>;
using remove_atom = caf::atom_constant<caf::atom("remove")>;
using mode_atom = caf::atom_constant<caf::atom("mode")>;

/// place(job, gpus), remove(job), mode(server_mode as int: who the server works for).
using server_actor = caf::typed_actor<caf::reacts_to<place_atom, uint32_t, int>,
                                      caf::reacts_to<remove_atom, uint32_t>,
                                      caf::reacts_to<mode_atom, int>>;

} // namespace aryl
