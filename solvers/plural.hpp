#pragma once
/// A count with its noun in messages: "1 GPU", "8 GPUs", "0 GPUs".
#include <string>

namespace aryl {

/// " GPU" for one, " GPUs" for any other count: appended after the number.
inline const char* gpus_word(long long n) { return n == 1 ? " GPU" : " GPUs"; }

/// "N GPU" or "N GPUs".
inline std::string gpus_text(long long n) { return std::to_string(n) + gpus_word(n); }

} // namespace aryl
