#include "generator/schema.hpp"

#include <algorithm>
#include <cmath>
#include <regex>
#include <set>

#include "base/error.hpp"
#include "podplane/cluster_schema.hpp"

namespace podplane::generator {

namespace {

using nlohmann::json;

const std::set<std::string>& known_keywords() {
  static const std::set<std::string> keywords = {
      "$schema", "$id", "$comment", "title", "description", "type", "required", "properties",
      "additionalProperties", "enum", "pattern", "minimum", "maximum", "items", "minItems", "maxItems"};
  return keywords;
}

std::string type_name(const json& value) {
  switch (value.type()) {
    case json::value_t::object: return "object";
    case json::value_t::array: return "array";
    case json::value_t::string: return "string";
    case json::value_t::boolean: return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "integer";
    case json::value_t::number_float: return "number";
    case json::value_t::null: return "null";
    default: return "unknown";
  }
}

bool has_type(const json& value, const std::string& type) {
  std::string actual = type_name(value);
  if (type == "number") return actual == "integer" || actual == "number";
  // JSON Schema: any number without a fractional part is an integer (1.0, 1e20); whether it
  // fits the field is for the reader of the field to say.
  if (type == "integer" && value.is_number_float())
    return std::isfinite(value.get<double>()) && value.get<double>() == std::floor(value.get<double>());
  return actual == type;
}

class Validator {
 public:
  explicit Validator(const JsoncDocument& document) : document_(document) {}

  void check(const json& schema, const json& value, const std::string& pointer) {
    if (schema.is_boolean()) {
      if (!schema.get<bool>()) fail(pointer, "is not allowed here");
      return;
    }
    for (const auto& item : schema.items()) {
      if (!known_keywords().count(item.key()))
        throw Error("cluster schema uses the unsupported keyword \"" + item.key() + "\"");
    }
    if (schema.contains("type")) {
      std::string type = schema["type"].get<std::string>();
      if (!has_type(value, type)) {
        fail(pointer, "must be " + std::string(type == "integer" || type == "array" || type == "object" ? "an " : "a ") +
                          type + ", not " + (value.is_null() ? "null" : type_name(value)));
        return;  // the other keywords assume the type
      }
    }
    if (schema.contains("enum")) {
      bool found = false;
      std::string choices;
      for (const auto& choice : schema["enum"]) {
        if (choice == value) found = true;
        if (!choices.empty()) choices += ", ";
        choices += choice.is_string() ? choice.get<std::string>() : choice.dump();
      }
      if (!found) fail(pointer, "must be one of " + choices + ", not " + value.dump());
    }
    if (schema.contains("pattern") && value.is_string()) {
      std::string pattern = schema["pattern"].get<std::string>();
      if (!std::regex_search(value.get<std::string>(), std::regex(pattern, std::regex::ECMAScript)))
        fail(pointer, value.dump() + " does not match " + pattern);
    }
    if (value.is_number()) {
      if (schema.contains("minimum") && value.get<double>() < schema["minimum"].get<double>())
        fail(pointer, "must be at least " + schema["minimum"].dump() + ", not " + value.dump());
      if (schema.contains("maximum") && value.get<double>() > schema["maximum"].get<double>())
        fail(pointer, "must be at most " + schema["maximum"].dump() + ", not " + value.dump());
    }
    if (value.is_array()) {
      if (schema.contains("minItems") && value.size() < schema["minItems"].get<std::size_t>())
        fail(pointer, "needs at least " + schema["minItems"].dump() + " item(s)");
      if (schema.contains("maxItems") && value.size() > schema["maxItems"].get<std::size_t>())
        fail(pointer, "allows at most " + schema["maxItems"].dump() + " item(s)");
      if (schema.contains("items")) {
        for (std::size_t i = 0; i < value.size(); ++i)
          check(schema["items"], value[i], pointer + "/" + std::to_string(i));
      }
    }
    if (value.is_object()) {
      if (schema.contains("required")) {
        for (const auto& name : schema["required"]) {
          if (!value.contains(name.get<std::string>()))
            fail(pointer, "missing required property \"" + name.get<std::string>() + "\"");
        }
      }
      const json* properties = schema.contains("properties") ? &schema["properties"] : nullptr;
      for (const auto& item : value.items()) {
        std::string child = pointer + "/" + json_pointer_token(item.key());
        if (properties != nullptr && properties->contains(item.key())) {
          check((*properties)[item.key()], item.value(), child);
        } else if (schema.contains("additionalProperties")) {
          const json& additional = schema["additionalProperties"];
          if (additional.is_boolean() && !additional.get<bool>()) {
            std::string known;
            if (properties != nullptr) {
              for (const auto& property : properties->items()) {
                if (!known.empty()) known += ", ";
                known += property.key();
              }
            }
            fail(child, "unknown property \"" + item.key() + "\"" + (known.empty() ? "" : " (expected one of: " + known + ")"));
          } else {
            check(additional, item.value(), child);
          }
        }
      }
    }
  }

  std::vector<SchemaViolation> take() { return std::move(violations_); }

 private:
  void fail(const std::string& pointer, std::string message) {
    violations_.push_back({pointer, document_.line_of(pointer), std::move(message)});
  }

  const JsoncDocument& document_;
  std::vector<SchemaViolation> violations_;
};

}  // namespace

std::string_view cluster_schema_text() { return embedded::cluster_schema; }

std::string cluster_schema_file_content() {
  std::string text(embedded::cluster_schema);
  static const std::string comment =
      "  \"$comment\": \"Podplane generated schema support file. Do not edit generated copies directly; update "
      "schemas/podplane.cluster.schema.json in the Podplane repository instead.\",\n";
  auto id = text.find("\n  \"$id\"");
  if (id == std::string::npos) return text;
  auto end = text.find('\n', id + 1);
  text.insert(end + 1, comment);
  return text;
}

std::vector<SchemaViolation> validate(const nlohmann::json& schema, const JsoncDocument& document) {
  Validator validator(document);
  validator.check(schema, document.value, "");
  auto violations = validator.take();
  std::stable_sort(violations.begin(), violations.end(),
                   [](const SchemaViolation& a, const SchemaViolation& b) { return a.line < b.line; });
  return violations;
}

void validate_or_throw(const nlohmann::json& schema, const JsoncDocument& document, std::string_view source_name) {
  auto violations = validate(schema, document);
  if (violations.empty()) return;
  std::string message = std::string(source_name) + " does not match podplane.cluster.schema.json:";
  for (const auto& violation : violations) {
    message += "\n  " + std::string(source_name) + ":" + std::to_string(violation.line) + ": " +
               display_path(violation.pointer) + ": " + violation.message;
  }
  throw Error(message);
}

}  // namespace podplane::generator
