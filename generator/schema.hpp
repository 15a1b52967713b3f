#pragma once
// The cluster config's JSON Schema (embedded at build time) and a validator for the subset
// of draft 2020-12 that schema uses: type, required, properties, additionalProperties
// (false or a schema), enum, pattern, minimum, maximum, items, minItems, maxItems.
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "generator/jsonc.hpp"

namespace podplane::generator {

// The schema text exactly as shipped in the binary.
std::string_view cluster_schema_text();
// The copy written beside the config: the shipped text with the "generated copy" $comment
// inserted after the $id line, as the real Podplane writes it.
std::string cluster_schema_file_content();

struct SchemaViolation {
  std::string pointer;  // JSON Pointer of the offending value
  int line = 0;
  std::string message;  // "must be one of aws, google", …
};

// Every violation, in document order. An unsupported keyword in the schema is an Error.
[[nodiscard]] std::vector<SchemaViolation> validate(const nlohmann::json& schema, const JsoncDocument& document);

// Throws podplane::Error listing each violation as "<source>:<line>: <path>: <message>".
void validate_or_throw(const nlohmann::json& schema, const JsoncDocument& document, std::string_view source_name);

}  // namespace podplane::generator
