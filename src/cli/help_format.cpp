// --help that fits a terminal (see commands.h): descriptions wrapped to kHelpWidth
// columns, and a subcommand listed by the first line of its description.
#include <algorithm>
#include <sstream>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.h"

namespace tqlab::cli {
namespace {

// Where option and subcommand descriptions start.
constexpr std::size_t kNameColumn = 30;

// `text` with each of its lines broken at spaces into lines of at most `width` characters
// (a word longer than that stands on a line of its own).
std::string wrap(std::string_view text, std::size_t width) {
  std::string out;
  std::size_t line_start = 0;
  while (line_start <= text.size()) {
    std::size_t line_end = text.find('\n', line_start);
    if (line_end == std::string_view::npos) line_end = text.size();
    std::string_view line = text.substr(line_start, line_end - line_start);
    std::size_t column = 0;
    std::size_t word_start = 0;
    while (word_start < line.size()) {
      std::size_t word_end = line.find(' ', word_start);
      if (word_end == std::string_view::npos) word_end = line.size();
      const std::string_view word = line.substr(word_start, word_end - word_start);
      if (column > 0 && column + 1 + word.size() > width) {
        out += '\n';
        column = 0;
      } else if (column > 0) {
        out += ' ';
        ++column;
      }
      out += word;
      column += word.size();
      word_start = word_end + 1;
    }
    if (line_end == text.size()) break;
    out += '\n';
    line_start = line_end + 1;
  }
  return out;
}

class HelpFormatter final : public CLI::Formatter {
 public:
  HelpFormatter() { column_width(kNameColumn); }

  std::string make_description(const CLI::App* app) const override {
    const std::string description = CLI::Formatter::make_description(app);
    return description.empty() ? description : wrap(description, kHelpWidth);
  }

  std::string make_subcommand(const CLI::App* sub) const override {
    const std::string& description = sub->get_description();
    std::stringstream out;
    CLI::detail::format_help(out, sub->get_display_name(true),
                             wrap(description.substr(0, description.find('\n')), kHelpWidth - kNameColumn),
                             kNameColumn);
    return out.str();
  }

  // An option's description is one paragraph, however its source string was broken.
  std::string make_option_desc(const CLI::Option* option) const override {
    std::string description = option->get_description();
    std::replace(description.begin(), description.end(), '\n', ' ');
    return wrap(description, kHelpWidth - kNameColumn);
  }
};

}  // namespace

std::shared_ptr<CLI::FormatterBase> make_help_formatter() { return std::make_shared<HelpFormatter>(); }

std::string command_description(std::string_view headline, std::string_view detail, std::string_view anchor) {
  if (detail.empty()) return fmt::format("{}.\nSee docs/REFERENCE.md#{}.", headline, anchor);
  return fmt::format("{}.\n{}\nSee docs/REFERENCE.md#{}.", headline, detail, anchor);
}

}  // namespace tqlab::cli
