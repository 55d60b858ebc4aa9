#include "results/comparable_results.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "results/results_document.h"

namespace tqlab {
namespace {

using Json = nlohmann::ordered_json;

// Members that say where and by what a document was made, not what it measured.
constexpr std::string_view kContextKeys[] = {"tqlab", "tqlab_version", "git_commit", "path", "origin"};
// Members that tell the objects of an array apart, tried in this order.
constexpr std::string_view kNamingKeys[] = {"name", "estimator", "rotation", "inner_product", "layer"};

bool is_context_key(std::string_view key) {
  return std::find(std::begin(kContextKeys), std::end(kContextKeys), key) != std::end(kContextKeys);
}

std::string join_path(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

LeafValue leaf_value(const Json& scalar) {
  if (scalar.is_number()) return LeafValue::of_number(scalar.get<double>());
  if (scalar.is_boolean()) return LeafValue::of_text(scalar.get<bool>() ? "true" : "false");
  if (scalar.is_string()) return LeafValue::of_text(scalar.get<std::string>());
  return LeafValue::null_value();
}

bool is_scalar(const Json& value) { return !value.is_object() && !value.is_array(); }

// "name=d_mse_empirical" per element when one naming member has distinct scalar
// values in every element; the indices otherwise.
std::vector<std::string> element_labels(const Json& array) {
  if (!array.empty()) {
    for (std::string_view key : kNamingKeys) {
      std::vector<std::string> labels;
      std::set<std::string> seen;
      for (const Json& element : array) {
        if (!element.is_object()) break;
        const auto found = element.find(key);
        if (found == element.end() || !is_scalar(*found)) break;
        std::string label = fmt::format("{}={}", key, leaf_value(*found).to_string());
        if (!seen.insert(label).second) break;
        labels.push_back(std::move(label));
      }
      if (labels.size() == array.size()) return labels;
    }
  }
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < array.size(); ++i) labels.push_back(std::to_string(i));
  return labels;
}

// Numbers and nulls, or arrays of them (per-head tables), at any depth.
bool is_numeric_array(const Json& value) {
  if (!value.is_array()) return false;
  return std::all_of(value.begin(), value.end(), [](const Json& element) {
    return element.is_number() || element.is_null() || is_numeric_array(element);
  });
}

struct Flattener {
  bool include_timing = false;
  std::vector<Leaf>* context = nullptr;  // where context members go

  bool skipped(std::string_view key) const { return key == "timing" && !include_timing; }

  // Every scalar below `value`, with its path.
  void leaves(const Json& value, const std::string& path, std::vector<Leaf>& out) const {
    if (value.is_object()) {
      for (const auto& [key, member] : value.items()) {
        if (skipped(key)) continue;
        leaves(member, join_path(path, key), is_context_key(key) ? *context : out);
      }
    } else if (value.is_array()) {
      const std::vector<std::string> labels = element_labels(value);
      for (std::size_t i = 0; i < value.size(); ++i) leaves(value[i], fmt::format("{}[{}]", path, labels[i]), out);
    } else {
      out.push_back({path, leaf_value(value)});
    }
  }

  // The quantities below `value` (see the header's generic rules).
  void quantities(const Json& value, const std::string& path, std::vector<Quantity>& out) const {
    if (value.is_object()) {
      const auto mean = value.find("mean");
      const auto se = value.contains("se") ? value.find("se") : value.find("standard_error");
      if (mean != value.end() && se != value.end() && is_scalar(*mean)) {
        Quantity quantity{path, leaf_value(*mean), std::nullopt, {}};
        if (se->is_number()) quantity.se = se->get<double>();
        for (const auto& [key, member] : value.items()) {
          if (key != "mean" && !skipped(key)) leaves(member, join_path(path, key), quantity.details);
        }
        out.push_back(std::move(quantity));
        return;
      }
      for (const auto& [key, member] : value.items()) {
        if (skipped(key)) continue;
        if (is_context_key(key)) {
          leaves(member, join_path(path, key), *context);
        } else {
          quantities(member, join_path(path, key), out);
        }
      }
    } else if (is_numeric_array(value)) {
      Quantity quantity{path, std::nullopt, std::nullopt, {}};
      leaves(value, path, quantity.details);
      out.push_back(std::move(quantity));
    } else if (value.is_array()) {
      const std::vector<std::string> labels = element_labels(value);
      for (std::size_t i = 0; i < value.size(); ++i) quantities(value[i], fmt::format("{}[{}]", path, labels[i]), out);
    } else {
      out.push_back({path, leaf_value(value), std::nullopt, {}});
    }
  }
};

[[noreturn]] void fail_at(const std::string& path, const std::string& where, const std::string& what) {
  fail("results '{}': {}: {}", path, where, what);
}

const Json& require_array(const Json& document, std::string_view key, const std::string& path) {
  const auto found = document.find(key);
  if (found == document.end() || !found->is_array()) {
    fail("results '{}': no \"{}\" list; is it a complete {} document?", path, key, results_schema(document));
  }
  return *found;
}

const Json& require_object(const Json& value, const std::string& path, const std::string& where) {
  if (!value.is_object()) fail_at(path, where, "expected an object {...}");
  return value;
}

// "dim=128 bits=3" from the members an entry is identified by; an error naming the entry when one is missing.
std::string identity_key(const Json& entry, std::initializer_list<std::string_view> members, const std::string& path,
                         const std::string& where) {
  require_object(entry, path, where);
  std::vector<std::string> parts;
  for (std::string_view member : members) {
    const auto found = entry.find(member);
    if (found == entry.end() || !is_scalar(*found) || found->is_null()) {
      fail_at(path, where, fmt::format("no \"{}\" to match it by", member));
    }
    parts.push_back(fmt::format("{}={}", member, leaf_value(*found).to_string()));
  }
  return fmt::format("{}", fmt::join(parts, " "));
}

// Every top-level member except `skip` into the header (context members aside).
void flatten_header(const Json& document, std::initializer_list<std::string_view> skip, const Flattener& flattener,
                    ComparableDocument& out) {
  for (const auto& [key, member] : document.items()) {
    if (key == "schema" || std::find(skip.begin(), skip.end(), key) != skip.end() || flattener.skipped(key)) continue;
    flattener.leaves(member, key, is_context_key(key) ? out.context : out.header);
  }
}

// Rows are matched by key, so a key may appear once per file.
void require_new_row(const ComparableDocument& document, const std::string& key, const std::string& where) {
  for (const ComparableRow& earlier : document.rows) {
    if (earlier.key == key)
      fail_at(document.path, where, fmt::format("the {} '{}' appears twice", document.row_noun, key));
  }
}

ComparableRow& row_for(ComparableDocument& document, const std::string& key) {
  for (ComparableRow& row : document.rows) {
    if (row.key == key) return row;
  }
  document.rows.push_back({key, {}, {}});
  return document.rows.back();
}

Quantity* find_quantity(ComparableRow& row, std::string_view name) {
  for (Quantity& quantity : row.quantities) {
    if (quantity.name == name) return &quantity;
  }
  return nullptr;
}

// per_layer / per_head tables: their values become details of the quantity of the
// same name ("attn_kl"), labelled by layer; a table with no such quantity is its own.
void attach_layer_tables(const Json& tables, std::string_view section, const std::vector<std::string>& layer_labels,
                         const Flattener& flattener, ComparableRow& row) {
  for (const auto& [name, table] : tables.items()) {
    if (name == "layer" || flattener.skipped(name)) continue;
    std::vector<Leaf> details;
    const std::string base = fmt::format("{}.{}", section, name);
    if (table.is_array() && table.size() == layer_labels.size()) {
      for (std::size_t i = 0; i < table.size(); ++i) {
        flattener.leaves(table[i], fmt::format("{}[{}]", base, layer_labels[i]), details);
      }
    } else {
      flattener.leaves(table, base, details);
    }
    Quantity* owner = find_quantity(row, name);
    if (owner == nullptr) {
      row.quantities.push_back({base, std::nullopt, std::nullopt, {}});
      owner = &row.quantities.back();
    }
    owner->details.insert(owner->details.end(), details.begin(), details.end());
  }
}

ComparableDocument sweep_document(const Json& document, const std::string& path, bool include_timing) {
  ComparableDocument out{path, std::string(kSweepSchema), "run", "config and data", {}, {}, {}};
  const Flattener flattener{include_timing, &out.context};
  // The config's run list is what the runs below are, compared run by run; its
  // name labels the study and changes no number.
  Json header = Json::object();
  for (const auto& [key, member] : document.items()) {
    if (key != "runs") header[key] = member;
  }
  if (const auto config = header.find("config"); config != header.end() && config->is_object()) {
    config->erase("runs");
    if (const auto name = config->find("name"); name != config->end()) {
      flattener.leaves(*name, "config.name", out.context);
      config->erase(name);
    }
  }
  flatten_header(header, {}, flattener, out);

  const Json& runs = require_array(document, "runs", path);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const std::string where = fmt::format("runs[{}]", i);
    const Json& run = require_object(runs[i], path, where);
    const auto id = run.find("id");
    if (id == run.end() || !id->is_string()) fail_at(path, where, "no \"id\" string to match the run by");
    std::string key = id->get<std::string>();
    if (const auto seeds = run.find("seeds"); seeds != run.end()) {
      std::vector<std::string> seed_list;
      if (seeds->is_array()) {
        for (const Json& seed : *seeds) seed_list.push_back(seed.dump());
      } else {
        seed_list.push_back(seeds->dump());
      }
      key += fmt::format(" seeds={}", fmt::join(seed_list, ","));
    }
    ComparableRow row{key, {}, {}};
    const Flattener run_flattener{include_timing, &row.context};
    for (const auto& [member, value] : run.items()) {
      // The engine and prefill are part of the id (PlannedRun::identity).
      if (member == "id" || member == "k" || member == "v" || member == "window" || member == "sink" ||
          member == "engine" || member == "prefill" ||
          member == "seeds" || member == "per_layer" || member == "per_head" || run_flattener.skipped(member)) {
        continue;
      }
      if (is_context_key(member)) {
        run_flattener.leaves(value, member, row.context);
      } else if ((member == "bits" || member == "metrics") && value.is_object()) {
        for (const auto& [name, entry] : value.items()) {
          if (!run_flattener.skipped(name)) run_flattener.quantities(entry, name, row.quantities);
        }
      } else {
        run_flattener.quantities(value, member, row.quantities);
      }
    }
    // Per-layer and per-head values are labelled by the layer numbers per_layer.layer lists.
    std::vector<std::string> layer_labels;
    if (const auto per_layer = run.find("per_layer"); per_layer != run.end() && per_layer->is_object()) {
      if (const auto layers = per_layer->find("layer"); layers != per_layer->end() && layers->is_array()) {
        for (const Json& layer : *layers) layer_labels.push_back("layer=" + leaf_value(layer).to_string());
      }
    }
    for (std::string_view section : {"per_layer", "per_head"}) {
      const auto tables = run.find(section);
      if (tables != run.end() && tables->is_object())
        attach_layer_tables(*tables, section, layer_labels, run_flattener, row);
    }
    require_new_row(out, row.key, where);
    out.rows.push_back(std::move(row));
  }
  return out;
}

ComparableDocument bounds_document(const Json& document, const std::string& path, bool include_timing) {
  ComparableDocument out{path, std::string(kBoundsSchema), "row", "settings and summary", {}, {}, {}};
  const Flattener flattener{include_timing, &out.context};
  flatten_header(document, {"rows", "histograms"}, flattener, out);
  const Json& rows = require_array(document, "rows", path);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::string where = fmt::format("rows[{}]", i);
    const std::string key = identity_key(rows[i], {"dim", "bits"}, path, where);
    require_new_row(out, key, where);
    ComparableRow& row = row_for(out, key);
    const Flattener row_flattener{include_timing, &row.context};
    for (const auto& [member, value] : rows[i].items()) {
      if (member == "dim" || member == "bits" || row_flattener.skipped(member)) continue;
      if (is_context_key(member)) {
        row_flattener.leaves(value, member, row.context);
      } else {
        row_flattener.quantities(value, member, row.quantities);
      }
    }
  }
  // Histograms join their (dim, bits) row, one group of quantities per estimator.
  if (document.contains("histograms")) {
    const Json& histograms = require_array(document, "histograms", path);
    std::set<std::string> seen;
    for (std::size_t i = 0; i < histograms.size(); ++i) {
      const std::string where = fmt::format("histograms[{}]", i);
      const std::string key = identity_key(histograms[i], {"dim", "bits"}, path, where);
      const std::string estimator = identity_key(histograms[i], {"estimator"}, path, where);
      if (!seen.insert(key + " " + estimator).second) {
        fail_at(path, where, fmt::format("a second histogram for {} {}", key, estimator));
      }
      ComparableRow& row = row_for(out, key);
      const Flattener row_flattener{include_timing, &row.context};
      const std::string base = fmt::format("histograms[{}]", estimator);
      for (const auto& [member, value] : histograms[i].items()) {
        if (member == "dim" || member == "bits" || member == "estimator" || row_flattener.skipped(member)) continue;
        row_flattener.quantities(value, join_path(base, member), row.quantities);
      }
    }
  }
  return out;
}

// Schema 1 named the published reproduction's values "seed001" (fields seed001 and
// seed001_z, checks seed001.*); schema 2 calls them "reproduction". Renamed here, a
// schema 1 file compares with a schema 2 file field by field.
Json renamed_version1_fields(const Json& value) {
  if (value.is_object()) {
    Json out = Json::object();
    for (const auto& [key, member] : value.items()) {
      std::string name = key;
      if (name == "seed001" || name == "seed001_z") name.replace(0, 7, "reproduction");
      if (name == "name" && member.is_string() && member.get<std::string>().starts_with("seed001.")) {
        out[name] = "reproduction." + member.get<std::string>().substr(8);
        continue;
      }
      out[name] = renamed_version1_fields(member);
    }
    return out;
  }
  if (value.is_array()) {
    Json out = Json::array();
    for (const Json& element : value) out.push_back(renamed_version1_fields(element));
    return out;
  }
  return value;
}

ComparableDocument bounds_version1_document(const Json& document, const std::string& path, bool include_timing) {
  return bounds_document(renamed_version1_fields(document), path, include_timing);
}

ComparableDocument codebook_document(const Json& document, const std::string& path, bool include_timing) {
  ComparableDocument out{path, std::string(kCodebookSchema), "codebook", "document", {}, {}, {}};
  const Flattener flattener{include_timing, &out.context};
  std::vector<std::pair<std::string, const Json*>> codebooks;
  if (document.contains("codebooks")) {
    flatten_header(document, {"codebooks"}, flattener, out);
    const Json& list = require_array(document, "codebooks", path);
    for (std::size_t i = 0; i < list.size(); ++i) codebooks.emplace_back(fmt::format("codebooks[{}]", i), &list[i]);
  } else {
    codebooks.emplace_back("codebook", &document);
  }
  for (const auto& [where, codebook] : codebooks) {
    const std::string key = identity_key(*codebook, {"dim", "bits", "distribution"}, path, where);
    require_new_row(out, key, where);
    ComparableRow row{key, {}, {}};
    const Flattener row_flattener{include_timing, &row.context};
    for (const auto& [member, value] : codebook->items()) {
      if (member == "schema" || member == "dim" || member == "bits" || member == "distribution" ||
          row_flattener.skipped(member)) {
        continue;
      }
      if (is_context_key(member)) {
        row_flattener.leaves(value, member, row.context);
      } else {
        row_flattener.quantities(value, member, row.quantities);
      }
    }
    out.rows.push_back(std::move(row));
  }
  return out;
}

}  // namespace

std::string LeafValue::to_string() const {
  switch (kind) {
    case Kind::null: return "null";
    case Kind::number: return fmt::format("{}", number);
    case Kind::text: return text;
  }
  return "";
}

nlohmann::ordered_json LeafValue::to_json() const {
  switch (kind) {
    case Kind::null: return nullptr;
    case Kind::number: return number;
    case Kind::text: return text;
  }
  return nullptr;
}

const std::vector<ComparableSchema>& comparable_schemas() {
  static const std::vector<ComparableSchema> schemas = {
      {kSweepSchema, "run", "id (k and v specs, window, sink) and seed list", sweep_document},
      {kBoundsSchema, "row", "dim and bits", bounds_document},
      {kBoundsSchemaVersion1, "row", "dim and bits (compared as tqlab.bounds/2)", bounds_version1_document},
      {kCodebookSchema, "codebook", "dim, bits and distribution", codebook_document},
  };
  return schemas;
}

const ComparableSchema* find_comparable_schema(std::string_view schema) {
  for (const ComparableSchema& entry : comparable_schemas()) {
    if (entry.schema == schema) return &entry;
  }
  return nullptr;
}

ComparableDocument comparable_document(const nlohmann::ordered_json& document, const std::string& path,
                                       bool include_timing) {
  const std::string schema = results_schema(document);
  const ComparableSchema* entry = find_comparable_schema(schema);
  if (entry == nullptr) {
    std::vector<std::string_view> known;
    for (const ComparableSchema& candidate : comparable_schemas()) known.push_back(candidate.schema);
    fail("results '{}': schema '{}' is not one diff compares ({})", path, schema, fmt::join(known, ", "));
  }
  return entry->build(document, path, include_timing);
}

bool quantity_matches(std::string_view name, std::string_view filter) {
  if (!name.starts_with(filter)) return false;
  if (name.size() == filter.size()) return true;
  const char next = name[filter.size()];
  return next == '.' || next == '@' || next == '[';
}

}  // namespace tqlab
