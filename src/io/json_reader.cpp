#include "io/json_reader.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/text.h"

namespace tqlab {

namespace {

template <typename Json>
Json parse_json(std::string_view text, const std::string& path, std::string_view kind) {
  try {
    return Json::parse(text);
  } catch (const typename Json::exception& error) {
    // parse_error, or out_of_range for a number beyond double ("1e400").
    // what() is "[json.exception.parse_error.101] parse error at line 3, column 5: ...".
    std::string what = error.what();
    if (const std::size_t at = what.find("] "); at != std::string::npos) what = what.substr(at + 2);
    fail("{} '{}': not valid JSON: {}", kind, path, printable(what, 240));
  }
}

template <typename Json>
Json parse_json_file(const std::string& path, std::string_view kind) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{} '{}': cannot be read (missing, or not readable)", kind, path);
  std::ostringstream text;
  text << in.rdbuf();
  return parse_json<Json>(text.str(), path, kind);
}

}  // namespace

nlohmann::json read_json_file(const std::string& path, std::string_view kind) {
  return parse_json_file<nlohmann::json>(path, kind);
}

nlohmann::json parse_json_text(std::string_view text, const std::string& path, std::string_view kind) {
  return parse_json<nlohmann::json>(text, path, kind);
}

nlohmann::ordered_json read_ordered_json_file(const std::string& path, std::string_view kind) {
  return parse_json_file<nlohmann::ordered_json>(path, kind);
}

JsonReader::JsonReader(const nlohmann::json& value, std::string file, std::string path, std::string kind)
    : value_(&value), file_(std::move(file)), path_(std::move(path)), kind_(std::move(kind)) {}

void JsonReader::fail_with(const std::string& message) const {
  // tqlab::fail, not this class's own fail (which formats and comes back here).
  if (path_.empty()) tqlab::fail("{} '{}': {}", kind_, file_, message);
  tqlab::fail("{} '{}': {}: {}", kind_, file_, path_, message);
}

std::string JsonReader::type_name() const {
  switch (value_->type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::object: return "an object";
    case nlohmann::json::value_t::array: return "a list";
    case nlohmann::json::value_t::string: return "a string";
    case nlohmann::json::value_t::boolean: return "true/false";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned: return "an integer";
    case nlohmann::json::value_t::number_float: return "a number";
    default: return "a value of another kind";
  }
}

void JsonReader::require_object() const {
  if (!value_->is_object()) fail("expected an object {{...}}, got {}", type_name());
}

void JsonReader::allow_only(std::initializer_list<std::string_view> allowed) const {
  require_object();
  for (const auto& [key, member] : value_->items()) {
    bool known = false;
    for (std::string_view name : allowed) known = known || name == key;
    if (!known) {
      const std::string where = path_.empty() ? key : path_ + "." + key;
      tqlab::fail("{} '{}': unknown key '{}' (allowed{}: {})", kind_, file_, where, path_.empty() ? "" : " in " + path_,
           fmt::join(allowed, ", "));
    }
  }
}

bool JsonReader::has(std::string_view key) const {
  require_object();
  return value_->contains(key);
}

std::optional<JsonReader> JsonReader::find(std::string_view key) const {
  require_object();
  const auto found = value_->find(key);
  if (found == value_->end()) return std::nullopt;
  return JsonReader(*found, file_, path_.empty() ? std::string(key) : path_ + "." + std::string(key), kind_);
}

JsonReader JsonReader::at(std::string_view key) const {
  if (auto found = find(key)) return *found;
  if (path_.empty()) tqlab::fail("{} '{}': missing key '{}'", kind_, file_, key);
  tqlab::fail("{} '{}': missing key '{}.{}'", kind_, file_, path_, key);
}

std::vector<std::pair<std::string, JsonReader>> JsonReader::members() const {
  require_object();
  std::vector<std::pair<std::string, JsonReader>> out;
  for (const auto& [key, member] : value_->items()) {
    out.emplace_back(key, JsonReader(member, file_, path_.empty() ? key : path_ + "." + key, kind_));
  }
  return out;
}

bool JsonReader::is_array() const { return value_->is_array(); }
bool JsonReader::is_string() const { return value_->is_string(); }
bool JsonReader::is_object() const { return value_->is_object(); }
bool JsonReader::is_number() const { return value_->is_number(); }
bool JsonReader::is_bool() const { return value_->is_boolean(); }

std::vector<JsonReader> JsonReader::elements() const {
  if (!value_->is_array()) fail("expected a list [...], got {}", type_name());
  std::vector<JsonReader> out;
  for (std::size_t i = 0; i < value_->size(); ++i) {
    out.emplace_back((*value_)[i], file_, fmt::format("{}[{}]", path_, i), kind_);
  }
  return out;
}

std::string JsonReader::as_string() const {
  if (!value_->is_string()) fail("expected a string, got {}", type_name());
  return value_->get<std::string>();
}

bool JsonReader::as_bool() const {
  if (!value_->is_boolean()) fail("expected true or false, got {}", type_name());
  return value_->get<bool>();
}

double JsonReader::as_number() const {
  if (!value_->is_number()) fail("expected a number, got {}", type_name());
  const double number = value_->get<double>();
  if (!std::isfinite(number)) fail("expected a finite number, got {}", number);
  return number;
}

std::int64_t JsonReader::as_integer(std::int64_t lo, std::int64_t hi) const {
  // nlohmann stores every non-negative integer as unsigned: both kinds are held to both bounds.
  const auto out_of_range = [&](auto number) {
    if (hi == std::numeric_limits<std::int64_t>::max()) fail("{} is out of range: expected at least {}", number, lo);
    fail("{} is out of range {}..{}", number, lo, hi);
  };
  if (value_->is_number_unsigned()) {
    const auto number = value_->get<std::uint64_t>();
    if (number > static_cast<std::uint64_t>(hi) || (lo > 0 && number < static_cast<std::uint64_t>(lo))) {
      out_of_range(number);
    }
    return static_cast<std::int64_t>(number);
  }
  if (!value_->is_number_integer()) fail("expected an integer, got {}", type_name());
  const auto number = value_->get<std::int64_t>();
  if (number < lo || number > hi) out_of_range(number);
  return number;
}

double JsonReader::as_number(double lo, double hi) const {
  const double number = as_number();
  if (!(number >= lo && number <= hi)) fail("{} is out of range {}..{}", number, lo, hi);
  return number;
}

std::uint64_t JsonReader::as_unsigned() const {
  if (value_->is_number_unsigned()) return value_->get<std::uint64_t>();
  if (value_->is_number_integer()) {
    const auto number = value_->get<std::int64_t>();
    if (number >= 0) return static_cast<std::uint64_t>(number);
    fail("expected a non-negative integer, got {}", number);
  }
  fail("expected a non-negative integer, got {}", type_name());
}

}  // namespace tqlab
