#include "runtime/inputs/yaml_file.hpp"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "solvers/input_error.hpp"
#include "runtime/inputs/input_limits.hpp"

namespace aryl {
namespace {

/// What the YAML reader accepts and every reader of ours would get wrong: a key given twice
/// (yaml-cpp keeps both, and which one a lookup finds differs between readers), nesting past
/// max_yaml_depth (an alias inside its own node never ends) and aliases that expand past
/// max_yaml_nodes values. `path` names the value in errors: `cluster.training.servers`,
/// `faults[2].at`.
struct structure_check {
  const std::string& file;
  uint64_t nodes = 0;

  /// `at`: where the value was given (its key's mark in a map: an alias's node has the
  /// anchor's).
  void walk(const YAML::Node& node, const std::string& path, int depth, const YAML::Mark& at) {
    if (++nodes > max_yaml_nodes)
      throw input_error(yaml_where(file, at) + ": more than " + std::to_string(max_yaml_nodes) +
                        " values once aliases are expanded");
    if (depth > max_yaml_depth)
      throw input_error(yaml_where(file, at) + ": '" + (path.size() > 80 ? path.substr(0, 77) + "..." : path) +
                        "' is nested deeper than " + std::to_string(max_yaml_depth) +
                        " levels (or an alias refers to its own node)");
    if (node.IsSequence()) {
      size_t i = 0;
      for (const auto& item : node) walk(item, path + "[" + std::to_string(i++) + "]", depth + 1, item.Mark());
    } else if (node.IsMap()) {
      std::map<std::string, int> first_line;
      for (const auto& kv : node) {
        // Complex keys are refused by each reader, naming them.
        if (!kv.first.IsScalar()) continue;
        const auto& key = kv.first.Scalar();
        const auto key_at = kv.first.Mark();
        const auto full = path.empty() ? key : path + "." + key;
        auto [it, inserted] = first_line.emplace(key, key_at.line + 1);
        if (!inserted)
          throw input_error(yaml_where(file, key_at) + ": duplicate key '" + full + "' (first given on line " +
                            std::to_string(it->second) + ")");
        walk(kv.second, full, depth + 1, key_at);
      }
    }
  }
};

/// Records where the second document of a stream starts; ignores everything else.
struct document_marks : YAML::EventHandler {
  int documents = 0;
  std::optional<YAML::Mark> second;
  void OnDocumentStart(const YAML::Mark& m) override {
    if (++documents == 2) second = m;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

} // namespace

std::string yaml_where(const std::string& path, const YAML::Mark& m) {
  return m.is_null() ? path : path + ":" + std::to_string(m.line + 1);
}

YAML::Node load_yaml_file(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw input_error(path + ": is a directory, not a " + what);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error(path + ": cannot open " + what);
  std::stringstream text;
  text << in.rdbuf();
  return parse_yaml(path, text.str(), what);
}

YAML::Node parse_yaml(const std::string& path, const std::string& text, const std::string& what) {
  YAML::Node first;
  document_marks marks;
  try {
    first = YAML::Load(text);
    // yaml-cpp's LoadAll never returns on some malformed streams (it finds document after
    // document): the parser is asked for two documents at most, to know whether there is one.
    std::istringstream again(text);
    YAML::Parser parser(again);
    while (marks.documents < 2 && parser.HandleNextDocument(marks)) {
    }
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp's own message for this is "bad file".
    throw input_error(yaml_where(path, e.mark) + ": nested deeper than the YAML reader's limit (" +
                      std::to_string(e.depth()) + " levels)");
  } catch (const YAML::Exception& e) {
    throw input_error(yaml_where(path, e.mark) + ": " + e.msg);
  }
  if (marks.documents == 0) return YAML::Node();
  // A second document (after `---`, or text after a JSON object) would be left unread.
  if (marks.second)
    throw input_error(yaml_where(path, *marks.second) +
                      ": a second YAML document (after `---`, or text after a JSON object): a " + what +
                      " is one document");
  structure_check{path}.walk(first, "", 0, first.Mark());
  return first;
}

} // namespace aryl
