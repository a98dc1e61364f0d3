// libFuzzer target: the check an agent's register passes before the gateway makes anything of
// it (live::registration_problem, runtime/live/registration_checks.*), over the register frames
// the input's byte stream decodes to. fuzz_connection drives the same check through a socket
// at hundreds of inputs a second; this one runs it alone, ten or more times faster, so that the
// names' edges (63/64 bytes, a leading '.', UTF-8, control bytes) are reached. Checks:
//  - a register is refused exactly when it breaks a limit of docs/protocol.md ("register"),
//    as tests/fuzz/registration_limits.hpp spells them out;
//  - a refusal is one line (it goes into an error frame and the log).
// Seeds in corpus/registration/: register frames (make_connection_seeds.py writes them).
#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/live/registration_checks.hpp"
#include "runtime/wire/codec.hpp"
#include "solvers/control_chars.hpp"
#include "tests/fuzz/fuzz_support.hpp"
#include "tests/fuzz/registration_limits.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace aryl;
  wire::frame_decoder d;
  d.feed(data, size);
  for (;;) {
    auto step = d.next();
    auto* m = std::get_if<wire::message>(&step);
    if (!m) return 0;
    auto* r = std::get_if<wire::register_>(m);
    if (!r) continue;
    const auto problem = live::registration_problem(*r);
    const auto subject = "register of '" + escape_control(r->server) + "', " + std::to_string(r->gpus) + " x '" +
                         escape_control(r->gpu_type) + "'" +
                         (r->address ? ", address '" + escape_control(*r->address) + "'" : std::string());
    fuzz::require(!problem.empty() || fuzz::documented_register(*r), "accepted beyond the limits: " + subject);
    fuzz::require(problem.empty() || !fuzz::documented_register(*r), "refused within the limits: " + subject +
                                                                          ": " + escape_control(problem));
    fuzz::require(find_control(problem) == std::string::npos,
                  "the refusal holds a control character: " + escape_control(problem));
  }
}
