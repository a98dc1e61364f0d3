#pragma once
/// docs/config.md's table of config keys, made from the table of keys (config_keys.hpp):
/// `aryl config --markdown` prints it, and a test fails when the page's table differs.
#include <string>

namespace aryl {

/// One Markdown table, a row per key in the table's order: key, flag, type, default (the
/// built-in config's), range, unit, description; ends with a newline.
std::string config_keys_markdown();

} // namespace aryl
