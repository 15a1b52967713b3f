// The pure parts of the S3 client: SigV4's URI encoding (libcurl 7.88 signs the path and query
// as written, so they must already be in canonical form), the reading of S3's XML answers, and
// the standard AWS variables. The requests themselves run against a real radosgw in
// tests/mirror/s3_export_test.cpp.
#include <gtest/gtest.h>

#include "base/error.hpp"
#include "net/s3_client.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::net {
namespace {

using podplane::test::ScopedEnv;

TEST(S3UriEncode, KeepsOnlyUnreservedBytesAndSlashesWhenAsked) {
  EXPECT_EQ(s3_uri_encode("v1/mirror/a_b-c.d~e/x.zip", true), "v1/mirror/a_b-c.d~e/x.zip");
  EXPECT_EQ(s3_uri_encode("v1/mirror", false), "v1%2Fmirror");
  // The safe segment characters that are not unreserved: encoded, upper-case hex.
  EXPECT_EQ(s3_uri_encode("1.2.0+build@x=y,z", true), "1.2.0%2Bbuild%40x%3Dy%2Cz");
  EXPECT_EQ(s3_uri_encode("a b%\xc3\xa9", true), "a%20b%25%C3%A9");
}

TEST(S3XmlTexts, DecodesEntitiesOfEachElementInOrder) {
  const std::string xml =
      R"(<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">)"
      R"(<Contents><Key>a&amp;b/&lt;Size&gt;1&lt;/Size&gt;</Key><ETag>&quot;0cc1&quot;</ETag><Size>7</Size></Contents>)"
      R"(<Contents><Key>caf&#233;&#x2F;x</Key><ETag>&quot;d4-2&quot;</ETag><Size>12</Size></Contents>)"
      R"(<IsTruncated>false</IsTruncated></ListBucketResult>)";
  EXPECT_EQ(s3_xml_texts(xml, "Key"), (std::vector<std::string>{"a&b/<Size>1</Size>", "caf\xc3\xa9/x"}));
  EXPECT_EQ(s3_xml_texts(xml, "ETag"), (std::vector<std::string>{"\"0cc1\"", "\"d4-2\""}));
  // A key holding escaped markup does not turn into an element of its own.
  EXPECT_EQ(s3_xml_texts(xml, "Size"), (std::vector<std::string>{"7", "12"}));
  EXPECT_EQ(s3_xml_texts(xml, "IsTruncated"), std::vector<std::string>{"false"});
  EXPECT_TRUE(s3_xml_texts(xml, "Code").empty());
  // Unknown or malformed references stay as written; an unclosed element is not read.
  EXPECT_EQ(s3_xml_texts("<Code>&bogus; &#xZZ; &#0; &</Code><Message>cut", "Code"), std::vector<std::string>{"&bogus; &#xZZ; &#0; &"});
  EXPECT_TRUE(s3_xml_texts("<Message>cut", "Message").empty());
}

TEST(S3Config, ReadsTheStandardVariables) {
  ScopedEnv key("AWS_ACCESS_KEY_ID", "AKID"), secret("AWS_SECRET_ACCESS_KEY", "SECRET"), token("AWS_SESSION_TOKEN", std::nullopt);
  {
    ScopedEnv endpoint("AWS_ENDPOINT_URL", "http://rgw.site.internal:7480/"), s3("AWS_ENDPOINT_URL_S3", std::nullopt);
    ScopedEnv region("AWS_REGION", std::nullopt), fallback("AWS_DEFAULT_REGION", "eu-central-1");
    auto config = S3Config::from_environment();
    EXPECT_EQ(config.endpoint, "http://rgw.site.internal:7480");
    EXPECT_EQ(config.region, "eu-central-1");
    EXPECT_EQ(config.access_key_id, "AKID");
    EXPECT_EQ(config.secret_access_key, "SECRET");
  }
  {
    // The service's own variable wins over the general one; AWS's endpoint without either.
    ScopedEnv endpoint("AWS_ENDPOINT_URL", "http://general:1"), s3("AWS_ENDPOINT_URL_S3", "https://s3.site:9000");
    ScopedEnv region("AWS_REGION", "site-1");
    EXPECT_EQ(S3Config::from_environment().endpoint, "https://s3.site:9000");
  }
  {
    ScopedEnv endpoint("AWS_ENDPOINT_URL", std::nullopt), s3("AWS_ENDPOINT_URL_S3", std::nullopt);
    ScopedEnv region("AWS_REGION", std::nullopt), fallback("AWS_DEFAULT_REGION", std::nullopt);
    auto config = S3Config::from_environment();
    EXPECT_EQ(config.region, "us-east-1");
    EXPECT_EQ(config.endpoint, "https://s3.us-east-1.amazonaws.com");
  }
}

TEST(S3Config, MissingOrMalformedVariablesAreUsageErrorsNamingThem) {
  ScopedEnv s3("AWS_ENDPOINT_URL_S3", std::nullopt);
  {
    ScopedEnv key("AWS_ACCESS_KEY_ID", "AKID"), secret("AWS_SECRET_ACCESS_KEY", std::nullopt);
    try {
      (void)S3Config::from_environment();
      FAIL() << "no secret accepted";
    } catch (const UsageError& error) {
      EXPECT_NE(error.message().find("AWS_SECRET_ACCESS_KEY"), std::string::npos) << error.message();
    }
  }
  ScopedEnv key("AWS_ACCESS_KEY_ID", "AKID"), secret("AWS_SECRET_ACCESS_KEY", "SECRET");
  for (const char* bad : {"rgw.site.internal:7480", "ftp://rgw", "http://user:pw@rgw", "http://rgw/?x=1"}) {
    ScopedEnv endpoint("AWS_ENDPOINT_URL", bad);
    try {
      (void)S3Config::from_environment();
      ADD_FAILURE() << bad << " accepted";
    } catch (const UsageError& error) {
      EXPECT_NE(error.message().find("AWS_ENDPOINT_URL is not an endpoint URL"), std::string::npos) << error.message();
      EXPECT_NE(error.message().find(redact_url(bad)), std::string::npos) << error.message();
      EXPECT_EQ(error.message().find(":pw@"), std::string::npos) << "a password was printed: " << error.message();
    }
  }
}

}  // namespace
}  // namespace podplane::net
