#include "runtime/inputs/tenant_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "solvers/input_error.hpp"

namespace aryl {

std::vector<tenant_entry> plan_tenants(const config& c, const std::vector<job_spec>& jobs, ledger_params& params) {
  std::vector<tenant_entry> out{tenant_entry{}};
  if (c.tenants.empty() && !c.tenants_from_demand) return out;
  const long gpus = static_cast<long>(c.training.servers) * c.training.gpus_per_server;
  std::map<std::string, tenant_config> all = c.tenants;
  if (all.count(""))
    throw input_error("config: tenants: a tenant needs a name");
  if (c.tenants_from_demand) {
    std::map<std::string, double> demand;
    std::map<std::string, long> largest;
    double total = 0;
    for (auto& j : jobs)
      if (!j.tenant.empty() && !c.tenants.count(j.tenant)) {
        demand[j.tenant] += j.gpus * j.duration_s;
        total += j.gpus * j.duration_s;
        largest[j.tenant] = std::max<long>(largest[j.tenant], j.gpus);
      }
    long configured = 0;
    for (auto& [n, t] : c.tenants) configured += std::max(0L, t.quota);
    const long left = std::max(0L, gpus - configured);
    std::vector<std::pair<double, std::string>> remainders;
    long given = 0;
    for (auto& [name, d] : demand) {
      double exact = total > 0 ? left * d / total : 0;
      auto& t = all[name];
      t.quota = static_cast<long>(std::floor(exact));
      given += t.quota;
      remainders.emplace_back(-(exact - std::floor(exact)), name);
    }
    std::sort(remainders.begin(), remainders.end());
    for (size_t i = 0; i < remainders.size() && given < left; ++i, ++given) ++all[remainders[i].second].quota;
    // Within its quota alone a tenant must be able to run each of its jobs.
    for (auto& [name, g] : largest) all[name].quota = std::max(all[name].quota, g);
  }
  double weights = 0;
  for (auto& [name, t] : all)
    if (t.quota < 0) weights += t.weight;
  long quota_sum = 0;
  for (auto& [name, t] : all) quota_sum += std::max(0L, t.quota);
  const long free_share = std::max(0L, gpus - quota_sum);
  for (auto& [name, t] : all) {
    tenant_entry e;
    e.name = name;
    e.quota = t.quota >= 0 ? t.quota
              : t.weight > 0 && weights > 0 ? static_cast<long>(std::floor(free_share * t.weight / weights))
                                             : -1;
    // A weight not given: the quota's share of the cluster (at least a small one), else 1.
    e.weight = t.weight > 0 ? t.weight : e.quota > 0 ? static_cast<double>(e.quota) : 1.0;
    e.borrow = t.borrow >= 0 ? t.borrow == 1 : c.tenants_borrow;
    e.lend = t.lend >= 0 ? t.lend == 1 : c.tenants_lend;
    out.push_back(std::move(e));
  }
  params.quotas = true;
  params.fair_share = c.tenants_fair_share;
  params.tenant_halflife_s = c.tenants_halflife_s;
  params.quota_grace_s = c.tenants_reclaim_grace_s;
  return out;
}

void restore_tenant_usage(std::vector<tenant_entry>& tenants, const std::vector<saved_tenant>& saved) {
  for (auto& row : saved) {
    auto it = std::find_if(tenants.begin(), tenants.end(), [&](auto& t) { return t.name == row.name; });
    if (it == tenants.end()) {
      tenants.emplace_back();
      tenants.back().name = row.name;
      it = tenants.end() - 1;
    }
    it->usage_gpu_s = row.usage_gpu_s;
    it->usage_at = sim_time::from_us(row.at_us);
  }
}

} // namespace aryl
