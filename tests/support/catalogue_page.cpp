#include "tests/support/catalogue_page.hpp"

#include <regex>
#include <string_view>
#include <utility>
#include <vector>

namespace podplane::test {

std::string copied_text(std::string html) {
  html = std::regex_replace(html, std::regex("<[^>]*>"), "");
  // &amp; last: "&amp;lt;" is the text "&lt;", not "<".
  for (const auto& [entity, character] : std::vector<std::pair<std::string, std::string>>{
           {"&quot;", "\""}, {"&#39;", "'"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&amp;", "&"}}) {
    for (auto at = html.find(entity); at != std::string::npos; at = html.find(entity, at + character.size()))
      html.replace(at, entity.size(), character);
  }
  return html;
}

namespace {

// The inner HTML of the first `open`…`close` element after the heading, "" when there is none
// before the next heading.
std::string after_heading(const std::string& page, const std::string& heading, std::string_view open, std::string_view close) {
  const auto at = page.find("<h3>" + heading + "</h3>");
  if (at == std::string::npos) return "";
  const auto next_heading = page.find("<h3>", at + 4);
  const auto start = page.find(open, at);
  const auto end = page.find(close, start);
  if (start == std::string::npos || end == std::string::npos || start > next_heading) return "";
  return page.substr(start + open.size(), end - start - open.size());
}

}  // namespace

std::string catalogue_snippet(const std::string& page, const std::string& heading) {
  return copied_text(after_heading(page, heading, "<pre><code>", "</code></pre>"));
}

std::string catalogue_snippet_words(const std::string& page, const std::string& heading) {
  return copied_text(after_heading(page, heading, "<p>", "</p>"));
}

std::string with_ca_file(std::string snippet, const std::string& ca_file) {
  const std::string placeholder = kCatalogueCaFile;
  for (auto at = snippet.find(placeholder); at != std::string::npos; at = snippet.find(placeholder, at + ca_file.size()))
    snippet.replace(at, placeholder.size(), ca_file);
  return snippet;
}

}  // namespace podplane::test
