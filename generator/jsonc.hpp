#pragma once
// JSON with comments (// and /* */), as podplane.cluster.jsonc is written. The value is
// parsed by nlohmann_json (ignore_comments); a small scanner of our own records the line of
// every value by JSON Pointer so that errors can name both the path and the line.
// Errors are podplane::Error with "<source>:<line>:<column>: …"; the input limits of
// base/input_limits.hpp apply (size, nesting, numbers beyond a double).
#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>  // whole: JsoncDocument holds a json by value

namespace podplane::generator {

struct JsoncDocument {
  nlohmann::json value;
  std::map<std::string, int> lines;  // JSON Pointer ("" for the root) → 1-based line of the value

  // The line of `pointer`, else of its nearest ancestor that has one.
  int line_of(const std::string& pointer) const;
};

[[nodiscard]] JsoncDocument parse_jsonc(std::string_view text, std::string_view source_name);

// One reference token of a JSON Pointer (RFC 6901): "~" → "~0", "/" → "~1".
std::string json_pointer_token(const std::string& key);

// "/cluster/pools/ingress" → "cluster.pools.ingress", "/a/0" → "a[0]": the form errors show.
std::string display_path(const std::string& pointer);

}  // namespace podplane::generator
