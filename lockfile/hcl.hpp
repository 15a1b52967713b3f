#pragma once
// A reader for the subset of HCL (native syntax) that podplane needs: blocks with labels,
// attributes whose values are literals (strings, numbers, bools, null), tuples and objects
// of literals. Any other expression (references, function calls, conditionals, for
// expressions, templates with interpolation, heredocs) is skipped and kept as its raw text,
// so that .tf files parse whatever else they contain. All three comment styles are skipped.
// Errors are podplane::Error with "file:line:column: message"; text larger than the limits, or
// nested deeper (blocks, brackets, template sequences), is such an error too.
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/input_limits.hpp"

namespace podplane::lockfile::hcl {

struct SourcePos {
  int line = 1;    // 1-based
  int column = 1;  // 1-based, in bytes
};

struct Value;
struct Member;
using Tuple = std::vector<Value>;
using Object = std::vector<Member>;  // in source order

// An expression that is not a literal: kept as source text, never evaluated.
struct Expression {
  std::string text;
};

struct Value {
  std::variant<std::nullptr_t, bool, double, std::string, Tuple, Object, Expression> data;
  SourcePos pos;

  bool is_string() const { return std::holds_alternative<std::string>(data); }
  const std::string* as_string() const { return std::get_if<std::string>(&data); }
};

// One key = value of an object. A struct rather than std::pair: a pair of a still incomplete
// Value inside Value's own variant is rejected by clang.
struct Member {
  std::string key;
  Value value;
};

struct Attribute {
  std::string name;
  Value value;
  SourcePos pos;
};

struct Block;
struct Body {
  std::vector<Attribute> attributes;
  std::vector<Block> blocks;

  const Attribute* attribute(std::string_view name) const;
  std::vector<const Block*> blocks_of_type(std::string_view type) const;
};

struct Block {
  std::string type;
  std::vector<std::string> labels;
  Body body;
  SourcePos pos;
};

// Parses a whole file. `source_name` prefixes every error.
[[nodiscard]] Body parse(std::string_view text, std::string_view source_name,
                         const InputLimits& limits = kDefaultInputLimits);

// Go-style quoted string literal, as hclwrite and the engines emit it.
std::string quote(std::string_view text);

}  // namespace podplane::lockfile::hcl
