#pragma once
/// What GPUs an agent's machine has, when its command line does not say: asked of
/// `nvidia-smi --query-gpu=name --format=csv,noheader` where that program is installed.
#include <optional>
#include <string>

namespace aryl::live {

struct machine_gpus {
  std::string gpu_type;  ///< as the scheduler's config names types: "V100", "A100", "T4"
  unsigned count = 0;
};

/// The GPUs listed by nvidia-smi's CSV output (one model name per line, e.g. "Tesla
/// V100-SXM2-16GB", "NVIDIA A100-SXM4-80GB"): the type is the model without its vendor and
/// product-line words and its variant ("V100", "A100"). Nothing for an empty listing.
/// Throws aryl::input_error for a machine with more than one model (one type per server),
/// naming them.
std::optional<machine_gpus> parse_gpu_listing(const std::string& csv);

/// Runs nvidia-smi (found on PATH); nothing if it is not installed or lists no GPU. Throws
/// aryl::input_error if it fails or lists several models.
std::optional<machine_gpus> detect_gpus();

} // namespace aryl::live
