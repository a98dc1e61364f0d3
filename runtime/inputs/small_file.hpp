#pragma once
/// Reading a small file an operator names (a token, a client config, a job file, a TLS
/// certificate or key) whole, with the checks every such file needs: a regular file (a FIFO
/// would hang the reader, a device never end), within a size limit, and, for a secret or a
/// file that says where a secret goes, mode checks on what was opened.
#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <string>

namespace aryl {

/// A check of the opened file's status (mode, owner); throws aryl::input_error to refuse it.
using file_check = std::function<void(const struct stat&)>;

/// The bytes of the file at `path`. `what` names the file in errors ("token file"). Opened
/// without blocking (a FIFO's open would wait for a writer), then checked on what was opened:
/// throws aryl::input_error naming the file when it cannot be opened or read, is not a
/// regular file (naming its type), is larger than `max_bytes` (naming the limit), or when
/// `check` throws.
std::string read_small_file(const std::string& path, const std::string& what, uint64_t max_bytes,
                            const file_check& check = {});

/// "0644": the permission bits of `mode` as chmod takes them.
std::string mode_text(mode_t mode);

/// Throws aryl::input_error naming `path`, its mode and the chmod that fixes it, when its
/// group or others may do anything with it (as ssh refuses such keys): for secrets.
void refuse_open_to_others(const std::string& path, const std::string& what, const struct stat& st);

} // namespace aryl
