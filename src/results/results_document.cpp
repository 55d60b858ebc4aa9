#include "results/results_document.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/json_reader.h"

namespace tqlab {

nlohmann::ordered_json read_results_document(const std::string& path) {
  nlohmann::ordered_json document = read_ordered_json_file(path, "results");
  if (!document.is_object()) {
    fail("results '{}': expected a JSON object with a \"schema\" key, got {}", path,
         document.is_array() ? "a list" : "a " + std::string(document.type_name()));
  }
  const auto schema = document.find("schema");
  if (schema == document.end() || !schema->is_string()) {
    fail("results '{}': no \"schema\" string; expected a document tqlab wrote ({}, {}, {})", path, kSweepSchema,
         kBoundsSchema, kCodebookSchema);
  }
  return document;
}

std::string results_schema(const nlohmann::ordered_json& document) { return document.at("schema").get<std::string>(); }

}  // namespace tqlab
