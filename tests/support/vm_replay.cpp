#include "tests/support/vm_replay.hpp"

#include <algorithm>
#include <regex>

namespace podplane::test {

std::vector<Userdata> userdata_of(const std::string& main_tf) {
  static const std::regex block(
      R"re(data "podplane_userdata" "([a-z0-9_]+)" \{\s*manifest_json\s*=\s*file\("\$\{path\.module\}/([^"]+)"\)\s*deps_mirror_url\s*=\s*"([^"]+)")re");
  std::vector<Userdata> found;
  for (std::sregex_iterator it(main_tf.begin(), main_tf.end(), block), end; it != end; ++it)
    found.push_back({(*it)[1], (*it)[2], (*it)[3]});
  return found;
}

std::string VmReplay::describe() const {
  return "curl: " + show(curl) + "\nsha256sum: " + show(sha256) + "\nsha512sum: " + show(sha512);
}

VmReplay replay_vm(const nlohmann::json& manifest, const std::string& provider_kind, const std::string& base,
                   const std::filesystem::path& dir, const std::filesystem::path& ca_file) {
  std::filesystem::create_directories(dir);
  const nlohmann::json& vm = manifest.at("vmconfig");
  std::vector<std::pair<std::string, nlohmann::json>> items{{"os-image", vm.at("os").at("image")}};
  for (const auto& [name, item] : vm.at("dependencies").items()) items.push_back({name, item});
  std::vector<std::string> curl{"curl", "-sfL", "--parallel", "--parallel-max", "10"};
  if (!ca_file.empty()) curl.insert(curl.end(), {"--cacert", ca_file.string()});
  std::string sums256, sums512;
  VmReplay replay;
  for (const auto& [name, item] : items) {
    std::string url = item.at("url"), digest = item.at("digest");
    if (url.empty() && digest.empty()) continue;
    if (item.contains("providers")) {
      auto providers = item["providers"].get<std::vector<std::string>>();
      if (std::find(providers.begin(), providers.end(), provider_kind) == providers.end()) continue;
    }
    std::string type = item.at("type");
    std::string file = name + (type == "deb" ? ".deb" : type == "tar.gz" ? ".tar.gz" : type == "qcow2" ? ".qcow2" : "");
    std::string basename = url.substr(url.rfind('/') + 1);
    curl.insert(curl.end(), {"-o", file, base + "/vmconfig/artifacts/" + name + "/" + item.at("version").get<std::string>() + "/" + basename});
    std::string hex = digest.substr(digest.find(':') + 1);
    (digest.rfind("sha256:", 0) == 0 ? sums256 : sums512) += hex + "  " + file + "\n";
    ++replay.items;
  }
  write_file(dir / "sha256sums", sums256);
  write_file(dir / "sha512sums", sums512);
  ProcessOptions in_dir;
  in_dir.cwd = dir;
  in_dir.unset_env = {"http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy"};
  replay.curl = run(curl, in_dir);
  replay.sha256 = run({"sha256sum", "-c", "--strict", "sha256sums"}, in_dir);
  replay.sha512 = run({"sha512sum", "-c", "--strict", "sha512sums"}, in_dir);
  return replay;
}

}  // namespace podplane::test
