// Fuzz target for read_demand_csv (runtime/inputs/inference_demand.hpp): the input is the CSV file.
// Contract: input_error, or a non-empty demand strictly increasing in t with 0 <= servers_needed.
#include <string>

#include "runtime/inputs/inference_demand.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace aryl;
  static const fuzz::scratch_dir dir("demand_csv");
  const std::string path = dir.write("demand.csv", fuzz::as_text(data, size));
  std::vector<demand_point> points;
  if (!fuzz::returns_or_input_error("read_demand_csv", [&] { points = read_demand_csv(path); })) return 0;
  fuzz::require(!points.empty(), "empty demand returned");
  for (size_t i = 0; i < points.size(); ++i) {
    fuzz::require(points[i].t.us >= 0, "negative t at point " + std::to_string(i));
    fuzz::require(i == 0 || points[i - 1].t < points[i].t, "t not strictly increasing at point " + std::to_string(i));
    fuzz::require(points[i].servers_needed >= 0, "negative servers_needed at point " + std::to_string(i));
  }
  return 0;
}
