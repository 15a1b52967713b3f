// go-plugin's automatic mutual TLS, server side: the engine passes its own certificate in
// PLUGIN_CLIENT_CERT and trusts only the certificate the plugin prints in its handshake line;
// real engines speak TLS to a plugin whenever they passed a client certificate.
#pragma once

#include <string>

namespace podplane::tfplugin {

struct ServerIdentity {
  std::string certificate_pem;
  std::string key_pem;
  std::string handshake_field;  // the certificate's DER in unpadded base64, as go-plugin reads it
};

// A fresh self-signed certificate for "localhost" (ECDSA P-521, as go-plugin makes its own).
// Throws std::runtime_error with OpenSSL's reason when a step fails.
[[nodiscard]] ServerIdentity make_server_identity();

}  // namespace podplane::tfplugin
