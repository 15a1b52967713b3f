#include "lockfile/lock_file.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "base/error.hpp"
#include "base/input_limits.hpp"
#include "lockfile/hcl.hpp"
#include "lockfile/provider_names.hpp"
#include "lockfile/version.hpp"

namespace podplane::lockfile {
namespace {

std::string at(std::string_view source_name, const hcl::SourcePos& pos) {
  return std::string(source_name) + ":" + std::to_string(pos.line) + ":" + std::to_string(pos.column) + ": ";
}

// A string-valued attribute, or an Error naming where the value is not a literal string.
std::string string_attribute(const hcl::Attribute& attribute, std::string_view source_name) {
  const std::string* text = attribute.value.as_string();
  if (text == nullptr) {
    throw Error(at(source_name, attribute.value.pos) + "\"" + attribute.name + "\" must be a literal string");
  }
  return *text;
}

// getproviders.ParseHash: "scheme:value", the scheme at least one character.
bool is_hash_string(std::string_view hash) {
  auto colon = hash.find(':');
  return colon != std::string_view::npos && colon > 0;
}

ProviderAddress normalized_address(std::string_view text) {
  // An empty default host makes the two-part form fail: the lock demands the full address.
  auto parts = std::count(text.begin(), text.end(), '/');
  if (parts != 2) throw Error("not a fully-qualified provider address HOST/NAMESPACE/TYPE");
  return ProviderAddress::parse(text, "");
}

ProviderLock decode_provider(const hcl::Block& block, std::string_view source_name) {
  if (block.labels.size() != 1) {
    throw Error(at(source_name, block.pos) + "a provider block needs exactly one label, the provider address");
  }
  ProviderLock lock;
  lock.address = block.labels[0];
  try {
    if (normalized_address(lock.address).str() != lock.address) throw Error("not in normalized form");
  } catch (const Error& error) {
    throw Error(at(source_name, block.pos) + "non-normalized provider source address \"" + lock.address + "\" (" +
                error.what() + "); expected e.g. \"registry.opentofu.org/hashicorp/aws\"");
  }
  if (!block.body.blocks.empty()) {
    const hcl::Block& nested = block.body.blocks.front();
    throw Error(at(source_name, nested.pos) + "unsupported block type \"" + nested.type + "\" in provider lock");
  }
  bool have_version = false;
  for (const auto& attribute : block.body.attributes) {
    if (attribute.name == "version") {
      lock.version = string_attribute(attribute, source_name);
      std::string canonical;
      try {
        canonical = Version::parse(lock.version).str();
      } catch (const Error& error) {
        throw Error(at(source_name, attribute.value.pos) + "invalid provider version: " + error.what());
      }
      if (canonical != lock.version) {
        throw Error(at(source_name, attribute.value.pos) +
                    mismatch_message("provider version is not in canonical form", canonical, lock.version));
      }
      have_version = true;
    } else if (attribute.name == "constraints") {
      lock.constraints = string_attribute(attribute, source_name);
      std::string canonical;
      try {
        canonical = Constraints::parse(lock.constraints).canonical();
      } catch (const Error& error) {
        throw Error(at(source_name, attribute.value.pos) + "invalid version constraints: " + error.what());
      }
      if (canonical != lock.constraints) {
        throw Error(at(source_name, attribute.value.pos) +
                    mismatch_message("version constraints are not in canonical form", canonical, lock.constraints));
      }
    } else if (attribute.name == "hashes") {
      const auto* items = std::get_if<hcl::Tuple>(&attribute.value.data);
      if (items == nullptr) throw Error(at(source_name, attribute.value.pos) + "\"hashes\" must be a list of strings");
      if (items->empty()) {
        throw Error(at(source_name, attribute.value.pos) +
                    "\"hashes\" must either be omitted or include at least one hash value");
      }
      for (const auto& item : *items) {
        const std::string* hash = item.as_string();
        if (hash == nullptr) throw Error(at(source_name, item.pos) + "each hash must be a literal string");
        if (!is_hash_string(*hash)) {
          throw Error(at(source_name, item.pos) + "invalid provider hash string \"" + *hash +
                      "\": expected SCHEME:VALUE, e.g. h1:… or zh:…");
        }
        lock.hashes.push_back(*hash);
      }
    } else {
      throw Error(at(source_name, attribute.pos) + "unsupported argument \"" + attribute.name + "\" in provider lock");
    }
  }
  if (!have_version) throw Error(at(source_name, block.pos) + "provider lock \"" + lock.address + "\" has no version");
  return lock;
}

}  // namespace

const ProviderLock* LockFile::find(std::string_view address) const {
  for (const auto& provider : providers) {
    if (provider.address == address) return &provider;
  }
  return nullptr;
}

LockFile parse_lock_file(std::string_view text, std::string_view source_name) {
  hcl::Body body = hcl::parse(text, source_name);
  if (!body.attributes.empty()) {
    const auto& attribute = body.attributes.front();
    throw Error(at(source_name, attribute.pos) + "unsupported argument \"" + attribute.name + "\" in a lock file");
  }
  LockFile lock;
  std::map<std::string, hcl::SourcePos> seen;
  for (const auto& block : body.blocks) {
    if (block.type == "module") continue;  // the engines only warn about these
    if (block.type != "provider") {
      throw Error(at(source_name, block.pos) + "unsupported block type \"" + block.type + "\" in a lock file");
    }
    ProviderLock provider = decode_provider(block, source_name);
    if (auto previous = seen.find(provider.address); previous != seen.end()) {
      throw Error(at(source_name, block.pos) + "duplicate provider lock for \"" + provider.address +
                  "\" (first at line " + std::to_string(previous->second.line) + ")");
    }
    seen.emplace(provider.address, block.pos);
    lock.providers.push_back(std::move(provider));
  }
  return lock;
}

LockFile read_lock_file(const std::filesystem::path& file) {
  return parse_lock_file(read_file_within_limits(file, "lock file"), file.string());
}

std::string render_lock_file(const LockFile& lock, Engine engine) {
  struct Entry {
    ProviderAddress address;
    const ProviderLock* lock;
  };
  std::vector<Entry> entries;
  for (const auto& provider : lock.providers) {
    ProviderAddress address;
    try {
      address = normalized_address(provider.address);
    } catch (const Error& error) {
      throw Error("cannot write lock entry \"" + provider.address + "\": " + error.what());
    }
    if (address.str() != provider.address) {
      throw Error(mismatch_message("cannot write a non-normalized provider address", address.str(), provider.address));
    }
    entries.push_back(Entry{std::move(address), &provider});
  }
  // Sorted by (hostname, namespace, type), which is not the order of the joined strings.
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.address.host, a.address.ns, a.address.type) < std::tie(b.address.host, b.address.ns, b.address.type);
  });
  for (std::size_t i = 1; i < entries.size(); ++i) {
    if (entries[i].address == entries[i - 1].address) {
      throw Error("cannot write two lock entries for " + entries[i].address.str());
    }
  }

  std::string out;
  out += std::string("# This file is maintained automatically by \"") +
         std::string(engine_name(engine)) + " init\".\n";
  out += "# Manual edits may be lost in future updates.\n";
  for (const auto& entry : entries) {
    const ProviderLock& provider = *entry.lock;
    std::string version = Version::parse(provider.version).str();
    std::string constraints = Constraints::parse(provider.constraints).canonical();
    std::set<std::string> hashes(provider.hashes.begin(), provider.hashes.end());
    for (const auto& hash : hashes) {
      if (!is_hash_string(hash)) throw Error("cannot write invalid hash \"" + hash + "\" for " + provider.address);
    }
    out += "\nprovider " + hcl::quote(provider.address) + " {\n";
    // hclwrite aligns "=" across the run of single-line attributes: version and constraints.
    if (constraints.empty()) {
      out += "  version = " + hcl::quote(version) + "\n";
    } else {
      out += "  version     = " + hcl::quote(version) + "\n";
      out += "  constraints = " + hcl::quote(constraints) + "\n";
    }
    if (!hashes.empty()) {
      out += "  hashes = [\n";
      for (const auto& hash : hashes) out += "    " + hcl::quote(hash) + ",\n";
      out += "  ]\n";
    }
    out += "}\n";
  }
  return out;
}

}  // namespace podplane::lockfile
