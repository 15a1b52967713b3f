#pragma once
// Validators for the numeric flags. CLI11 reports a failed one as "--flag: message", which
// main() turns into a usage error (exit 2): garbage and overflow never reach a command.
#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "base/error.hpp"
#include "bundle/create.hpp"
#include "cache/cosign_policy.hpp"

namespace podplane::cli {

// A count: decimal digits only (no sign, hex, octal or exponent), from `lowest` to `highest`;
// a transform (->transform), since it rewrites the text to canonical decimal.
inline CLI::Validator whole_number(std::uint64_t lowest, std::uint64_t highest) {
  std::string range = std::to_string(lowest) + " to " + std::to_string(highest);
  std::string shown = std::to_string(lowest) + " - " + std::to_string(highest);  // as CLI::Range shows it
  return CLI::Validator(
      [lowest, highest, range](std::string& text) -> std::string {
        std::string expected = "expected a whole number from " + range + ", got '" + text + "'";
        if (text.empty() || text.size() > 19 || text.find_first_not_of("0123456789") != std::string::npos) return expected;
        std::uint64_t value = std::stoull(text);
        if (value < lowest || value > highest) return expected;
        text = std::to_string(value);  // "010" is ten here, and must not become CLI11's octal eight
        return "";
      },
      "INT in [" + shown + "]");
}

// A size in bytes with an optional K, M, G or T suffix (bundle::parse_size), from `lowest` to
// `highest` bytes; rewritten to plain bytes for the option's integer target.
inline CLI::Validator size_in_bytes(std::uint64_t lowest, std::uint64_t highest) {
  return CLI::Validator(
      [lowest, highest](std::string& text) -> std::string {
        std::uint64_t value = 0;
        try {
          value = bundle::parse_size(text);
        } catch (const Error& error) {
          return error.what();
        }
        if (value < lowest || value > highest)
          return "size '" + text + "' out of range: expected " + std::to_string(lowest) + " to " + std::to_string(highest) +
                 " bytes";
        text = std::to_string(value);
        return "";
      },
      "SIZE");
}

// A duration with a d, h, m or s suffix (bundle::parse_duration), checked at parse time so
// that the error names the flag.
inline CLI::Validator duration() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        try {
          (void)bundle::parse_duration(text);
        } catch (const Error& error) {
          return error.what();
        }
        return "";
      },
      "DURATION");
}

// --authfile FILE of every command that talks to a container registry, as skopeo spells it.
inline CLI::Option* add_authfile_option(CLI::App& command, std::string& file) {
  return command
      .add_option("--authfile", file,
                  "Registry logins: an auths file as `skopeo login`/`docker login` write it (default: $REGISTRY_AUTH_FILE, "
                  "$XDG_RUNTIME_DIR/containers/auth.json, ~/.docker/config.json)")
      ->check(CLI::ExistingFile);
}

// --cosign-key FILE (repeatable) and the keyless flags, or --cosign-policy FILE, where images
// are fetched or imported: every image must carry a cosign signature that one of its keys, or
// keyless one of its identities, verifies (docs/images.md "Signed images", "Keyless signatures").
struct CosignArgs {
  std::vector<std::string> keys;
  std::string policy;
  std::string identity, identity_regexp, issuer, issuer_regexp, trusted_root;

  // Into the options of the command that fetches or imports.
  void apply(std::vector<std::filesystem::path>& cosign_keys, std::optional<std::filesystem::path>& cosign_policy,
             cache::KeylessFlags& keyless) const {
    cosign_keys.assign(keys.begin(), keys.end());
    if (!policy.empty()) cosign_policy = policy;
    keyless.identity = {identity, identity_regexp, issuer, issuer_regexp};
    if (!trusted_root.empty()) keyless.trusted_root = trusted_root;
  }
};

inline void add_cosign_options(CLI::App& command, CosignArgs& args) {
  auto* key = command
                  .add_option("--cosign-key", args.keys,
                              "Require every image to carry a cosign signature by this public key (PEM, ECDSA P-256, as "
                              "cosign.pub); repeatable: any one of the keys will do")
                  ->check(CLI::ExistingFile);
  auto* identity = command.add_option("--certificate-identity", args.identity,
                                      "Keyless: accept a signature whose Fulcio certificate names this identity (email or URI)");
  auto* identity_regexp = command
                              .add_option("--certificate-identity-regexp", args.identity_regexp,
                                          "Keyless: the same, as a regular expression matched anywhere in the identity")
                              ->excludes(identity);
  auto* issuer = command.add_option("--certificate-oidc-issuer", args.issuer,
                                    "Keyless: the OIDC issuer the certificate must name (https://accounts.google.com, …)");
  auto* issuer_regexp = command
                            .add_option("--certificate-oidc-issuer-regexp", args.issuer_regexp,
                                        "Keyless: the same, as a regular expression matched anywhere in the issuer")
                            ->excludes(issuer);
  auto* trusted_root = command
                           .add_option("--trusted-root", args.trusted_root,
                                       "Keyless: the sigstore trusted_root.json (Fulcio CAs, Rekor and CT log keys) to check "
                                       "certificates against, offline")
                           ->check(CLI::ExistingFile);
  command
      .add_option("--cosign-policy", args.policy,
                  "Which cosign keys or keyless identities each registry or repository needs (JSON; docs/images.md "
                  "\"Signing policy\")")
      ->check(CLI::ExistingFile)
      ->excludes(key)
      ->excludes(identity)
      ->excludes(identity_regexp)
      ->excludes(issuer)
      ->excludes(issuer_regexp)
      ->excludes(trusted_root);
}

}  // namespace podplane::cli
