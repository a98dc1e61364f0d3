#pragma once
/// A worker's output as the agent keeps it (WORK_DIR/logs/JOB-RANK.log), read in pieces for
/// `aryl logs` through the scheduler (log_fetch -> log_chunk).
#include <cstddef>
#include <string>
#include <string_view>

#include "runtime/wire/messages.hpp"

namespace aryl::live {

/// At most `f.max_bytes` (and under the protocol's string limit) of the log of (f.job_id,
/// f.rank) under `work_dir`, from byte `f.offset`. Bytes that are not UTF-8 become '?' one
/// for one, and a character cut by the end of the piece is left for the next one, so offsets
/// stay the file's. A missing log is an `error` naming the job, rank and `server`.
wire::log_chunk read_worker_log(const std::string& work_dir, const std::string& server, const wire::log_fetch& f);

/// What an agent holds unsent to the scheduler past which a log_fetch is answered with an
/// error instead of a piece: serve keeps at most 16 fetches in flight per agent, each piece
/// under the protocol's 64 KiB string limit, so only a scheduler asking for more meets it.
inline constexpr size_t max_unsent_bytes_for_logs = size_t{2} << 20;

/// The answer to `f` of an agent holding `unsent_bytes` not yet written to the scheduler:
/// read_worker_log's piece, or, past max_unsent_bytes_for_logs, an `error` naming the job,
/// rank, `server` and the limit (the client may ask again).
wire::log_chunk answer_log_fetch(const std::string& work_dir, const std::string& server, const wire::log_fetch& f,
                                 size_t unsent_bytes);

/// Opens the log of (job, rank) under `work_dir` for appending, for a launch as `user` ("": the
/// agent's own), mode 0600 (0644 for the agent's own). Job ids start again with each new run
/// of a scheduler: a log whose last launch was another user's is set aside first, as
/// JOB-RANK.log.SECONDS, so that `aryl logs` never shows one user another's output (the user
/// is kept beside it, in JOB-RANK.log.user). Returns the descriptor, or -1 and `error`.
int open_worker_log(const std::string& work_dir, uint64_t job, uint32_t rank, const std::string& user,
                    std::string& error);

/// `bytes` with every byte that is not part of a valid UTF-8 character replaced by '?'.
std::string utf8_or_marks(std::string_view bytes);

} // namespace aryl::live
