#pragma once
/// The cluster token of live mode: a shared secret every agent and client presents in its
/// hello. Read from a file, never from the command line (it would show in `ps`).
#include <string>
#include <string_view>

namespace aryl::live {

/// Largest token file accepted, in bytes.
inline constexpr size_t max_token_file_bytes = 4096;
/// Shortest token accepted, in bytes: a guessable secret is no secret.
inline constexpr size_t min_token_bytes = 16;

/// The token held in the file at `path`: its contents with trailing whitespace (a final
/// newline, CR, spaces, tabs) removed. Throws aryl::input_error naming the file when it
/// cannot be read, is not a regular file, can be read or written by its group or others
/// (as ssh refuses such keys), is larger than max_token_file_bytes, or holds a token shorter
/// than min_token_bytes or one that is not UTF-8 (a hello's token is a msgpack str).
std::string read_token_file(const std::string& path);

/// True when `a` and `b` are the same bytes. Takes time that depends only on the length of
/// the longer input, never on where the first difference is.
bool tokens_equal(std::string_view a, std::string_view b);

} // namespace aryl::live
