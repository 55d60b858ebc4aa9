// The post-processors of post_processor.h.
#include "tokenizer/post_processor.h"

#include <nlohmann/json.hpp>

#include "io/json_reader.h"
#include "tokenizer/nesting.h"

namespace tqlab::tokenizer {
namespace {

// The ids of special token `name` in the template's "special_tokens" map.
std::vector<std::int32_t> special_token_ids(const JsonReader& template_json, const JsonReader& entry,
                                            const std::string& name) {
  const JsonReader specials = template_json.at("special_tokens");
  const auto special = specials.find(name);
  if (!special) entry.fail("special token '{}' is not in {}", name, specials.path());
  std::vector<std::int32_t> ids;
  for (const JsonReader& id : special->at("ids").elements()) {
    ids.push_back(static_cast<std::int32_t>(id.as_integer(0, (std::int64_t{1} << 31) - 1)));
  }
  return ids;
}

SpecialTokenFrame read_template(const JsonReader& json) {
  json.allow_only({"type", "single", "pair", "special_tokens"});
  SpecialTokenFrame frame;
  bool seen_sequence = false;
  for (const JsonReader& entry : json.at("single").elements()) {
    entry.allow_only({"SpecialToken", "Sequence"});
    if (const auto sequence = entry.find("Sequence")) {
      const std::string which = sequence->at("id").as_string();
      if (which != "A" || seen_sequence) {
        entry.fail("the single-sequence template must hold the Sequence A once, not Sequence {}", which);
      }
      seen_sequence = true;
      continue;
    }
    const std::string name = entry.at("SpecialToken").at("id").as_string();
    const std::vector<std::int32_t> ids = special_token_ids(json, entry, name);
    auto& side = seen_sequence ? frame.after : frame.before;
    side.insert(side.end(), ids.begin(), ids.end());
  }
  if (!seen_sequence) json.at("single").fail("the template has no Sequence A: it would drop the text");
  return frame;
}

SpecialTokenFrame read_post_processor_at(const JsonReader& json, int depth) {
  if (depth > kMaxSequenceNesting) json.fail("Sequences nested more than {} deep", kMaxSequenceNesting);
  const std::string type = json.at("type").as_string();
  if (type == "TemplateProcessing") return read_template(json);
  if (type == "ByteLevel") {
    json.allow_only({"type", "add_prefix_space", "trim_offsets", "use_regex"});
    return {};
  }
  if (type == "Sequence") {
    json.allow_only({"type", "processors"});
    SpecialTokenFrame frame;
    for (const JsonReader& step : json.at("processors").elements()) {
      SpecialTokenFrame inner = read_post_processor_at(step, depth + 1);
      inner.before.insert(inner.before.end(), frame.before.begin(), frame.before.end());
      frame.before = std::move(inner.before);
      frame.after.insert(frame.after.end(), inner.after.begin(), inner.after.end());
    }
    return frame;
  }
  json.at("type").fail("post-processor type '{}' is not supported (supported: TemplateProcessing, ByteLevel, "
                       "Sequence)",
                       type);
}

}  // namespace

SpecialTokenFrame read_post_processor(const JsonReader& json) { return read_post_processor_at(json, 0); }

}  // namespace tqlab::tokenizer
