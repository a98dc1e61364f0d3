#pragma once
/// The rule for a user's name wherever aryl takes one (an identity, a tenant's users): it is
/// also the Unix user a job runs as, so it follows useradd's rules.
#include <string>
#include <string_view>

namespace aryl {

/// Why `name` cannot name a user ("" if it can): 1-32 of [a-z0-9._-], not starting with '-'
/// or '.'.
std::string user_name_problem(std::string_view name);

} // namespace aryl
