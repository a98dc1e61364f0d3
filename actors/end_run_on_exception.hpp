#pragma once
/// An exception thrown in an actor's handler ends the run with its message, instead of
/// killing that actor silently and leaving the others to wait for ever.
#include <caf/all.hpp>

#include <exception>
#include <string>

#include "actors/recorder_protocol.hpp"
#include "solvers/input_error.hpp"

namespace aryl {

/// Installs the handler on `self`: the recorder gets `failed(message, code)`, with exit code
/// 2 for an input_error (bad input found only while running) and 4 for anything else, and
/// the actor stops.
inline void end_run_on_exception(caf::scheduled_actor* self, const recorder_actor& recorder) {
  self->set_exception_handler([recorder](caf::scheduled_actor* me, std::exception_ptr& x) -> caf::error {
    std::string what;
    int code = 4;
    try {
      std::rethrow_exception(x);
    } catch (const input_error& e) {
      what = e.what();
      code = 2;
    } catch (const std::exception& e) {
      what = std::string("internal error in the ") + me->name() + " actor: " + e.what();
    } catch (...) {
      what = std::string("internal error in the ") + me->name() + " actor: unknown exception";
    }
    caf::anon_send(recorder, failed_atom::value, std::move(what), code);
    return caf::exit_reason::unhandled_exception;
  });
}

} // namespace aryl
