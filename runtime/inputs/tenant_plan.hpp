#pragma once
/// The tenants of a run from its config and its jobs (docs/tenants.md, "Tenants and quotas").
#include <vector>

#include "runtime/inputs/config.hpp"
#include "solvers/job_spec.hpp"
#include "solvers/cluster_ledger.hpp"
#include "actors/state_records.hpp"

namespace aryl {

/// Tenants by index for the scheduler ([0]: jobs without one) and the ledger's tenant
/// settings, from `tenants.*`: the configured tenants (a weight without a quota gets the
/// weight's share of the training GPUs), then, with tenants.from_demand, every tenant of
/// `jobs` with a quota in proportion to its jobs' GPU-seconds (floors; the GPUs left over go
/// one each to the largest remainders), raised to its largest job's GPUs so that it can run
/// every job within its quota alone (the quotas may then sum above the GPUs). Tenants are governed (quotas, fair share) only
/// when some tenant is configured or from_demand is set. Throws input_error naming the key.
std::vector<tenant_entry> plan_tenants(const config& c, const std::vector<job_spec>& jobs, ledger_params& params);

/// After a scheduler restart: each tenant's decayed usage and its time as the journal kept
/// them (`aryl serve --state`), into `tenants`. A tenant the journal knows but the config does
/// not (an unconfigured one, named by its jobs) is added as its first job would add it, so
/// that its usage carries on too.
void restore_tenant_usage(std::vector<tenant_entry>& tenants, const std::vector<saved_tenant>& saved);

} // namespace aryl
