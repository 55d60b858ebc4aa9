// Literal and PCRE2 patterns (text_pattern.h).
#include "tokenizer/text_pattern.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "core/error.h"
#include "core/text.h"
#include "tokenizer/unicode_text.h"

namespace tqlab::tokenizer {

struct TextPattern::Compiled {
  pcre2_code* code = nullptr;
  ~Compiled() { pcre2_code_free(code); }
};

namespace {

std::string pcre2_message(int error_code) {
  PCRE2_UCHAR buffer[256];
  const int length = pcre2_get_error_message(error_code, buffer, sizeof buffer);
  return length < 0 ? "unknown PCRE2 error " + std::to_string(error_code)
                    : std::string(reinterpret_cast<const char*>(buffer), static_cast<std::size_t>(length));
}

// One JIT stack and one match block per thread, reused by every search: a
// pattern is shared between threads, the state of a search is not. The stack
// grows to 8 MiB (PCRE2's default is 32 KiB, which long runs of one class of
// characters can exhaust).
struct SearchState {
  pcre2_jit_stack* jit_stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  pcre2_match_data* match_data = pcre2_match_data_create(1, nullptr);
  SearchState() {
    if (jit_stack != nullptr) pcre2_jit_stack_assign(context, nullptr, jit_stack);
  }
  ~SearchState() {
    pcre2_match_data_free(match_data);
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(jit_stack);
  }
  SearchState(const SearchState&) = delete;
  SearchState& operator=(const SearchState&) = delete;
};

SearchState& search_state() {
  thread_local SearchState state;
  return state;
}

}  // namespace

TextPattern TextPattern::literal(std::string text, const std::string& where) {
  if (text.empty()) fail("{}: an empty string cannot be searched for", where);
  TextPattern pattern;
  pattern.source_ = std::move(text);
  pattern.where_ = where;
  return pattern;
}

TextPattern TextPattern::regex(const std::string& expression, const std::string& where) {
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(expression.data()), expression.size(),
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error_code, &error_offset,
                                   nullptr);
  if (code == nullptr) {
    fail("{}: the regular expression '{}' does not compile (PCRE2: {} at offset {})", where,
         printable(expression, 200), pcre2_message(error_code), error_offset);
  }
  auto compiled = std::make_shared<Compiled>();
  compiled->code = code;
  // Without JIT support (a CPU or a policy that refuses it) pcre2_match interprets: slower, same matches.
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  TextPattern pattern;
  pattern.source_ = expression;
  pattern.where_ = where;
  pattern.regex_ = std::move(compiled);
  return pattern;
}

void TextPattern::find_all(std::string_view text, std::vector<TextMatch>& matches) const {
  matches.clear();
  if (!regex_) {
    for (std::size_t at = text.find(source_); at != std::string_view::npos; at = text.find(source_, at)) {
      matches.push_back({at, at + source_.size()});
      at += source_.size();
    }
    return;
  }
  SearchState& state = search_state();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  std::size_t start = 0;
  std::size_t previous_end = std::string_view::npos;
  while (start <= text.size()) {
    const int rc = pcre2_match(regex_->code, subject, text.size(), start, 0, state.match_data, state.context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      fail("{}: PCRE2 gave up matching the regular expression '{}' ({}); the text may hold a run it cannot search",
           where_, printable(source_, 200), pcre2_message(rc));
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(state.match_data);
    const std::size_t begin = ovector[0];
    const std::size_t end = ovector[1];
    if (begin != end || begin != previous_end) matches.push_back({begin, end});
    previous_end = end;
    if (end > begin) {
      start = end;
    } else {
      if (end >= text.size()) break;
      start = end + char_or_byte_length(text.substr(end));
    }
  }
}

std::string TextPattern::replace_all(std::string_view text, std::string_view replacement) const {
  std::vector<TextMatch> matches;
  find_all(text, matches);
  if (matches.empty()) return std::string(text);
  std::string out;
  out.reserve(text.size());
  std::size_t at = 0;
  for (const TextMatch& match : matches) {
    out.append(text.substr(at, match.begin - at));
    out.append(replacement);
    at = match.end;
  }
  out.append(text.substr(at));
  return out;
}

}  // namespace tqlab::tokenizer
