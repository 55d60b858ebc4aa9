// Reading a JSON document (a sweep config a user wrote, a results file tqlab
// wrote) with errors that say where: every value knows its key path
// ("grid.k[2]", "metrics.attention.chunk"), and every error names the kind of
// document, the file, the path and what is allowed, on one line.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json_fwd.hpp>

#include "core/error.h"

namespace tqlab {

/// Parses the JSON text of `path`; InputError "KIND 'PATH': ..." when it cannot
/// be read or is not JSON (with the parser's line and column). `kind` says what
/// the file is to the user: "config", "results".
nlohmann::json read_json_file(const std::string& path, std::string_view kind = "config");
/// Parses `text` as the contents of `path` (same errors as read_json_file).
nlohmann::json parse_json_text(std::string_view text, const std::string& path, std::string_view kind = "config");
/// The same, keeping the members of every object in the file's order.
nlohmann::ordered_json read_ordered_json_file(const std::string& path, std::string_view kind);

/// A value inside a document, with the file it came from and its key path.
/// Refers to the document: it must outlive the reader.
class JsonReader {
 public:
  /// `kind` names the document in messages ("config 'F': ...", "results 'F': ...").
  JsonReader(const nlohmann::json& value, std::string file, std::string path = "", std::string kind = "config");

  const nlohmann::json& value() const { return *value_; }
  /// "grid.k[2]"; "" for the document itself.
  const std::string& path() const { return path_; }
  const std::string& file() const { return file_; }

  // Objects. Each throws (naming this path) when the value is not an object.
  /// Refuses any key not in `allowed`, naming it and listing the allowed ones.
  void allow_only(std::initializer_list<std::string_view> allowed) const;
  bool has(std::string_view key) const;
  /// The member `key`; an error naming the missing key when absent.
  JsonReader at(std::string_view key) const;
  std::optional<JsonReader> find(std::string_view key) const;
  /// The members, in document order, as (key, reader) pairs.
  std::vector<std::pair<std::string, JsonReader>> members() const;

  // Arrays.
  bool is_array() const;
  /// The elements; an error when not an array.
  std::vector<JsonReader> elements() const;

  // Scalars: each names this path and the expected type when the value is another type.
  bool is_string() const;
  bool is_object() const;
  bool is_number() const;
  bool is_bool() const;
  std::string as_string() const;
  bool as_bool() const;
  /// A finite number.
  double as_number() const;
  /// A finite number in [lo, hi] (documents tqlab reads back: a count, a byte size, a damage).
  double as_number(double lo, double hi) const;
  /// An integer in [lo, hi].
  std::int64_t as_integer(std::int64_t lo, std::int64_t hi) const;
  /// A non-negative integer up to 2^64 - 1.
  std::uint64_t as_unsigned() const;
  /// "a string", "a number", ... for messages.
  std::string type_name() const;

  /// Throws InputError "KIND 'FILE': PATH: message".
  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) const {
    fail_with(fmt::format(format, std::forward<Args>(args)...));
  }

 private:
  [[noreturn]] void fail_with(const std::string& message) const;
  void require_object() const;

  const nlohmann::json* value_;
  std::string file_;
  std::string path_;
  std::string kind_;
};

}  // namespace tqlab
