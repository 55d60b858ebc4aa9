// The post-processor of tokenizer.json, reduced to what it does to one
// sequence's ids when special tokens are added: ids put before and after them
// (Hugging Face tokenizers docs, "Post-processors"). Supported:
//   TemplateProcessing  its "single" template: SpecialToken entries before and
//                       after the one Sequence entry ("<s>" $A for Llama 2)
//   ByteLevel           adds nothing (it only trims offsets)
//   Sequence            its processors in turn, each wrapping the result of the last
// The "pair" template is not used: tqlab encodes one text at a time.
#pragma once

#include <cstdint>
#include <vector>

namespace tqlab {
class JsonReader;
}

namespace tqlab::tokenizer {

/// The ids added around one sequence.
struct SpecialTokenFrame {
  std::vector<std::int32_t> before;
  std::vector<std::int32_t> after;
  bool empty() const { return before.empty() && after.empty(); }
};

/// The frame a tokenizer.json "post_processor" object adds; InputError naming
/// the JSON path for another type or a malformed template.
SpecialTokenFrame read_post_processor(const JsonReader& json);

}  // namespace tqlab::tokenizer
