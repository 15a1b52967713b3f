// Our HCL reader against HashiCorp's parser (gocheck hclparse) on a corpus of real-world
// constructs: whatever HashiCorp accepts we must read without error, and the literals we
// extract must be right.
#include <gtest/gtest.h>

#include "base/error.hpp"
#include "lockfile/hcl.hpp"
#include "tests/support/gocheck.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::test {
namespace {

const std::vector<std::string>& valid_corpus() {
  static const std::vector<std::string> corpus = {
      "",
      "a = 1",  // no final newline
      "# only a comment",
      "terraform {\n  required_providers {\n    aws = {\n      source  = \"hashicorp/aws\"\n      version = \">= 6.0\"\n    }\n  }\n}\n",
      "locals {\n  x = aws_instance.web[*].id\n  y = var.list[0].name\n  z = module.m.outputs[\"k\"]\n  w = foo.0.bar\n}\n",
      "locals {\n  s = \"%{ if var.x }yes%{ else }no%{ endif }\"\n  t = \"${var.a}-${\"nested ${var.b}\"}\"\n}\n",
      "locals {\n  h = <<-EOT\n    { \"json\": [1, 2, 3] }\n    ${jsonencode({ a = \"}\" })}\n  EOT\n  after = \"ok\"\n}\n",
      "locals {\n  c = (\n    var.a\n    ? \"x\"\n    : \"y\"\n  )\n}\n",
      "locals {\n  m = {\n    (var.key) = 1\n    \"q\"       = 2,\n    plain     = 3\n  }\n}\n",
      "locals {\n  f = [for i, v in var.l : v if i > 0]\n  g = { for k, v in var.m : k => v... }\n}\n",
      "locals {\n  comment_chars = \"# not // a /* comment\"\n}\n",
      "resource \"aws_instance\" \"web\" {\n  count = var.enabled ? 1 : 0\n  dynamic \"ebs\" {\n    for_each = var.disks\n    content {\n      size = ebs.value.size\n    }\n  }\n  lifecycle {\n    ignore_changes = [tags]\n  }\n}\n",
      "moved {\n  from = aws_instance.a\n  to   = aws_instance.b\n}\n",
      "locals {\n  n = [1e10, -1, 1.5, !true, 1 == 2, 3 != 4, 5 % 2, \"a\" == \"b\" && true || false]\n}\n",
      "locals {\n  trailing = [\n    \"a\",\n    \"b\",\n  ]\n  obj = {\n    a = 1,\n    b = 2,\n  }\n}\n",
      "empty {}\nlabels \"a\" b \"c\" {\n}\n",
      "/* block\ncomment */ a = 1 // tail\nb = /* mid */ 2 # tail\n",
      "provider \"aws\" {\n  alias  = \"west\"\n  region = \"us-west-2\"\n  default_tags { tags = { Env = \"x\" } }\n}\n",
      "module \"m\" {\n  source    = \"./x\"\n  providers = { aws = aws.west }\n  depends_on = [module.n]\n}\n",
      "variable \"v\" {\n  type = object({\n    a = optional(string, \"d\")\n    b = list(map(number))\n  })\n  validation {\n    condition     = length(var.v.a) > 0\n    error_message = \"Must be set.\"\n  }\n}\n",
      "output \"o\" {\n  value = try(local.x, null)\n  sensitive = true\n}\n",
      "locals {\n  list_of_heredocs = [\n    <<EOT\nfirst ]\nEOT\n    ,\n    \"second\",\n  ]\n}\n",
      "a = \"\\u00e9\\U0001F600\\\\\\\"\\n\\t$${lit}%%{lit}\"\n",
      "\xc3\xa9t\xc3\xa9 = 1\n",
      "a = 1\r\nb {\r\n  c = \"x\"\r\n}\r\n",
  };
  return corpus;
}

TEST(HclCorpus, EverythingHashiCorpAcceptsWeRead) {
  TempDir dir;
  int checked = 0;
  for (std::size_t i = 0; i < valid_corpus().size(); ++i) {
    const std::string& text = valid_corpus()[i];
    std::string name = "case" + std::to_string(i) + ".tf";
    auto go = gocheck_hclparse_text(dir.path(), name, text);
    EXPECT_EQ(go.exit_code, 0) << "HashiCorp rejects corpus case " << i << ":\n" << text << "\n" << go.err;
    try {
      (void)lockfile::hcl::parse(text, name);
    } catch (const Error& error) {
      ADD_FAILURE() << "we reject corpus case " << i << ":\n" << text << "\n" << error.what();
    }
    ++checked;
  }
  EXPECT_GE(checked, 25);
}

TEST(HclCorpus, LiteralsAroundHeredocsAndTemplatesStayIntact) {
  auto body = lockfile::hcl::parse(valid_corpus()[6], "t");
  const auto* locals = body.blocks_of_type("locals").at(0);
  ASSERT_NE(locals->body.attribute("after"), nullptr);
  EXPECT_EQ(*locals->body.attribute("after")->value.as_string(), "ok");
  auto list = lockfile::hcl::parse(valid_corpus()[21], "t");
  const auto& items = std::get<lockfile::hcl::Tuple>(list.blocks.at(0).body.attribute("list_of_heredocs")->value.data);
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(*items[1].as_string(), "second");
}

TEST(HclCorpus, WhatHashiCorpRejectsWeRejectToo) {
  TempDir dir;
  const std::vector<std::string> invalid = {
      "a = \"unterminated\n",  "block {\n  a = 1\n", "a = 1\n}\n",        "a = f(1, [2)\n",
      "/* open\n",             "a = 1\na = 2\n",      "b \"x\" = 1\n",      "a = <<EOT\nno end\n",
      "a { } b = 1\n",         "a = \"\\q\"\n",       "= 1\n",               "x {\n  y = (1\n}\n",
  };
  for (std::size_t i = 0; i < invalid.size(); ++i) {
    std::string name = "bad" + std::to_string(i) + ".tf";
    EXPECT_NE(gocheck_hclparse_text(dir.path(), name, invalid[i]).exit_code, 0) << invalid[i];
    EXPECT_THROW((void)lockfile::hcl::parse(invalid[i], name), Error) << invalid[i];
  }
}

}  // namespace
}  // namespace podplane::test
