// Fuzz target for read_servegen_demand (runtime/inputs/inference_demand.hpp). Without a form feed the
// input is one ServeGen file (total-rate or raw per-client); with form feeds ('\f') it is a model
// directory whose parts are chunk-0-trace.csv, chunk-1-trace.csv, ... Each input is mapped for
// 16 servers at 0.9 peak utilisation and for 1 server at 1.0.
// Contract: input_error, or demand strictly increasing in t with servers_needed in [0, servers].
#include <string>

#include "runtime/inputs/inference_demand.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace aryl;
  static const fuzz::scratch_dir dir("demand_servegen");
  const std::string_view text = fuzz::as_text(data, size);
  dir.clear();
  std::string path;
  if (text.find('\f') == std::string_view::npos) {
    path = dir.write("rates.csv", text);
  } else {
    std::filesystem::create_directories(dir.path() / "model");
    size_t start = 0;
    for (int i = 0; start <= text.size() && i < 8; ++i) {
      const size_t ff = std::min(text.find('\f', start), text.size());
      dir.write("model/chunk-" + std::to_string(i) + "-trace.csv", text.substr(start, ff - start));
      start = ff + 1;
    }
    path = (dir.path() / "model").string();
  }
  for (const auto& mapping : {std::pair{16, 0.9}, std::pair{1, 1.0}}) {
    const int servers = mapping.first;
    const double utilisation = mapping.second;
    std::vector<demand_point> points;
    if (!fuzz::returns_or_input_error("read_servegen_demand",
                                      [&] { points = read_servegen_demand(path, servers, utilisation); }))
      continue;
    for (size_t i = 0; i < points.size(); ++i) {
      fuzz::require(points[i].t.us >= 0, "negative t at point " + std::to_string(i));
      fuzz::require(i == 0 || points[i - 1].t < points[i].t, "t not strictly increasing at point " + std::to_string(i));
      fuzz::require(points[i].servers_needed >= 0 && points[i].servers_needed <= servers,
                    "servers_needed outside [0, servers] at point " + std::to_string(i));
    }
  }
  return 0;
}
