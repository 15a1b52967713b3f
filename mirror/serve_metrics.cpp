#include "mirror/serve_metrics.hpp"

#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "mirror/catalogue.hpp"
#include "mirror/site_paths.hpp"

namespace podplane::mirror {

namespace {

bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

// A label value as the exposition format writes it: backslash, double quote and newline escaped.
std::string label_value(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

// A float as Prometheus reads it, shortest form ("0.0005", "1", "300").
std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

class Exposition {
 public:
  // The HELP and TYPE lines of one metric family.
  void family(std::string_view name, std::string_view type, std::string_view help) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += help;
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }
  // One sample; `labels` is empty or `key="value",…` already escaped.
  void sample(std::string_view name, std::string_view labels, const std::string& value) {
    out_ += name;
    if (!labels.empty()) {
      out_ += '{';
      out_ += labels;
      out_ += '}';
    }
    out_ += ' ';
    out_ += value;
    out_ += '\n';
  }
  void sample(std::string_view name, std::string_view labels, std::uint64_t value) { sample(name, labels, std::to_string(value)); }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

}  // namespace

Route route_of(std::string_view path) {
  if (starts_with(path, site_paths::network_mirror)) return Route::network_mirror;
  if (starts_with(path, site_paths::providers) || path == site_paths::well_known) return Route::registry;
  if (starts_with(path, site_paths::modules)) return Route::modules;
  if (starts_with(path, site_paths::vmconfig) || starts_with(path, site_paths::vmconfig_arch_bases) ||
      starts_with(path, site_paths::deps_manifests))
    return Route::vmconfig;
  if (starts_with(path, site_paths::registry_api) || path == "/v2") return Route::images;
  if (starts_with(path, site_paths::seeds)) return Route::seeds;
  if (path == site_paths::tools || starts_with(path, std::string(site_paths::tools) + "/")) return Route::tools;
  if (starts_with(path, site_paths::git)) return Route::git;
  if (path == "/" || starts_with(path, site_paths::catalogue) || path == site_paths::catalogue_json) return Route::catalogue;
  if (path == site_paths::healthz) return Route::health;
  if (path == site_paths::metrics) return Route::metrics;
  return Route::other;
}

std::string_view route_name(Route route) {
  switch (route) {
    case Route::registry: return "registry";
    case Route::network_mirror: return "network_mirror";
    case Route::modules: return "modules";
    case Route::vmconfig: return "vmconfig";
    case Route::images: return "images";
    case Route::seeds: return "seeds";
    case Route::tools: return "tools";
    case Route::git: return "git";
    case Route::catalogue: return "catalogue";
    case Route::health: return "health";
    case Route::metrics: return "metrics";
    case Route::other: break;
  }
  return "other";
}

void ServeMetrics::record(const RequestSample& sample, std::uint64_t body_bytes, std::chrono::steady_clock::time_point done) {
  static std::atomic<std::size_t> next_shard{0};
  thread_local const std::size_t shard = next_shard.fetch_add(1, std::memory_order_relaxed) % kShards;
  auto& counters = shards_[shard].routes[static_cast<std::size_t>(sample.route)];
  std::size_t slot = kStatuses.size();
  for (std::size_t i = 0; i < kStatuses.size(); ++i)
    if (kStatuses[i] == sample.status) {
      slot = i;
      break;
    }
  counters.requests[slot].fetch_add(1, std::memory_order_relaxed);
  if (body_bytes > 0) counters.body_bytes.fetch_add(body_bytes, std::memory_order_relaxed);
  auto elapsed = done > sample.started ? done - sample.started : std::chrono::steady_clock::duration::zero();
  auto ns = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count());
  double seconds = static_cast<double>(ns) / 1e9;
  std::size_t bucket = 0;
  while (bucket < kBuckets.size() && seconds > kBuckets[bucket]) ++bucket;
  counters.durations[bucket].fetch_add(1, std::memory_order_relaxed);
  counters.duration_sum_ns.fetch_add(ns, std::memory_order_relaxed);
}

void ServeMetrics::reloaded(const SiteFigures& figures) {
  std::lock_guard lock(site_mutex_);
  if (loaded_once_) reloads_.fetch_add(1, std::memory_order_relaxed);
  loaded_once_ = true;
  site_ = figures;
}

void ServeMetrics::reload_failed() { reload_failures_.fetch_add(1, std::memory_order_relaxed); }

void ServeMetrics::held_back_for_check(bool passed) {
  (passed ? held_back_passed_ : held_back_cut_).fetch_add(1, std::memory_order_relaxed);
}

std::string ServeMetrics::render(const ConnectionCounters& connections, const ObjectCheckCounters& objects) const {
  Exposition out;
  auto load = [](const std::atomic<std::uint64_t>& counter) { return counter.load(std::memory_order_relaxed); };
  // A counter of one route summed over the shards.
  auto total = [this](std::size_t route, auto member) {
    std::uint64_t sum = 0;
    for (const auto& shard : shards_) sum += member(shard.routes[route]).load(std::memory_order_relaxed);
    return sum;
  };
  auto route_label = [](std::size_t route) {
    return "route=\"" + std::string(route_name(static_cast<Route>(route))) + "\"";
  };

  out.family("podplane_mirror_requests_total", "counter", "Requests answered, by route family and status code.");
  for (std::size_t r = 0; r < kRouteCount; ++r) {
    for (std::size_t slot = 0; slot < kStatusSlots; ++slot) {
      auto count = total(r, [slot](const RouteCounters& c) -> const auto& { return c.requests[slot]; });
      // Every route's 200 is always there, so that rate() has a series from the first scrape.
      bool always = slot < kStatuses.size() && kStatuses[slot] == 200;
      if (count == 0 && !always) continue;
      std::string code = slot < kStatuses.size() ? std::to_string(kStatuses[slot]) : "other";
      out.sample("podplane_mirror_requests_total", route_label(r) + ",code=\"" + code + "\"", count);
    }
  }

  out.family("podplane_mirror_response_body_bytes_total", "counter",
             "Body bytes that left for the clients (what the access log counts), by route family.");
  for (std::size_t r = 0; r < kRouteCount; ++r)
    out.sample("podplane_mirror_response_body_bytes_total", route_label(r),
               total(r, [](const RouteCounters& c) -> const auto& { return c.body_bytes; }));

  out.family("podplane_mirror_request_duration_seconds", "histogram",
             "From a complete request head to the last byte of its answer handed to the kernel, by route family.");
  for (std::size_t r = 0; r < kRouteCount; ++r) {
    std::uint64_t cumulative = 0;
    for (std::size_t b = 0; b <= kBuckets.size(); ++b) {
      cumulative += total(r, [b](const RouteCounters& c) -> const auto& { return c.durations[b]; });
      std::string le = b < kBuckets.size() ? number(kBuckets[b]) : "+Inf";
      out.sample("podplane_mirror_request_duration_seconds_bucket", route_label(r) + ",le=\"" + le + "\"", cumulative);
    }
    out.sample("podplane_mirror_request_duration_seconds_sum", route_label(r),
               number(static_cast<double>(total(r, [](const RouteCounters& c) -> const auto& { return c.duration_sum_ns; })) / 1e9));
    out.sample("podplane_mirror_request_duration_seconds_count", route_label(r), cumulative);
  }

  out.family("podplane_mirror_open_connections", "gauge", "Client connections open now.");
  out.sample("podplane_mirror_open_connections", "",
             std::to_string(std::max<std::int64_t>(0, connections.open.load(std::memory_order_relaxed))));
  out.family("podplane_mirror_connections_accepted_total", "counter", "Client connections accepted.");
  out.sample("podplane_mirror_connections_accepted_total", "", load(connections.accepted));
  out.family("podplane_mirror_connections_refused_total", "counter",
             "Connections closed unanswered because their client address held --max-connections-per-client already.");
  out.sample("podplane_mirror_connections_refused_total", "", load(connections.refused_per_client));
  out.family("podplane_mirror_header_timeouts_total", "counter",
             "Connections closed because no complete request head arrived within --header-timeout.");
  out.sample("podplane_mirror_header_timeouts_total", "", load(connections.head_timeouts));
  out.family("podplane_mirror_tls_handshakes_total", "counter", "TLS handshakes, by result.");
  out.sample("podplane_mirror_tls_handshakes_total", "result=\"ok\"", load(connections.tls_handshakes));
  out.sample("podplane_mirror_tls_handshakes_total", "result=\"failed\"", load(connections.tls_handshake_failures));

  out.family("podplane_mirror_reloads_total", "counter",
             "Site rebuilds after start (SIGHUP, or a new fill or import of the index seen by the watch).");
  out.sample("podplane_mirror_reloads_total", "", load(reloads_));
  out.family("podplane_mirror_reload_failures_total", "counter", "Site rebuilds that failed; the previous site kept being served.");
  out.sample("podplane_mirror_reload_failures_total", "", load(reload_failures_));

  out.family("podplane_mirror_object_checks_total", "counter",
             "Store objects checked against their digest (each file once per process), by verdict; damaged and "
             "missing objects are never served whole.");
  out.sample("podplane_mirror_object_checks_total", "result=\"good\"", load(objects.good));
  out.sample("podplane_mirror_object_checks_total", "result=\"damaged\"", load(objects.damaged));
  out.sample("podplane_mirror_object_checks_total", "result=\"missing\"", load(objects.missing));
  out.sample("podplane_mirror_object_checks_total", "result=\"unreadable\"", load(objects.unreadable));
  out.family("podplane_mirror_held_back_answers_total", "counter",
             "Whole-object answers that streamed beside their object's first check and held back their last bytes "
             "for it, by its result: passed (sent whole) or failed (cut short).");
  out.sample("podplane_mirror_held_back_answers_total", "check=\"passed\"", load(held_back_passed_));
  out.sample("podplane_mirror_held_back_answers_total", "check=\"failed\"", load(held_back_cut_));

  SiteFigures site;
  {
    std::lock_guard lock(site_mutex_);
    site = site_;
  }
  out.family("podplane_mirror_site_loaded_timestamp_seconds", "gauge", "When the site served now was built (Unix time).");
  out.sample("podplane_mirror_site_loaded_timestamp_seconds", "", std::to_string(site.loaded_at));
  out.family("podplane_mirror_store_generation", "gauge",
             "Always 1; its label is the generation of the store the site serves (/healthz): replicas with "
             "equal labels serve the same content.");
  out.sample("podplane_mirror_store_generation", "generation=\"" + label_value(site.generation) + "\"", std::string("1"));
  // Absent until the store records a bundle import: a zero would read as an import in 1970.
  if (site.last_import > 0) {
    out.family("podplane_mirror_last_import_timestamp_seconds", "gauge",
               "When the store's newest successful bundle import was recorded (Unix time).");
    out.sample("podplane_mirror_last_import_timestamp_seconds", "", std::to_string(site.last_import));
  }
  out.family("podplane_mirror_site_paths", "gauge", "URL paths the site serves.");
  out.sample("podplane_mirror_site_paths", "", site.paths);
  out.family("podplane_mirror_site_skipped_rows", "gauge", "Index rows left out of the site (unsafe names, missing objects).");
  out.sample("podplane_mirror_site_skipped_rows", "", site.skipped_rows);

  // The store's size is left out when it could not be made (an unreadable vmconfig manifest):
  // a missing series alerts as "absent", a zero would read as an empty store.
  if (site.usage_known) {
    out.family("podplane_mirror_store_objects", "gauge", "Objects in the store, each counted once (podplane deps du).");
    out.sample("podplane_mirror_store_objects", "", site.objects);
    out.family("podplane_mirror_store_object_bytes", "gauge", "Bytes of the store's objects, each counted once (podplane deps du).");
    out.sample("podplane_mirror_store_object_bytes", "", site.object_bytes);
    out.family("podplane_mirror_store_items", "gauge", "Items stored, by kind (podplane deps du).");
    for (const auto& [kind, totals] : site.by_family)
      out.sample("podplane_mirror_store_items", "kind=\"" + label_value(kind) + "\"", totals.items);
    out.family("podplane_mirror_store_rows", "gauge", "Index rows, by kind (podplane deps du).");
    for (const auto& [kind, totals] : site.by_family)
      out.sample("podplane_mirror_store_rows", "kind=\"" + label_value(kind) + "\"", totals.rows);
    out.family("podplane_mirror_store_bytes", "gauge",
               "Bytes of the rows of each kind; an object several rows share counts in each (podplane deps du).");
    for (const auto& [kind, totals] : site.by_family)
      out.sample("podplane_mirror_store_bytes", "kind=\"" + label_value(kind) + "\"", totals.bytes);
  }
  out.family("podplane_mirror_bundle_imports", "gauge",
             "Bundle imports the store's audit log records, by result (the catalogue's Imported bundles).");
  out.sample("podplane_mirror_bundle_imports", "result=\"ok\"", site.bundle_imports_ok);
  out.sample("podplane_mirror_bundle_imports", "result=\"failed\"", site.bundle_imports_failed);
  return out.take();
}

void add_store_figures(const Catalogue& catalogue, SiteFigures& figures) {
  using nlohmann::json;
  auto count = [](const json& object, const char* key) -> std::uint64_t {
    if (!object.contains(key)) return 0;
    const json& value = object[key];
    if (value.is_number_unsigned()) return value.get<std::uint64_t>();
    if (value.is_number_integer()) return static_cast<std::uint64_t>(std::max<std::int64_t>(0, value.get<std::int64_t>()));
    return 0;
  };
  if (const auto* usage = catalogue.section("store-usage"); usage != nullptr && usage->data.is_object()) {
    const json& data = usage->data;
    figures.usage_known = !data.contains("error");
    figures.objects = count(data, "objects");
    figures.object_bytes = count(data, "object_bytes");
    if (data.contains("by_family") && data["by_family"].is_object())
      for (const auto& [kind, totals] : data["by_family"].items())
        figures.by_family[kind] = {count(totals, "items"), count(totals, "rows"), count(totals, "bytes")};
  }
  if (const auto* bundles = catalogue.section("bundles"); bundles != nullptr && bundles->data.is_array()) {
    for (const auto& import : bundles->data) {
      bool ok = import.contains("ok") && import["ok"].is_boolean() && import["ok"].get<bool>();
      ++(ok ? figures.bundle_imports_ok : figures.bundle_imports_failed);
    }
  }
}

}  // namespace podplane::mirror
