#include "cache/git_refs.hpp"

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/input_limits.hpp"

namespace podplane::cache {

namespace {

using json = nlohmann::json;

std::string kind_name(GitRef::Kind kind) {
  switch (kind) {
    case GitRef::Kind::tag: return "tag";
    case GitRef::Kind::branch: return "branch";
    case GitRef::Kind::commit: return "commit";
  }
  return "tag";
}

bool is_object_id(const std::string& text, std::size_t length) {
  return text.size() == length && text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// The rules of git check-ref-format a tag or branch name must meet, and what would make one
// unsafe on a command line or in a path: no leading '-', no component that is empty, starts
// with '.' or ends with ".lock", no "..", "@{", space or control character.
bool is_ref_name(const std::string& name) {
  if (name.empty() || name.size() > 255 || name.front() == '-' || name.back() == '.') return false;
  if (name.find("..") != std::string::npos || name.find("@{") != std::string::npos) return false;
  for (unsigned char c : name)
    if (c <= 0x20 || c == 0x7f || c == '~' || c == '^' || c == ':' || c == '?' || c == '*' || c == '[' || c == '\\')
      return false;
  std::size_t start = 0;
  while (true) {
    const std::size_t slash = name.find('/', start);
    const std::string component = name.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (component.empty() || component.front() == '.' || component.ends_with(".lock")) return false;
    if (slash == std::string::npos) return true;
    start = slash + 1;
  }
}

}  // namespace

std::string GitRef::refname() const {
  switch (kind) {
    case Kind::tag: return "refs/tags/" + name;
    case Kind::branch: return "refs/heads/" + name;
    case Kind::commit: return "refs/heads/podplane/commit-" + commit;
  }
  return "";
}

std::string git_refs_document(const GitRef& ref) {
  json doc = {{"ref", ref.name},
              {"ref_kind", kind_name(ref.kind)},
              {"commit", ref.commit},
              {"shallow", ref.shallow},
              {"object_format", ref.object_format}};
  return doc.dump(2) + "\n";
}

GitRef parse_git_refs_document(const std::string& text, const std::string& where) {
  json doc = parse_json_within_limits(text, where);
  auto field = [&](const char* name) -> std::string {
    if (!doc.is_object() || !doc.contains(name) || !doc[name].is_string())
      throw Error(where + ": the git refs document has no string \"" + name + "\"");
    return doc[name].get<std::string>();
  };
  GitRef ref;
  ref.name = field("ref");
  ref.commit = field("commit");
  ref.object_format = field("object_format");
  const std::string kind = field("ref_kind");
  if (kind == "tag") ref.kind = GitRef::Kind::tag;
  else if (kind == "branch") ref.kind = GitRef::Kind::branch;
  else if (kind == "commit") ref.kind = GitRef::Kind::commit;
  else throw Error(where + ": unknown ref_kind \"" + kind + "\" (expected tag, branch or commit)");
  std::size_t id_length = 0;
  if (ref.object_format == "sha1") id_length = 40;
  else if (ref.object_format == "sha256") id_length = 64;
  else throw Error(where + ": unknown object_format \"" + ref.object_format + "\" (expected sha1 or sha256)");
  if (!is_object_id(ref.commit, id_length))
    throw Error(where + ": commit is not a " + std::to_string(id_length) + "-digit lower-case hex object id");
  if (ref.kind == GitRef::Kind::commit ? !is_object_id(ref.name, id_length) && ref.commit.rfind(ref.name, 0) != 0
                                       : !is_ref_name(ref.name))
    throw Error(where + ": \"" + ref.name + "\" is not a ref name git accepts");
  if (!doc.contains("shallow") || !doc["shallow"].is_array()) throw Error(where + ": the git refs document has no \"shallow\" list");
  for (const auto& id : doc["shallow"]) {
    if (!id.is_string() || !is_object_id(id.get<std::string>(), id_length))
      throw Error(where + ": a shallow entry is not a " + std::to_string(id_length) + "-digit lower-case hex object id");
    ref.shallow.push_back(id.get<std::string>());
  }
  return ref;
}

Artifact git_snapshot_row(ArtifactKind kind, const std::string& address, const std::string& version,
                          const std::string& commit, const std::string& digest, const std::string& upstream_url) {
  Artifact a;
  a.kind = kind;
  a.address = address;
  a.version = version;
  a.filename = commit + (kind == ArtifactKind::git_pack ? ".pack" : ".refs.json");
  a.digest = digest;
  a.upstream_url = upstream_url;
  a.trust = Trust::checksum;
  return a;
}

}  // namespace podplane::cache
