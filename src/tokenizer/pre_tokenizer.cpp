// The pre-tokenizers of pre_tokenizer.h, with Hugging Face tokenizers'
// semantics (tokenizers/src/pre_tokenizers/ and normalizer.rs's split()).
#include "tokenizer/pre_tokenizer.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "io/json_reader.h"
#include "tokenizer/byte_level_alphabet.h"
#include "tokenizer/nesting.h"
#include "tokenizer/pattern_json.h"
#include "tokenizer/unicode_text.h"

namespace tqlab::tokenizer {
namespace {

// A stretch of the text being split, and whether it is a match of the pattern.
struct Span {
  std::size_t begin;
  std::size_t end;
  bool is_match;
};

// Appends text[begin, end), which no match covers, as spans that are not matches.
// After a regex, every stray byte (one that belongs to no UTF-8 character, so no
// match could take it) is a span of its own: it becomes a piece of its own, and
// so its byte's token, rather than merging with its neighbours.
void add_gap(const std::string& text, std::size_t begin, std::size_t end, bool cut_stray_bytes,
             std::vector<Span>& spans) {
  if (!cut_stray_bytes) {
    spans.push_back({begin, end, false});
    return;
  }
  std::size_t run_start = begin;
  std::size_t at = begin;
  while (at < end) {
    char32_t code_point = 0;
    const std::size_t length = utf8_char_at(std::string_view(text).substr(at, end - at), code_point);
    if (length != 0) {
      at += length;
      continue;
    }
    if (at > run_start) spans.push_back({run_start, at, false});
    spans.push_back({at, at + 1, false});
    run_start = ++at;
  }
  if (end > run_start) spans.push_back({run_start, end, false});
}

// Matches and the text between them, covering all of `text` in order (empty matches included).
std::vector<Span> spans_of(const std::string& text, const TextPattern& pattern) {
  std::vector<TextMatch> matches;
  pattern.find_all(text, matches);
  std::vector<Span> spans;
  spans.reserve(2 * matches.size() + 1);
  std::size_t at = 0;
  for (const TextMatch& match : matches) {
    if (match.begin > at) add_gap(text, at, match.begin, pattern.is_regex(), spans);
    spans.push_back({match.begin, match.end, true});
    at = match.end;
  }
  if (at < text.size()) add_gap(text, at, text.size(), pattern.is_regex(), spans);
  return spans;
}

// Joins each match to the span before it (merge_forward false) or after it (true),
// as Hugging Face's MergedWithPrevious / MergedWithNext folds do.
std::vector<Span> merge_matches(const std::vector<Span>& spans, bool merge_forward) {
  std::vector<Span> out;
  out.reserve(spans.size());
  bool previous_match = false;
  auto visit = [&](const Span& span) {
    if (span.is_match && !previous_match && !out.empty()) {
      if (merge_forward) {
        out.back().begin = span.begin;
      } else {
        out.back().end = span.end;
      }
    } else {
      out.push_back(span);
    }
    previous_match = span.is_match;
  };
  if (merge_forward) {
    std::for_each(spans.rbegin(), spans.rend(), visit);
    std::reverse(out.begin(), out.end());
  } else {
    std::for_each(spans.begin(), spans.end(), visit);
  }
  return out;
}

std::vector<Span> join_runs(const std::vector<Span>& spans) {
  std::vector<Span> out;
  bool previous_match = false;
  for (const Span& span : spans) {
    if (span.is_match == previous_match && !out.empty()) {
      out.back().end = span.end;
    } else {
      out.push_back(span);
    }
    previous_match = span.is_match;
  }
  return out;
}

SplitBehavior parse_behavior(const JsonReader& json) {
  const std::string name = json.as_string();
  if (name == "Removed") return SplitBehavior::removed;
  if (name == "Isolated") return SplitBehavior::isolated;
  if (name == "MergedWithPrevious") return SplitBehavior::merged_with_previous;
  if (name == "MergedWithNext") return SplitBehavior::merged_with_next;
  if (name == "Contiguous") return SplitBehavior::contiguous;
  json.fail("split behavior '{}' is not one of Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous",
            name);
}

// Applies `cut` to every piece, replacing the pieces by what it appends.
template <typename Cut>
void cut_each(Pieces& pieces, Cut cut) {
  Pieces out;
  out.reserve(pieces.size());
  for (std::string& piece : pieces) cut(piece, out);
  pieces = std::move(out);
}

class SplitPreTokenizer final : public PreTokenizer {
 public:
  SplitPreTokenizer(TextPattern pattern, SplitBehavior behavior, bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}
  void pre_tokenize(Pieces& pieces, bool) const override {
    cut_each(pieces, [&](const std::string& piece, Pieces& out) {
      split_by_pattern(piece, pattern_, behavior_, invert_, out);
    });
  }
  bool writes_byte_level() const override { return false; }

 private:
  TextPattern pattern_;
  SplitBehavior behavior_;
  bool invert_;
};

// GPT-2's split regex, which ByteLevel runs when use_regex is true (OpenAI's gpt-2 encoder.py).
const TextPattern& gpt2_split_pattern() {
  static const TextPattern pattern = TextPattern::regex(
      R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)", "ByteLevel's GPT-2 pattern");
  return pattern;
}

class ByteLevelPreTokenizer final : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex)
      : add_prefix_space_(add_prefix_space), use_regex_(use_regex) {}
  void pre_tokenize(Pieces& pieces, bool) const override {
    if (add_prefix_space_) {
      for (std::string& piece : pieces) {
        if (piece.empty() || piece[0] != ' ') piece.insert(piece.begin(), ' ');
      }
    }
    if (use_regex_) {
      cut_each(pieces, [](const std::string& piece, Pieces& out) {
        split_by_pattern(piece, gpt2_split_pattern(), SplitBehavior::isolated, false, out);
      });
    }
    for (std::string& piece : pieces) {
      std::string mapped;
      mapped.reserve(2 * piece.size());
      append_byte_level(piece, mapped);
      piece = std::move(mapped);
    }
  }
  bool writes_byte_level() const override { return true; }

 private:
  bool add_prefix_space_;
  bool use_regex_;
};

class MetaspacePreTokenizer final : public PreTokenizer {
 public:
  enum class Prepend { always, first, never };
  MetaspacePreTokenizer(std::string replacement, Prepend prepend, bool split, const std::string& where)
      : replacement_(replacement), prepend_(prepend), split_(split),
        space_(TextPattern::literal(" ", where)), replacement_pattern_(TextPattern::literal(replacement, where)) {}
  void pre_tokenize(Pieces& pieces, bool first_starts_input) const override {
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      std::string& piece = pieces[i];
      piece = space_.replace_all(piece, replacement_);
      const bool wanted = prepend_ == Prepend::always || (prepend_ == Prepend::first && i == 0 && first_starts_input);
      if (wanted && !piece.starts_with(replacement_)) piece.insert(0, replacement_);
    }
    if (!split_) return;
    cut_each(pieces, [&](const std::string& piece, Pieces& out) {
      split_by_pattern(piece, replacement_pattern_, SplitBehavior::merged_with_next, false, out);
    });
  }
  bool writes_byte_level() const override { return false; }

 private:
  std::string replacement_;
  Prepend prepend_;
  bool split_;
  TextPattern space_;
  TextPattern replacement_pattern_;
};

class SequencePreTokenizer final : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> steps) : steps_(std::move(steps)) {}
  void pre_tokenize(Pieces& pieces, bool first_starts_input) const override {
    for (const auto& step : steps_) step->pre_tokenize(pieces, first_starts_input);
  }
  bool writes_byte_level() const override {
    return std::any_of(steps_.begin(), steps_.end(), [](const auto& step) { return step->writes_byte_level(); });
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

bool optional_bool(const JsonReader& json, std::string_view key, bool fallback) {
  const auto value = json.find(key);
  return value && !value->value().is_null() ? value->as_bool() : fallback;
}

std::unique_ptr<PreTokenizer> make_metaspace(const JsonReader& json) {
  json.allow_only({"type", "replacement", "prepend_scheme", "split", "add_prefix_space", "str_rep"});
  const JsonReader replacement_json = json.at("replacement");
  const std::string replacement = replacement_json.as_string();
  if (replacement.empty() || char_or_byte_length(replacement) != replacement.size()) {
    replacement_json.fail("the replacement must be one character, not '{}'", replacement);
  }
  auto prepend = MetaspacePreTokenizer::Prepend::always;
  if (const auto scheme = json.find("prepend_scheme")) {
    const std::string name = scheme->as_string();
    if (name == "always") {
      prepend = MetaspacePreTokenizer::Prepend::always;
    } else if (name == "first") {
      prepend = MetaspacePreTokenizer::Prepend::first;
    } else if (name == "never") {
      prepend = MetaspacePreTokenizer::Prepend::never;
    } else {
      scheme->fail("prepend_scheme '{}' is not one of always, first, never", name);
    }
  }
  // Files older than prepend_scheme say add_prefix_space; false means never.
  if (!optional_bool(json, "add_prefix_space", true)) {
    if (prepend != MetaspacePreTokenizer::Prepend::never && json.has("prepend_scheme")) {
      json.at("add_prefix_space").fail("add_prefix_space false contradicts prepend_scheme");
    }
    prepend = MetaspacePreTokenizer::Prepend::never;
  }
  const std::string where = "tokenizer '" + json.file() + "': " + json.path();
  return std::make_unique<MetaspacePreTokenizer>(replacement, prepend, optional_bool(json, "split", true), where);
}

std::unique_ptr<PreTokenizer> make_pre_tokenizer_at(const JsonReader& json, int depth);

}  // namespace

void split_by_pattern(const std::string& text, const TextPattern& pattern, SplitBehavior behavior, bool invert,
                      Pieces& out) {
  if (text.empty()) return;
  std::vector<Span> spans = spans_of(text, pattern);
  if (invert) {
    for (Span& span : spans) span.is_match = !span.is_match;
  }
  switch (behavior) {
    case SplitBehavior::isolated: break;
    case SplitBehavior::removed:
      std::erase_if(spans, [](const Span& span) { return span.is_match; });
      break;
    case SplitBehavior::merged_with_previous: spans = merge_matches(spans, false); break;
    case SplitBehavior::merged_with_next: spans = merge_matches(spans, true); break;
    case SplitBehavior::contiguous: spans = join_runs(spans); break;
  }
  for (const Span& span : spans) {
    if (span.end > span.begin) out.emplace_back(text, span.begin, span.end - span.begin);
  }
}

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const JsonReader& json) { return make_pre_tokenizer_at(json, 0); }

namespace {

std::unique_ptr<PreTokenizer> make_pre_tokenizer_at(const JsonReader& json, int depth) {
  if (depth > kMaxSequenceNesting) json.fail("Sequences nested more than {} deep", kMaxSequenceNesting);
  const std::string type = json.at("type").as_string();
  if (type == "ByteLevel") {
    json.allow_only({"type", "add_prefix_space", "trim_offsets", "use_regex"});
    return std::make_unique<ByteLevelPreTokenizer>(optional_bool(json, "add_prefix_space", true),
                                                   optional_bool(json, "use_regex", true));
  }
  if (type == "Split") {
    json.allow_only({"type", "pattern", "behavior", "invert"});
    return std::make_unique<SplitPreTokenizer>(read_text_pattern(json.at("pattern")),
                                               parse_behavior(json.at("behavior")), json.at("invert").as_bool());
  }
  if (type == "Metaspace") return make_metaspace(json);
  if (type == "Sequence") {
    json.allow_only({"type", "pretokenizers"});
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    for (const JsonReader& step : json.at("pretokenizers").elements()) {
      steps.push_back(make_pre_tokenizer_at(step, depth + 1));
    }
    return std::make_unique<SequencePreTokenizer>(std::move(steps));
  }
  json.at("type").fail("pre-tokenizer type '{}' is not supported (supported: ByteLevel, Split, Metaspace, Sequence)",
                       type);
}

}  // namespace

}  // namespace tqlab::tokenizer
