// base/pkcs11.hpp: RFC 7512 URIs as podplane reads them, and messages that never show the PIN.
#include <gtest/gtest.h>

#include "base/error.hpp"
#include "base/pkcs11.hpp"

namespace podplane::pkcs11 {
namespace {

TEST(Pkcs11Uri, ReadsTheTokenTheKeyAndThePinPercentDecoded) {
  auto uri = Uri::parse("pkcs11:token=site%20hsm;object=bundle-key;id=%01%ff;type=private?pin-value=12%2034&module-path=/m.so");
  EXPECT_EQ(uri.token, "site hsm");
  EXPECT_EQ(uri.object, "bundle-key");
  EXPECT_EQ(uri.id, std::string("\x01\xff", 2));
  EXPECT_EQ(uri.pin_value, "12 34");
  EXPECT_EQ(uri.module_path, "/m.so");
  EXPECT_EQ(uri.str(), "pkcs11:token=site%20hsm;object=bundle-key;id=%01%ff?pin-value=…");
}

TEST(Pkcs11Uri, RefusesWhatItCannotUseNamingTheAttribute) {
  auto error_of = [](const std::string& text) {
    try {
      (void)Uri::parse(text);
    } catch (const Error& error) {
      return std::string(error.what());
    }
    return std::string("(parsed)");
  };
  EXPECT_NE(error_of("pkcs11:token=t;slot-id=1;object=k").find("\"slot-id\" is not one podplane reads"), std::string::npos);
  EXPECT_NE(error_of("pkcs11:token=t").find("names no key"), std::string::npos);
  EXPECT_NE(error_of("pkcs11:object=k%2").find("% that is not followed by two hex digits"), std::string::npos);
  EXPECT_NE(error_of("pkcs11:object=k;type=public").find("type=private"), std::string::npos);
  EXPECT_NE(error_of("pkcs11:object=k?pin-value=1&pin-source=f").find("both pin-value and pin-source"), std::string::npos);
  EXPECT_EQ(error_of("pkcs11:object=k?pin-value=secret-pin&x=1").find("secret-pin"), std::string::npos);
}

}  // namespace
}  // namespace podplane::pkcs11
