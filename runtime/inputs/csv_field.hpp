#pragma once
/// Writing one CSV field as RFC 4180 has it, for every CSV aryl writes: a field holding a
/// comma, a double quote or a line break is enclosed in double quotes, with each quote
/// doubled. So is one with a space or tab at either end, which csv::field_splitter (and many
/// spreadsheet readers) would otherwise trim. Lines end in LF, as in every file aryl writes.
#include <string>
#include <string_view>

namespace aryl::csv {

/// Appends `field` to `out`, quoted if it needs to be.
inline void append_field(std::string& out, std::string_view field) {
  auto edge = [](char c) { return c == ' ' || c == '\t'; };
  const bool quote = field.find_first_of(",\"\r\n") != std::string_view::npos ||
                     (!field.empty() && (edge(field.front()) || edge(field.back())));
  if (!quote) {
    out += field;
    return;
  }
  out += '"';
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
}

} // namespace aryl::csv
