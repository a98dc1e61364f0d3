// libFuzzer target: an identities file (`serve --identities`, runtime/live/identities.hpp) as
// serve loads it. Checks beyond the contract (return or input_error): a file that is accepted
// holds only valid names, no name twice, agents' enrolment only on agents, and saving and
// loading it again gives the same identities.
#include <sys/stat.h>

#include <set>
#include <string>

#include "runtime/inputs/user_name.hpp"
#include "runtime/live/identities.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace aryl;
  static const fuzz::scratch_dir dir("identities");
  const auto path = dir.write("ids", std::string_view(reinterpret_cast<const char*>(data), size));
  ::chmod(path.c_str(), 0600);
  live::identity_store store;
  if (!fuzz::returns_or_input_error("identity_store::load", [&] { store = live::identity_store::load(path); }))
    return 0;
  std::set<std::string> names;
  for (auto& id : store.all()) {
    fuzz::require(user_name_problem(id.name).empty(), "an accepted identity has a bad name: " + id.name);
    fuzz::require(names.insert(id.name).second, "an accepted file lists " + id.name + " twice");
    fuzz::require(id.who == live::role::agent || (id.gpu_type.empty() && id.pool.empty()),
                  "a non-agent identity is enrolled: " + id.name);
  }
  const auto again_path = (dir.path() / "again").string();
  store.save(again_path);
  live::identity_store again;
  fuzz::require(fuzz::returns_or_input_error("identity_store::load (saved)",
                                             [&] { again = live::identity_store::load(again_path); }),
                "a saved store does not load again");
  fuzz::require(again.all().size() == store.all().size(), "a saved store loads with another count");
  for (size_t i = 0; i < store.all().size(); ++i) {
    auto& a = store.all()[i];
    auto& b = again.all()[i];
    fuzz::require(a.name == b.name && a.who == b.who && a.token_hash == b.token_hash && a.gpu_type == b.gpu_type &&
                      a.pool == b.pool && a.revoked == b.revoked,
                  "identity " + a.name + " changes when saved and loaded");
  }
  return 0;
}
