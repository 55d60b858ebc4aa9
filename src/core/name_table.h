// An enum's names, written once: one table of (value, name) rows from which the program both
// prints a value (name) and reads one back (parse), instead of a hand-written switch and a
// hand-written inverse that must agree.
//
//   inline constexpr auto kQjlModeNames =
//       make_name_table<QjlMode>({{QjlMode::none, "none"}, {QjlMode::prod, "prod"}, {QjlMode::extra, "extra"}});
//   kQjlModeNames.name(QjlMode::prod) == "prod";  kQjlModeNames.parse("extra") == QjlMode::extra
//
// The rows' order is the order values() and names() list them in (help texts, error messages).
// Names are string literals, so name(value).data() is a C string too.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tqlab {

/// One row of a NameTable.
template <class Enum>
struct EnumName {
  Enum value;
  std::string_view name;
};

/// N rows (value, name); every value of the enum the program uses has one row, and no name two.
template <class Enum, std::size_t N>
class NameTable {
 public:
  /// Throws std::logic_error on a repeated value or name: a table built as a constexpr variable (as
  /// every table is) then fails to compile.
  constexpr explicit NameTable(const EnumName<Enum> (&rows)[N]) : rows_{} {
    for (std::size_t i = 0; i < N; ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        if (rows[j].value == rows[i].value || rows[j].name == rows[i].name) {
          throw std::logic_error("NameTable: a value or a name has two rows");
        }
      }
      rows_[i] = rows[i];
    }
  }

  /// The name of `value`; "?" for a value without a row (a bug: the table lists every value).
  constexpr std::string_view name(Enum value) const {
    for (const EnumName<Enum>& row : rows_) {
      if (row.value == value) return row.name;
    }
    return "?";
  }

  /// The value named `name` (exact, case-sensitive); nullopt for any other word.
  constexpr std::optional<Enum> parse(std::string_view name) const {
    for (const EnumName<Enum>& row : rows_) {
      if (row.name == name) return row.value;
    }
    return std::nullopt;
  }

  /// The values, in row order.
  constexpr std::array<Enum, N> values() const {
    std::array<Enum, N> values{};
    for (std::size_t i = 0; i < N; ++i) values[i] = rows_[i].value;
    return values;
  }

  /// The names, in row order.
  std::vector<std::string> names() const {
    std::vector<std::string> names;
    for (const EnumName<Enum>& row : rows_) names.emplace_back(row.name);
    return names;
  }

  constexpr const std::array<EnumName<Enum>, N>& rows() const { return rows_; }

 private:
  std::array<EnumName<Enum>, N> rows_;
};

/// A NameTable of Enum from its rows; N is counted from the braced list.
template <class Enum, std::size_t N>
constexpr NameTable<Enum, N> make_name_table(const EnumName<Enum> (&rows)[N]) {
  return NameTable<Enum, N>(rows);
}

}  // namespace tqlab
