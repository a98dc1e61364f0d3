#pragma once
/// `aryl history` asked of a running serve (history_request): serve answers from its own state
/// file, through the journal's connection, a page at a time (docs/live.md, "Job history").
#include <cstddef>

#include "runtime/live/state_journal.hpp"
#include "runtime/wire/messages.hpp"

namespace aryl::live {

/// Most jobs in one history_reply, whatever the request's limit: a page reads and encodes in
/// milliseconds, so a million-job answer never holds the thread that reads it for long.
inline constexpr size_t history_page_rows = 1000;
/// Most bytes of a page's jobs (their encoded size, estimated): well inside a frame's limit
/// (wire::default_max_frame_bytes) whatever the jobs' names and exits.
inline constexpr size_t history_page_bytes = 256 * 1024;

/// The page `q` asks for, read from `journal`: at most q.limit (and history_page_rows) jobs,
/// next_after set while more may follow. Throws aryl::input_error: an outcome it does not know,
/// a file it cannot read.
wire::history_reply answer_history(const state_journal& journal, const wire::history_request& q);

} // namespace aryl::live
