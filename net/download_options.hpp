#pragma once
// How a run of the download engine behaves: how many transfers at once, the HTTP policy of each
// item, and what progress it shows. Plain values, below both the engine (net/download.hpp) and
// its display (net/progress.hpp), so that neither includes the other.
#include "net/http_options.hpp"

namespace podplane::net {

enum class Progress { automatic, plain_lines, quiet };  // automatic: bar on a tty, else lines

struct DownloadOptions {
  int jobs = 8;
  int per_host = 4;
  HttpOptions http;
  Progress progress = Progress::automatic;
};

}  // namespace podplane::net
