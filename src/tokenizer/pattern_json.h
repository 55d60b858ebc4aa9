// Reading a pattern object of tokenizer.json: {"String": "..."} or {"Regex": "..."}.
#pragma once

#include "tokenizer/text_pattern.h"

namespace tqlab {
class JsonReader;
}

namespace tqlab::tokenizer {

/// The pattern `json` describes; InputError naming its path when it is neither
/// form or the regex does not compile.
TextPattern read_text_pattern(const JsonReader& json);

}  // namespace tqlab::tokenizer
