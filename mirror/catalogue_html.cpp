// The catalogue as HTML (render_catalogue_html in catalogue.hpp). Everything is inline: the
// page runs where nothing else is reachable. Every value from the index goes through
// html_escape(); the literal markup around it is ours. The one style and the one script are
// allowed by their hashes (catalogue_content_security_policy), so nothing else inline runs.
#include <algorithm>
#include <string>
#include <vector>

#include "base/ascii.hpp"
#include "base/digest.hpp"
#include "base/hex.hpp"
#include "mirror/catalogue.hpp"
#include "mirror/site_paths.hpp"
#include "net/oci_reference.hpp"

namespace podplane::mirror {

namespace {

// Contrast: text #1b1f24 on #fff (16:1), muted #4a5360 (7.9:1), links #0b57d0 (6.4:1),
// good #0f6b2f on #e8f5ec (6.3:1), warning #7a3e00 on #fff1e0 (7.6:1).
constexpr const char* kStyle = R"css(
:root{color-scheme:light}
*{box-sizing:border-box}
body{margin:0;font:16px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1b1f24;background:#fff}
a{color:#0b57d0}
a:focus,button:focus,input:focus,.table-wrap:focus{outline:3px solid #0b57d0;outline-offset:2px}
.skip{position:absolute;left:-999px}.skip:focus{left:8px;top:8px;background:#fff;padding:4px}
header,main,footer{max-width:1400px;margin:0 auto;padding:0 16px}
header{padding-top:16px}
h1{font-size:1.6rem;margin:.4em 0}h2{font-size:1.3rem;margin:1.4em 0 .4em}h3{font-size:1.05rem;margin:1.2em 0 .3em}
p{margin:.4em 0}.muted{color:#4a5360}
nav ul{list-style:none;padding:0;margin:.5em 0;display:flex;flex-wrap:wrap;gap:.4em 1em}
code,pre,.hash{font-family:ui-monospace,"SFMono-Regular",Menlo,Consolas,monospace;font-size:.86rem}
pre{background:#f3f5f8;border:1px solid #d0d6de;border-radius:6px;padding:10px 12px;overflow-x:auto;margin:.3em 0 .8em;user-select:all}
.panel{border:1px solid #d0d6de;border-radius:8px;padding:8px 16px;margin:16px 0;background:#fbfcfd}
summary{cursor:pointer}summary h2{display:inline;font-size:1.15rem;margin:0}
form{display:flex;flex-wrap:wrap;align-items:center;gap:8px;margin:16px 0}
label{font-weight:600}
input[type=search]{font:inherit;padding:6px 8px;border:1px solid #6b7480;border-radius:4px;min-width:16em;flex:1 1 16em;max-width:32em}
button{font:inherit;padding:6px 14px;border:1px solid #0b57d0;background:#0b57d0;color:#fff;border-radius:4px;cursor:pointer}
.copy{padding:2px 8px;font-size:.8rem;margin-left:6px}
.table-wrap{overflow-x:auto;border:1px solid #d0d6de;border-radius:6px}
table{border-collapse:collapse;width:100%;font-size:.9rem}
th,td{text-align:left;vertical-align:top;padding:6px 8px;border-bottom:1px solid #e3e7ec}
tbody th{font-weight:400}
thead th{background:#eef1f5;position:sticky;top:0}
tbody tr:nth-child(even){background:#f8f9fb}
td .line{display:block}
.hash{word-break:break-all;user-select:all;min-width:12em;display:block}
.status{display:inline-block;padding:1px 8px;border-radius:10px;background:#eef1f5;white-space:nowrap}
.good{background:#e8f5ec;color:#0f6b2f}.warning{background:#fff1e0;color:#7a3e00}
.note{border-left:4px solid #7a3e00;background:#fff1e0;padding:6px 10px;margin:.4em 0}
footer{margin:32px auto;color:#4a5360;font-size:.9rem}
@media (max-width:640px){body{font-size:15px}header,main,footer{padding:0 10px}th,td{padding:5px 6px}}
)css";

// Live filtering, and the mirror URL of a static export that was written without one.
constexpr const char* kScript = R"js(
(function(){
  var body=document.body, input=document.getElementById('q');
  if(body.getAttribute('data-mirror-url')===''){
    var base=new URL(body.getAttribute('data-root')||'./',location.href).href.replace(/\/$/,'');
    var spans=document.querySelectorAll('.mirror-url');
    for(var i=0;i<spans.length;i++) spans[i].textContent=base;
    var hosts=document.querySelectorAll('.mirror-host');
    for(var h=0;h<hosts.length;h++) hosts[h].textContent=new URL(base).host;
  }
  var pres=document.querySelectorAll('pre');
  for(var k=0;k<pres.length;k++)(function(pre){
    if(!navigator.clipboard) return;
    var b=document.createElement('button'); b.type='button'; b.className='copy'; b.textContent='Copy';
    b.addEventListener('click',function(){navigator.clipboard.writeText(pre.textContent);b.textContent='Copied';});
    var h=pre.previousElementSibling; if(h) h.appendChild(b);
  })(pres[k]);
  if(!input) return;
  var rows=document.querySelectorAll('tbody tr');
  var texts=[]; for(var r=0;r<rows.length;r++) texts.push(rows[r].textContent.toLowerCase());
  var param=new URLSearchParams(location.search).get('q');
  if(param!==null && input.value==='') input.value=param;
  function apply(){
    var terms=input.value.toLowerCase().split(/\s+/).filter(Boolean), shown=0;
    for(var j=0;j<rows.length;j++){
      var ok=terms.every(function(t){return texts[j].indexOf(t)>=0;});
      rows[j].hidden=!ok; if(ok) shown++;
    }
    var sections=document.querySelectorAll('section[data-section]');
    for(var s=0;s<sections.length;s++){
      var sec=sections[s], all=sec.querySelectorAll('tbody tr').length, vis=sec.querySelectorAll('tbody tr:not([hidden])').length;
      var c=sec.querySelector('.count'); if(c) c.textContent=vis+' of '+all+' rows';
    }
    var total=document.getElementById('count');
    if(total) total.textContent=terms.length? shown+' of '+rows.length+' rows match' : rows.length+' rows';
  }
  input.addEventListener('input',apply);
  apply();
})();
)js";

// Where the snippets put the CA that signed the mirror's certificate (tests put their own
// there: the only change they make to what is printed).
constexpr const char* kSiteCaFile = "/etc/ssl/certs/podplane-mirror-ca.pem";

// 'sha256-<base64>' of an inline element's text, as a CSP source expression names it.
std::string csp_hash(std::string_view text) { return "'sha256-" + base64_encode(from_hex(sha256_hex(text))) + "'"; }

// The policy without frame-ancestors, which a <meta> policy may not carry.
std::string page_policy() {
  static const std::string policy = "default-src 'none'; script-src " + csp_hash(kScript) + "; style-src " +
                                    csp_hash(kStyle) + "; img-src 'self'; form-action 'self'; base-uri 'none'";
  return policy;
}

std::vector<std::string> terms_of(std::string_view query) {
  std::vector<std::string> terms;
  std::string current;
  for (char c : ascii_lower(query.substr(0, 256))) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '+') {
      if (!current.empty()) terms.push_back(std::move(current));
      current.clear();
    } else {
      current += c;
    }
  }
  if (!current.empty()) terms.push_back(std::move(current));
  return terms;
}

bool matches(const CatalogueRow& row, const std::vector<std::string>& terms) {
  return std::all_of(terms.begin(), terms.end(), [&](const std::string& t) { return row.search_text.find(t) != std::string::npos; });
}

class Page {
 public:
  Page(const Catalogue& catalogue, const CataloguePage& request) : catalogue_(catalogue), request_(request) {
    // "/" → "", "/catalogue/" → "../", "/catalogue/<id>/" → "../../": links stay relative, so
    // the page also works below a path prefix and from a static export.
    auto depth = std::count(request.path.begin(), request.path.end(), '/');
    for (long i = 1; i < depth; ++i) root_ += "../";
    terms_ = terms_of(request.query);
  }

  std::string render() {
    const CatalogueSection* only = request_.section.empty() ? nullptr : catalogue_.section(request_.section);
    out_.reserve(512 * 1024);
    // The policy travels in the page too, so a static export served by any web server keeps it.
    out_ += "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"" + page_policy() + "\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>";
    out_ += only ? html_escape(only->title) + " · " : "";
    out_ += "Podplane mirror catalogue</title>\n<style>";
    out_ += kStyle;
    out_ += "</style>\n</head>\n<body data-root=\"" + html_escape(root_.empty() ? "./" : root_) + "\" data-mirror-url=\"" +
            html_escape(request_.mirror_url) + "\">\n<a class=\"skip\" href=\"#main\">Skip to the catalogue</a>\n";
    header(only);
    out_ += "<main id=\"main\">\n";
    filter_form();
    if (!only) use_this_mirror();
    for (const auto& section : catalogue_.sections)
      if (!only || &section == only) table(section, only != nullptr);
    out_ += "</main>\n<footer>\n<p>The same data for scripts: <a href=\"" + html_escape(root_) +
            "catalogue.json\">catalogue.json</a>. Served by <code>podplane mirror</code> from its store index.</p>\n</footer>\n<script>";
    out_ += kScript;
    out_ += "</script>\n</body>\n</html>\n";
    return std::move(out_);
  }

 private:
  std::string shown_mirror_url() const { return request_.mirror_url.empty() ? "https://mirror.example:8443" : request_.mirror_url; }

  std::string mirror_url_html() const { return "<span class=\"mirror-url\">" + html_escape(shown_mirror_url()) + "</span>"; }

  // The mirror as OCI references name a registry (helm's oci://): host[:port], no scheme, no path.
  std::string mirror_host_html() const {
    const std::string url = shown_mirror_url();
    const std::string rest = url.substr(url.find("://") + 3);
    return "<span class=\"mirror-host\">" + html_escape(rest.substr(0, rest.find('/'))) + "</span>";
  }

  // A command to copy, with the mirror's URL where the catalogue left kMirrorUrlPlaceholder
  // (`escaped` is HTML already; the placeholder has nothing to escape).
  std::string with_mirror_url(std::string escaped) const {
    for (auto at = escaped.find(kMirrorUrlPlaceholder); at != std::string::npos; at = escaped.find(kMirrorUrlPlaceholder, at)) {
      const std::string url = mirror_url_html();
      escaped.replace(at, kMirrorUrlPlaceholder.size(), url);
      at += url.size();
    }
    return escaped;
  }

  void header(const CatalogueSection* only) {
    out_ += "<header>\n<h1>Podplane mirror catalogue";
    if (only) out_ += ": " + html_escape(only->title);
    out_ += "</h1>\n<p class=\"muted\">What this mirror holds, read from its store index. ";
    std::size_t rows = 0;
    for (const auto& s : catalogue_.sections) rows += s.rows.size();
    out_ += std::to_string(rows) + " rows.</p>\n<nav aria-label=\"Sections\">\n<ul>\n";
    if (only) out_ += "<li><a href=\"" + html_escape(root_.empty() ? "./" : root_) + "\">Whole catalogue</a></li>\n";
    for (const auto& s : catalogue_.sections) {
      std::string href = only ? root_ + "catalogue/" + s.id + "/" : "#" + s.id;
      out_ += "<li><a href=\"" + html_escape(href) + "\">" + html_escape(s.title) + " (" + std::to_string(s.rows.size()) +
              ")</a></li>\n";
    }
    out_ += "</ul>\n</nav>\n</header>\n";
  }

  void snippet(const std::string& heading, const std::string& explanation, const std::string& code_html) {
    out_ += "<h3>" + heading + "</h3>\n<p>" + explanation + "</p>\n<pre><code>" + code_html + "</code></pre>\n";
  }

  void use_this_mirror() {
    std::string url = mirror_url_html();
    // Folded by default (a <details> needs no script): people come first for what is stored.
    out_ += "<section class=\"panel\" id=\"use\" aria-labelledby=\"use-h\">\n<details>\n<summary><h2 id=\"use-h\">Use this "
            "mirror</h2> <span class=\"muted\">ready-to-copy settings for tofu and terraform, <code>SSL_CERT_FILE</code>, "
            "<code>deps_mirror_url</code>, containerd, Helm and git, for <code>" + url + "/</code></span></summary>\n";

    std::string hosts;
    for (const auto& host : catalogue_.origin_hosts) {
      std::string h = html_escape(host);
      hosts += "host \"" + h + "\" {\n  services = {\n    \"providers.v1\" = \"" + url + "/v1/providers/" + h +
               "/\"\n    \"modules.v1\"   = \"" + url + "/v1/modules/" + h + "/\"\n  }\n}\n";
    }
    snippet("tofu / terraform: registry protocol",
            "Keep the original source addresses and send their registries here. Put this in the CLI config "
            "(<code>TF_CLI_CONFIG_FILE</code>, <code>~/.tofurc</code> or <code>~/.terraformrc</code>). Providers stay "
            "signed: the engines check the upstream signatures offline.",
            hosts);
    snippet("tofu / terraform: network mirror",
            "Or install providers through the network mirror protocol (h1 and zh of every platform, no signatures):",
            "provider_installation {\n  network_mirror {\n    url = \"" + url + "/v1/mirror/\"\n  }\n}\n");
    bool https = request_.mirror_url.empty() || request_.mirror_url.rfind("https://", 0) == 0;
    if (https)
      // Each variable here is read by the clients named beside it (mirror.TrustSnippet.* runs
      // each with that variable alone): curl reads CURL_CA_BUNDLE, and SSL_CERT_FILE only where
      // neither it nor SSL_CERT_DIR is set.
      snippet("Trust the mirror's certificate",
              "tofu, terraform and podplane read the PEM bundle <code>SSL_CERT_FILE</code> names, curl the one "
              "<code>CURL_CA_BUNDLE</code> names (curl ignores <code>SSL_CERT_FILE</code> where <code>SSL_CERT_DIR</code> is "
              "set); it must hold the CA which "
              "signed this mirror's certificate:",
              std::string("export SSL_CERT_FILE=") + kSiteCaFile + "\nexport CURL_CA_BUNDLE=" + kSiteCaFile + "\n");
    else
      out_ += "<h3>Trust the mirror's certificate</h3>\n<p class=\"note\">This mirror is served over plain HTTP: tofu and "
              "terraform need HTTPS for the registry and network mirror protocols. Serve it with "
              "<code>--tls-cert</code> and <code>--tls-key</code>, then point <code>SSL_CERT_FILE</code> at its CA.</p>\n";

    out_ += "<h3>VMs and podplane: <code>deps_mirror_url</code></h3>\n<p>VMs fetch "
            "<code>&lt;deps_mirror_url&gt;/vmconfig/artifacts/…</code>; <code>podplane deps download</code>, "
            "<code>deps status</code> and <code>cluster create</code> read <code>PODPLANE_DEPS_URL</code>.</p>\n";
    if (catalogue_.vmconfig_arches.empty())
      out_ += "<p class=\"note\">No vmconfig manifest is stored yet: fill the store with <code>podplane deps download</code> "
              "or import a bundle.</p>\n";
    for (const auto& arch : catalogue_.vmconfig_arches) {
      std::string note;
      if (auto it = catalogue_.arch_shared_paths.find(arch); it != catalogue_.arch_shared_paths.end())
        note = " <span class=\"muted\">" + std::to_string(it->second) +
               " artifact(s) of this arch share Podplane's plain path with another arch's bytes: the stacks give these "
               "VMs <code>&lt;deps_mirror_url&gt;/arch/" + html_escape(arch) + "</code> as their base, where this mirror "
               "serves them.</span>";
      snippet("<code>" + html_escape(arch) + "</code>",
              "In <code>podplane.cluster.jsonc</code> (or <code>export PODPLANE_DEPS_URL=…</code>):" + note,
              "\"deps_mirror_url\": \"" + url + "\"\n");
    }

    containerd_hosts(url, https);
    helm_pull(https);
    git_insteadof(url, https);
    out_ += "</details>\n</section>\n";
  }

  // git's own setting sends each stored git host here (docs/ci.md "Git sources"): roots keep
  // their git:: sources, and terraform and tofu, which run git, clone from this mirror.
  void git_insteadof(const std::string& url, bool https) {
    out_ += "<h3>git</h3>\n";
    std::vector<std::string> hosts = catalogue_.git_hosts;
    if (hosts.empty()) {
      out_ += "<p class=\"note\">Needs git repositories in this mirror: it holds none yet (<code>podplane deps tf --stack"
              "</code> keeps them for roots that call <code>git::</code> modules). Each host then gets a line of this "
              "shape:</p>\n";
      hosts.push_back("<host>");
    } else {
      out_ += "<p>Roots keep their <code>git::</code> sources; git (which terraform and tofu run) clones them from "
              "here. In the runner's git configuration:</p>\n";
    }
    std::string lines;
    for (const auto& host : hosts)
      lines += "git config --global url.\"" + url + html_escape(std::string(site_paths::git) + host) +
               "/\".insteadOf \"https://" + html_escape(host) + "/\"\n";
    // The CA file of the SSL_CERT_FILE line above: git's libcurl reads its own setting, not that variable.
    if (https) lines += "git config --global http.sslCAInfo \"$SSL_CERT_FILE\"\n";
    out_ += "<pre><code>" + lines + "</code></pre>\n";
  }

  // One hosts.toml per upstream registry whose images are served (docs/images.md): containerd
  // looks up certs.d/<registry>/ for an image named <registry>/<repository>, and with
  // override_path takes the host URL's path as the API root, so that <registry>/pause:3.10
  // resolves to <mirror>/v2/mirror/<registry>/pause/manifests/3.10.
  void containerd_hosts(const std::string& url, bool https) {
    out_ += "<h3>containerd</h3>\n";
    std::vector<std::string> registries = catalogue_.image_registries;
    if (registries.empty()) {
      out_ += "<p class=\"note\">Needs images in this mirror: it holds none yet, so containerd has nothing to pull here. "
              "Once it does, each upstream registry gets its own <code>/etc/containerd/certs.d/&lt;registry&gt;/hosts.toml"
              "</code> (<code>config_path = \"/etc/containerd/certs.d\"</code>) of this shape:</p>\n";
      registries.push_back("<registry>");
    } else {
      out_ += "<p>One file per registry whose images this mirror serves, read where containerd's "
              "<code>config_path = \"/etc/containerd/certs.d\"</code>:</p>\n";
    }
    for (const auto& registry : registries) {
      const std::string name = html_escape(registry);
      // Docker Hub's registry API is served by registry-1.docker.io, not docker.io.
      const std::string server = html_escape(registry == "docker.io" ? "registry-1.docker.io" : registry);
      out_ += "<p>In <code>/etc/containerd/certs.d/" + name + "/hosts.toml</code>:</p>\n";
      const std::string root = html_escape(std::string(site_paths::registry_api) + net::mirror_registry_prefix(registry));
      out_ += "<pre><code>server = \"https://" + server + "\"\n\n[host.\"" + url + root +
              "\"]\n  capabilities = [\"pull\", \"resolve\"]\n" +
              (https ? std::string("  ca = \"") + kSiteCaFile + "\"\n" : "") + "  override_path = true\n</code></pre>\n";
    }
  }

  // `helm pull` of each Helm chart served at a tag (docs/images.md "Helm charts"). Helm names a
  // registry by host[:port] alone and asks https://<host>/v2/<repository>/…, so it reaches a
  // mirror at the root of its host only. A chart's version is its tag with '_' read as '+'
  // (helm writes '+', which a tag cannot hold, as '_').
  void helm_pull(bool https) {
    out_ += "<h3>Helm</h3>\n";
    const std::string url = shown_mirror_url();
    if (url.find('/', url.find("://") + 3) != std::string::npos) {
      out_ += "<p class=\"note\">Helm reaches an OCI registry at the root of its host only "
              "(<code>https://&lt;host&gt;/v2/</code>), and this mirror is below a path: serve its <code>/v2/</code> at "
              "the root of a host name of its own for Helm.</p>\n";
      return;
    }
    std::vector<std::pair<std::string, std::string>> charts;  // repository, version (HTML already)
    for (const auto& chart : catalogue_.helm_charts) {
      std::string version = chart.tag;
      std::replace(version.begin(), version.end(), '_', '+');
      charts.emplace_back(html_escape(chart.repository), html_escape(version));
    }
    if (charts.empty()) {
      out_ += "<p class=\"note\">Needs Helm charts in this mirror: it holds none yet (<code>podplane deps images</code> "
              "takes them by reference like images). Each chart then gets a line of this shape:</p>\n";
      charts.emplace_back("mirror/&lt;registry&gt;/&lt;repository&gt;", "&lt;version&gt;");
    } else {
      out_ += std::string("<p>Helm ") + (https ? "3.12" : "3.13") + " or later pulls each chart stored here (no " +
              "<code>helm repo add</code>, no <code>helm registry login</code>: the mirror asks for none):</p>\n";
    }
    std::string lines;
    for (const auto& [repository, version] : charts)
      lines += "helm pull oci://" + mirror_host_html() + "/" + repository + " --version " + version +
               (https ? std::string(" --ca-file ") + kSiteCaFile : std::string(" --plain-http")) + "\n";
    out_ += "<pre><code>" + lines + "</code></pre>\n";
  }

  void filter_form() {
    out_ += "<form method=\"get\" role=\"search\" aria-label=\"Filter the catalogue\">\n"
            "<label for=\"q\">Filter rows</label>\n<input type=\"search\" id=\"q\" name=\"q\" value=\"" +
            html_escape(request_.query) +
            "\" placeholder=\"e.g. aws 6.2 linux_arm64\" autocomplete=\"off\">\n<button type=\"submit\">Filter</button>\n"
            "<p id=\"count\" class=\"muted\" role=\"status\" aria-live=\"polite\">";
    std::size_t shown = 0, all = 0;
    for (const auto& s : catalogue_.sections)
      for (const auto& row : s.rows) {
        ++all;
        if (matches(row, terms_)) ++shown;
      }
    out_ += terms_.empty() ? std::to_string(all) + " rows" : std::to_string(shown) + " of " + std::to_string(all) + " rows match";
    out_ += "</p>\n</form>\n";
  }

  // The first cell of a row names it: a row header for screen readers.
  void cell(const CatalogueCell& c, bool first) {
    out_ += first ? "<th scope=\"row\">" : "<td>";
    std::string inner = html_escape(c.text);
    switch (c.kind) {
      case CellKind::text: break;
      case CellKind::code: inner = "<code>" + with_mirror_url(std::move(inner)) + "</code>"; break;
      case CellKind::hash: inner = "<span class=\"hash\">" + inner + "</span>"; break;
      case CellKind::status:
        inner = std::string("<span class=\"status") + (c.tone == Tone::good ? " good" : c.tone == Tone::warning ? " warning" : "") +
                "\">" + inner + "</span>";
        break;
    }
    if (!c.href.empty()) inner = "<a href=\"" + html_escape(root_ + c.href.substr(1)) + "\">" + inner + "</a>";
    out_ += inner;
    for (const auto& line : c.more)
      out_ += c.more_kind == CellKind::hash ? "\n<span class=\"hash\">" + html_escape(line) + "</span>"
                                       : "\n<span class=\"line muted\">" + html_escape(line) + "</span>";
    out_ += first ? "</th>\n" : "</td>\n";
  }

  void table(const CatalogueSection& section, bool alone) {
    std::string id = html_escape(section.id);
    out_ += "<section id=\"" + id + "\" data-section=\"" + id + "\" aria-labelledby=\"" + id + "-h\">\n<h2 id=\"" + id + "-h\">" +
            html_escape(section.title) + "</h2>\n<p class=\"muted\">" + html_escape(section.summary);
    if (!alone)
      out_ += " <a href=\"" + html_escape(root_ + "catalogue/" + section.id + "/") + "\">This table alone</a>.";
    std::size_t shown = 0;
    for (const auto& row : section.rows)
      if (matches(row, terms_)) ++shown;
    out_ += " <span class=\"count\">" + std::to_string(shown) + " of " + std::to_string(section.rows.size()) +
            " rows</span></p>\n";
    if (section.rows.empty()) {
      out_ += "<p>" + html_escape(section.empty) + "</p>\n</section>\n";
      return;
    }
    out_ += "<div class=\"table-wrap\" role=\"region\" tabindex=\"0\" aria-labelledby=\"" + id + "-h\">\n<table>\n<thead><tr>";
    for (const auto& column : section.columns) out_ += "<th scope=\"col\">" + html_escape(column) + "</th>";
    out_ += "</tr></thead>\n<tbody>\n";
    for (const auto& row : section.rows) {
      if (!matches(row, terms_)) continue;
      out_ += "<tr>\n";
      for (std::size_t i = 0; i < row.cells.size(); ++i) cell(row.cells[i], i == 0);
      out_ += "</tr>\n";
    }
    out_ += "</tbody>\n</table>\n</div>\n</section>\n";
  }

  const Catalogue& catalogue_;
  const CataloguePage& request_;
  std::string root_;
  std::vector<std::string> terms_;
  std::string out_;
};

}  // namespace

std::string render_catalogue_html(const Catalogue& catalogue, const CataloguePage& page) {
  return Page(catalogue, page).render();
}

std::string catalogue_content_security_policy() { return page_policy() + "; frame-ancestors 'none'"; }

}  // namespace podplane::mirror
