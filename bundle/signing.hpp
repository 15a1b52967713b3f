#pragma once
// The Ed25519 keys of bundle manifests: base/ed25519.hpp (key files, keys in a PKCS#11 token),
// which `deps tools --sign` uses too for podplane's release signatures; named here as the
// bundle code has always named them.
#include "base/ed25519.hpp"

namespace podplane::bundle {

using ed25519::generate_key_pair;
using ed25519::KeyPairFiles;
using ed25519::MakeInToken;
using ed25519::PublicKey;
using ed25519::SigningKey;
using ed25519::token_public_key;

}  // namespace podplane::bundle
