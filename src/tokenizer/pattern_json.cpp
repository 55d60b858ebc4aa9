// tokenizer.json pattern objects (pattern_json.h).
#include "tokenizer/pattern_json.h"

#include <nlohmann/json.hpp>

#include "io/json_reader.h"

namespace tqlab::tokenizer {

TextPattern read_text_pattern(const JsonReader& json) {
  json.allow_only({"String", "Regex"});
  const std::string where = "tokenizer '" + json.file() + "': " + json.path();
  if (const auto literal = json.find("String")) return TextPattern::literal(literal->as_string(), where);
  if (const auto regex = json.find("Regex")) return TextPattern::regex(regex->as_string(), where);
  json.fail("a pattern must be {{\"String\": ...}} or {{\"Regex\": ...}}");
}

}  // namespace tqlab::tokenizer
