// The HCL subset reader: literals, skipped expressions, comments, heredocs, and
// file:line:column errors.
#include "lockfile/hcl.hpp"

#include <gtest/gtest.h>

#include "base/error.hpp"

namespace podplane::lockfile::hcl {
namespace {

std::string error_of(std::string_view text) {
  try {
    (void)parse(text, "test.hcl");
  } catch (const Error& error) {
    return error.what();
  }
  return "<no error>";
}

TEST(Hcl, BlocksLabelsAndLiteralAttributes) {
  auto body = parse(R"(
top = "value"
n = 42
f = -1.5e3
yes = true
nothing = null
block "one" two {
  list = ["a", 1, false]
  obj = { a = "x", "b" = 2
    c: 3 }
  inner { x = 1 }
}
)",
                    "t.hcl");
  ASSERT_EQ(body.attributes.size(), 5u);
  EXPECT_EQ(*body.attribute("top")->value.as_string(), "value");
  EXPECT_EQ(body.attribute("top")->pos.line, 2);
  EXPECT_EQ(std::get<double>(body.attribute("n")->value.data), 42.0);
  EXPECT_EQ(std::get<double>(body.attribute("f")->value.data), -1500.0);
  EXPECT_EQ(std::get<bool>(body.attribute("yes")->value.data), true);
  EXPECT_TRUE(std::holds_alternative<std::nullptr_t>(body.attribute("nothing")->value.data));
  auto blocks = body.blocks_of_type("block");
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_EQ(blocks[0]->labels, (std::vector<std::string>{"one", "two"}));
  EXPECT_EQ(blocks[0]->pos.line, 7);
  const auto& list = std::get<Tuple>(blocks[0]->body.attribute("list")->value.data);
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(*list[0].as_string(), "a");
  const auto& obj = std::get<Object>(blocks[0]->body.attribute("obj")->value.data);
  ASSERT_EQ(obj.size(), 3u);
  EXPECT_EQ(obj[1].key, "b");
  EXPECT_EQ(obj[2].key, "c");
  ASSERT_EQ(blocks[0]->body.blocks_of_type("inner").size(), 1u);
}

TEST(Hcl, StringEscapes) {
  auto body = parse(R"(s = "a\"b\\c\nd\te\u00e9\U0001F600$${x}%%{y}")", "t");
  EXPECT_EQ(*body.attribute("s")->value.as_string(), "a\"b\\c\nd\te\xc3\xa9\xf0\x9f\x98\x80${x}%{y}");
}

TEST(Hcl, ExpressionsAreKeptAsRawText) {
  auto body = parse(R"HCL(
a = var.region
b = "prefix-${var.name}-${join(",", ["x", "}"])}"
c = length(local.list) > 0 ? { for k, v in local.m : k => v } : {}
d = [for s in var.list : upper(s)]
e = [
  "literal",
  local.ref,
]
f = <<-EOT
  heredoc with } ] ) " and ${interp}
    EOT
g = <<EOF
x = "not an attribute"
EOF
h = 1 + 2
)HCL",
                    "t");
  EXPECT_EQ(std::get<Expression>(body.attribute("a")->value.data).text, "var.region");
  EXPECT_EQ(std::get<Expression>(body.attribute("b")->value.data).text,
            R"("prefix-${var.name}-${join(",", ["x", "}"])}")");
  EXPECT_EQ(std::get<Expression>(body.attribute("c")->value.data).text,
            "length(local.list) > 0 ? { for k, v in local.m : k => v } : {}");
  EXPECT_TRUE(std::holds_alternative<Expression>(body.attribute("d")->value.data));
  const auto& e = std::get<Tuple>(body.attribute("e")->value.data);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(std::get<Expression>(e[1].data).text, "local.ref");
  EXPECT_NE(std::get<Expression>(body.attribute("f")->value.data).text.find("heredoc with"), std::string::npos);
  EXPECT_TRUE(std::holds_alternative<Expression>(body.attribute("g")->value.data));
  EXPECT_EQ(body.attribute("x"), nullptr);
  EXPECT_EQ(std::get<Expression>(body.attribute("h")->value.data).text, "1 + 2");
  EXPECT_EQ(body.attributes.size(), 8u);
}

TEST(Hcl, AllThreeCommentStyles) {
  auto body = parse(R"(
# hash comment with "quote and {
// slash comment }
/* block comment
   spanning = "lines" { */
a = "x" # trailing
b = /* inline */ "y" // trailing
)",
                    "t");
  EXPECT_EQ(body.attributes.size(), 2u);
  EXPECT_EQ(*body.attribute("b")->value.as_string(), "y");
}

// A .tf a hostile root links to a secret file: the error says where, never what.
TEST(Hcl, ErrorsQuoteNoNameOrValueOfTheFile) {
  for (const std::string secret : {"ghp_SECRET0token1\n", "ghp_SECRET0token1 x\n", "ghp_SECRET0token1 =\n", "a = 1\nghp_SECRET0token1 = 2\nghp_SECRET0token1 = 3\n",
                                   "a = \"\\qSECRET\"\n", "9SECRET\n"}) {
    auto error = error_of(secret);
    EXPECT_EQ(error.rfind("test.hcl:", 0), 0u) << error;
    EXPECT_EQ(error.find("SECRET"), std::string::npos) << error;
    EXPECT_EQ(error.find("ghp"), std::string::npos) << error;
  }
}

TEST(Hcl, CrlfAndByteOrderMark) {
  auto body = parse("\xEF\xBB\xBF" "a = \"x\"\r\nb { c = 1 }\r\n", "t");
  EXPECT_EQ(*body.attribute("a")->value.as_string(), "x");
  EXPECT_EQ(body.blocks.size(), 1u);
}

TEST(Hcl, ErrorsCarryFileLineColumn) {
  EXPECT_EQ(error_of("a = \"x\"\nb = \"unterminated\n"), "test.hcl:2:5: unterminated string: this quote has no closing quote on its line");
  EXPECT_NE(error_of("block {\n  a = 1\n").find("test.hcl:1:7: unclosed block"), std::string::npos);
  EXPECT_NE(error_of("a = 1\n}\n").find("test.hcl:2:1: unexpected \"}\""), std::string::npos);
  EXPECT_NE(error_of("a = 1\na = 2\n").find("test.hcl:2:1: attribute redefined (first defined at line 1)"), std::string::npos);
  EXPECT_NE(error_of("a\n").find("test.hcl:1:2: expected \"=\" or \"{\""), std::string::npos);
  EXPECT_NE(error_of("a = \n").find("test.hcl:1:5: expected a value"), std::string::npos);
  EXPECT_NE(error_of("a { } x = 1\n").find("test.hcl:1:7: expected a newline"), std::string::npos);
  EXPECT_NE(error_of("a = f(1, [2)\n").find("test.hcl:1:12: mismatched"), std::string::npos);
  EXPECT_NE(error_of("a = (1 + 2\n").find("test.hcl:1:5: unclosed bracket"), std::string::npos);
  EXPECT_NE(error_of("/* open\n").find("test.hcl:1:1: unterminated comment"), std::string::npos);
  EXPECT_NE(error_of("a = <<EOT\nbody\n").find("test.hcl:1:5: unterminated heredoc"), std::string::npos);
  EXPECT_NE(error_of("a = \"\\q\"\n").find("test.hcl:1:6: invalid escape"), std::string::npos);
  EXPECT_NE(error_of("3 = 1\n").find("test.hcl:1:1: expected an attribute or block name"), std::string::npos);
}

TEST(Hcl, QuoteRoundTrips) {
  EXPECT_EQ(quote("plain"), "\"plain\"");
  EXPECT_EQ(quote("a\"b\\c\n\t${x}%{y}$z\x01"), R"("a\"b\\c\n\t$${x}%%{y}$z\u0001")");
  EXPECT_EQ(quote("/home/\xc3\xa9t\xc3\xa9"), "\"/home/\xc3\xa9t\xc3\xa9\"");
  for (std::string text : {"plain", "a\"b\\c\n\t${x}%{y}$z", "\r\x7f", "h1:abc+/="}) {
    auto body = parse("v = " + quote(text) + "\n", "t");
    EXPECT_EQ(*body.attribute("v")->value.as_string(), text);
  }
}

}  // namespace
}  // namespace podplane::lockfile::hcl
