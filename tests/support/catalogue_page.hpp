#pragma once
// The catalogue page's ready-to-copy snippets (mirror/catalogue_html.cpp) as a person copies
// them: what the tests that run each snippet with its real consumer read from a served page.
#include <string>

namespace podplane::test {

// The text of `html` as a person copying it gets it: tags dropped, the entities html_escape()
// writes read back.
[[nodiscard]] std::string copied_text(std::string html);

// The first <pre><code> block after the page's <h3>`heading`</h3>, as copied; "" when the page
// has no such heading or block.
[[nodiscard]] std::string catalogue_snippet(const std::string& page, const std::string& heading);

// The paragraph (<p>) between that heading and its block, as copied; "" when there is none.
[[nodiscard]] std::string catalogue_snippet_words(const std::string& page, const std::string& heading);

// Where the snippets put the CA of the mirror's certificate; a test puts its own CA file there,
// the only change it makes to what the page prints.
inline constexpr const char* kCatalogueCaFile = "/etc/ssl/certs/podplane-mirror-ca.pem";

// `snippet` with every kCatalogueCaFile replaced by `ca_file`.
[[nodiscard]] std::string with_ca_file(std::string snippet, const std::string& ca_file);

}  // namespace podplane::test
