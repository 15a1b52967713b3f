#!/usr/bin/env python3
"""Serves a tree made by build_fixture.py over HTTPS on 127.0.0.1, with fault injection.

    serve.py --root OUT_DIR [--port 0] [--tls|--plain] [--delay-ms N] [--nodelay]
             [--fail-first N:REGEX:STATUS[:RETRY_AFTER]]... [--cut-after BYTES:REGEX]...
             [--ignore-range REGEX]... [--drip BYTES_PER_SEC:REGEX]...
             [--lie-length CLAIMED:SENT:REGEX]... [--stream BYTES:REGEX]... [--hold-until N:REGEX]...
             [--proxy-to URL [--location-to URL]]
             [--registry-to URL [--registry-token [--token-login USER:PASSWORD]]] [--api-token TOKEN] [--log FILE]

Prints `listening https://127.0.0.1:PORT` (or http://) on stdout once it accepts connections.
- Static files from OUT_DIR/www; registry JSON (/.well-known/, /v1/, *.json) as application/json.
- `<path>.tmpl` is served for `<path>` with {{BASE}} replaced by the server's base URL.
- `<path>.headers` sidecar: a `Status: N` line and header lines ({{BASE}} replaced) for `<path>`.
- Range requests (one range) answer 206; --ignore-range REGEX answers 200 with the whole file.
- /git/… goes to `git http-backend` (GIT_PROJECT_ROOT=OUT_DIR/www/git, GIT_HTTP_EXPORT_ALL).
- --fail-first N:REGEX:STATUS[:RETRY_AFTER]: the first N requests of EACH path matching REGEX
  get STATUS (with Retry-After when given).
- --cut-after BYTES:REGEX: the first full (non-Range) transfer of each matching path sends its
  headers with the full Content-Length, then BYTES body bytes, then closes the connection.
- --drip BYTES_PER_SEC:REGEX: every GET of a matching path answers 200 with the file's
  Content-Length, then sends its body BYTES_PER_SEC bytes a second (one write per second),
  for as long as the client stays. Logged (fault "drip") when the headers have gone out.
- --lie-length CLAIMED:SENT:REGEX: every GET of a matching path, with or without Range,
  answers 200 with Content-Length CLAIMED, sends SENT body bytes and closes the connection.
- --stream BYTES:REGEX: every GET of a matching path answers 200 without a Content-Length
  (the body ends when the connection closes: a size the client cannot know in advance) and
  sends BYTES made-up bytes, or fewer when the client leaves first. Logged (fault "stream")
  once it ends, "bytes" counting what the socket took.
- --hold-until N:REGEX: a request of a matching path is not answered until N matching requests
  are in flight at once; from then on none waits. So a client that runs N transfers in
  parallel shows it in the log (N overlapping start/end intervals) however slow the machine
  is, and one that does not makes its requests wait 20 s each and logs them with fault
  "hold-timeout" (the client's 30 s low-speed limit is not reached).
- --proxy-to URL: a fault-injecting reverse proxy: every request (any method, with its body)
  that no fault answers is forwarded to URL (plain http), with X-Forwarded-Proto and
  X-Forwarded-Host, and its answer is passed back. --root then only supplies tls/.
- --location-to URL: a forwarded answer's Location header is moved to URL's scheme, host and
  port (path and query kept): a registry that sends uploads somewhere else.
- --registry-to URL: requests below /v2/ (an OCI registry's API) are forwarded to URL (plain
  http, e.g. a docker-registry on loopback), every method with its body (a push goes through);
  everything else is served from OUT_DIR as usual.
  With --registry-token, /v2/ wants `Authorization: Bearer <token>` and otherwise answers 401
  with `WWW-Authenticate: Bearer realm="<base>/token",service="fixture",scope="repository:<name>:pull"`;
  GET /token?service=fixture&scope=… answers {"token": …} (anonymous, as public registries do).
  With --token-login USER:PASSWORD, /token answers only requests with that Basic login (401
  otherwise), for pull and push scopes, as a private registry's token service does.
- --api-token TOKEN: the provider and module registry APIs (/v1/providers/, /v1/modules/) want
  `Authorization: Bearer TOKEN` (a private registry, as TF_TOKEN_<host> or a credentials block
  supply it) and answer 401 otherwise; package downloads and discovery stay open.
- --git-login USER:PASSWORD: /git/ (git http-backend) wants that Basic login and answers 401
  with `WWW-Authenticate: Basic realm="fixture-git"` otherwise, as a private git host does.
- Without --registry-to, /v2/ is the static registry build_fixture.py writes (www/v2/).
- `{{HOST}}` in *.tmpl files is replaced by 127.0.0.1:PORT (image references in vmconfig manifests).
- --delay-ms N: every request waits N ms before it is answered.
- --nodelay: accepted for older callers and ignored: every connection has TCP_NODELAY, and an
  answer's head and body go out together.
- --log FILE: one JSON object per request and line: method, path, status, bytes (body bytes
  sent), range (the Range header or null), fault (null, "fail-first", "cut", "ignore-range",
  "drip", "lie-length", "stream", "hold-timeout", "proxy"), authorization (whether the request
  carried an Authorization header), start and end (monotonic seconds: when the request arrived and when its answer was sent).
  A request's line is in the file (flushed) before the last byte of its answer is sent, so a
  client that has read a whole answer finds its line there at once; for a cut or lying answer,
  before the connection is closed. It is written once the rest of the answer is out: "bytes"
  counts the body bytes handed to the socket (the last one included).
Python stdlib only: it is a test fixture.
"""
import argparse
import base64
import http.client
import http.server
import json
import os
import re
import socketserver
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse

JSON_PREFIXES = ("/.well-known/", "/v1/")
HOLD_TIMEOUT_SECONDS = 20


class State:
    def __init__(self, args):
        self.args = args
        self.www = os.path.join(os.path.abspath(args.root), "www")
        self.lock = threading.Lock()
        self.hits = {}       # (rule index, path) -> count
        self.cut_done = set()
        self.log_file = open(args.log, "a", buffering=1) if args.log else None
        self.fail_rules = []
        for spec in args.fail_first:
            parts = spec.split(":")
            if len(parts) not in (3, 4):
                raise SystemExit("--fail-first wants N:REGEX:STATUS[:RETRY_AFTER], got " + spec)
            self.fail_rules.append((int(parts[0]), re.compile(parts[1]), int(parts[2]), parts[3] if len(parts) == 4 else None))
        self.cut_rules = []
        for spec in args.cut_after:
            n, _, regex = spec.partition(":")
            self.cut_rules.append((int(n), re.compile(regex)))
        self.ignore_range = [re.compile(r) for r in args.ignore_range]
        self.drip_rules = []
        for spec in args.drip:
            rate, _, regex = spec.partition(":")
            if not rate.isdigit() or int(rate) < 1 or not regex:
                raise SystemExit("--drip wants BYTES_PER_SEC:REGEX, got " + spec)
            self.drip_rules.append((int(rate), re.compile(regex)))
        self.lie_rules = []
        for spec in args.lie_length:
            parts = spec.split(":", 2)
            if len(parts) != 3 or not parts[0].isdigit() or not parts[1].isdigit():
                raise SystemExit("--lie-length wants CLAIMED:SENT:REGEX, got " + spec)
            self.lie_rules.append((int(parts[0]), int(parts[1]), re.compile(parts[2])))
        self.stream_rules = []
        for spec in args.stream:
            n, _, regex = spec.partition(":")
            if not n.isdigit() or not regex:
                raise SystemExit("--stream wants BYTES:REGEX, got " + spec)
            self.stream_rules.append((int(n), re.compile(regex)))
        self.hold_rules = []
        for spec in args.hold_until:
            n, _, regex = spec.partition(":")
            if not n.isdigit() or int(n) < 1 or not regex:
                raise SystemExit("--hold-until wants N:REGEX, got " + spec)
            self.hold_rules.append((int(n), re.compile(regex)))
        self.hold_changed = threading.Condition()
        self.hold_arrived = {}  # rule index -> matching requests that have arrived
        self.hold_open = set()  # rule indexes whose requests no longer wait
        self.proxy = urllib.parse.urlsplit(args.proxy_to) if args.proxy_to else None
        if self.proxy and self.proxy.scheme != "http":
            raise SystemExit("--proxy-to wants an http:// URL, got " + args.proxy_to)
        self.base = ""
        self.registry = urllib.parse.urlsplit(args.registry_to) if args.registry_to else None
        self.location_to = urllib.parse.urlsplit(args.location_to) if args.location_to else None
        self.token = "fixture-token-" + str(os.getpid())

    def log(self, **entry):
        if self.log_file:
            with self.lock:
                self.log_file.write(json.dumps(entry, sort_keys=True) + "\n")
                self.log_file.flush()

    def injected_failure(self, path):
        with self.lock:
            for i, (count, regex, status, retry_after) in enumerate(self.fail_rules):
                if regex.search(path):
                    seen = self.hits.get((i, path), 0)
                    if seen < count:
                        self.hits[(i, path)] = seen + 1
                        return status, retry_after
        return None

    def hold(self, path):
        """--hold-until: waits until N matching requests are in flight; the fault to log, or None."""
        for i, (n, regex) in enumerate(self.hold_rules):
            if not regex.search(path):
                continue
            with self.hold_changed:
                if i in self.hold_open:
                    return None
                self.hold_arrived[i] = self.hold_arrived.get(i, 0) + 1
                if self.hold_arrived[i] >= n:
                    self.hold_open.add(i)
                    self.hold_changed.notify_all()
                    return None
                if self.hold_changed.wait_for(lambda: i in self.hold_open, timeout=HOLD_TIMEOUT_SECONDS):
                    return None
                self.hold_open.add(i)  # never reached: stop holding the others too
                self.hold_changed.notify_all()
                return "hold-timeout"
        return None

    def drip_for(self, path):
        return next((rate for rate, regex in self.drip_rules if regex.search(path)), None)

    def lie_for(self, path):
        return next(((claimed, sent) for claimed, sent, regex in self.lie_rules if regex.search(path)), None)

    def stream_for(self, path):
        return next((n for n, regex in self.stream_rules if regex.search(path)), None)

    def cut_for(self, path):
        with self.lock:
            for n, regex in self.cut_rules:
                if regex.search(path) and path not in self.cut_done:
                    self.cut_done.add(path)
                    return n
        return None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "podplane-fixture/1"

    # No Nagle: with it, a write that follows another unacknowledged one waits for the client's
    # delayed ACK (40 ms), a stall no real server has.
    disable_nagle_algorithm = True

    def log_message(self, format, *args):  # quiet: the access log is --log
        pass

    @property
    def state(self):
        return self.server.state

    def finish_request(self, status, body=b"", headers=None, path=None, fault=None, cut=None, content_length=None):
        started = getattr(self, "started", time.monotonic())
        fault = fault or getattr(self, "held", None)
        self.send_response(status)
        headers = headers or {}
        for name, value in headers.items():
            self.send_header(name, value)
        length = len(body) if content_length is None else content_length
        self.send_header("Content-Length", str(length))
        head = b"".join(self._headers_buffer) + b"\r\n"
        self._headers_buffer = []
        body = b"" if self.command == "HEAD" else (body if cut is None else body[:cut])
        # Everything but the answer's last byte, then the log line, then that byte: a client
        # that has the whole answer finds the line in the file already (see the module doc).
        answer = memoryview(head + body) if len(body) < 1 << 20 else None
        sent = 0
        try:
            if answer is not None:
                self.wfile.write(answer[:-1])
            else:
                self.wfile.write(head)
                self.wfile.write(memoryview(body)[:-1])
            sent = len(body)
        except (BrokenPipeError, ConnectionResetError):
            answer, body = None, b""
        self.state.log(method=self.command, path=path or self.path, status=status, bytes=sent,
                       range=self.headers.get("Range"), fault=fault, authorization="Authorization" in self.headers,
                       start=round(started, 6), end=round(time.monotonic(), 6))
        try:
            if answer is not None:
                self.wfile.write(answer[-1:])
            elif body:
                self.wfile.write(memoryview(body)[-1:])
        except (BrokenPipeError, ConnectionResetError):
            pass
        if cut is not None:
            self.close_connection = True
            try:
                self.connection.shutdown(2)
            except OSError:
                pass

    def do_HEAD(self):
        self.do_GET()

    def do_POST(self):
        path = urllib.parse.urlsplit(self.path).path
        if self.state.proxy or (self.state.registry and (path == "/v2" or path.startswith("/v2/"))):
            return self.do_GET()  # forwarded with its body (and its token checked) like a GET
        self.started = time.monotonic()
        self.held = None  # the connection may have carried a held GET before
        if path.startswith("/git/"):
            login = self.state.args.git_login
            if login is not None and self.headers.get("Authorization") != "Basic " + base64.b64encode(login.encode()).decode():
                return self.finish_request(401, b"login needed\n", {"Content-Type": "text/plain",
                                                                    "WWW-Authenticate": 'Basic realm="fixture-git"'}, path=path)
            return self.git(path)
        self.finish_request(405, b"method not allowed\n", {"Content-Type": "text/plain"}, path=path)

    def do_PUT(self):
        self.do_POST()

    def do_PATCH(self):
        self.do_POST()

    def do_DELETE(self):
        self.do_POST()

    def do_GET(self):
        self.started = time.monotonic()
        split = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(split.path)
        # A proxied request's body is read before any answer, so that an injected failure
        # leaves the connection ready for the client's next request.
        body = self.read_request_body() if self.state.proxy or self.state.registry else b""
        if self.state.args.delay_ms:
            time.sleep(self.state.args.delay_ms / 1000.0)
        self.held = self.state.hold(path)
        failure = self.state.injected_failure(path)
        if failure:
            status, retry_after = failure
            headers = {"Content-Type": "text/plain"}
            if retry_after is not None:
                headers["Retry-After"] = retry_after
            return self.finish_request(status, b"injected failure\n", headers, path=path, fault="fail-first")
        if self.state.proxy:
            return self.forward(path, body)
        if self.state.args.api_token and (path.startswith("/v1/providers/") or path.startswith("/v1/modules/")):
            if self.headers.get("Authorization") != "Bearer " + self.state.args.api_token:
                return self.finish_request(401, b'{"errors":["not authorized"]}', {"Content-Type": "application/json"},
                                           path=path)
        if path == "/token" and (self.state.registry or self.state.args.registry_token):
            return self.issue_token(split.query)
        if path == "/v2" or path.startswith("/v2/"):
            if self.state.args.registry_token and self.headers.get("Authorization") != "Bearer " + self.state.token:
                name = path[len("/v2/"):].split("/manifests/")[0].split("/blobs/")[0].split("/tags/")[0]
                challenge = 'Bearer realm="%s/token",service="fixture",scope="repository:%s:pull"' % (self.state.base, name)
                return self.finish_request(401, b'{"errors":[{"code":"UNAUTHORIZED"}]}',
                                           {"Content-Type": "application/json", "WWW-Authenticate": challenge}, path=path)
            if self.state.registry:
                return self.forward(path, body, self.state.registry)
        if self.command == "GET":
            rate = self.state.drip_for(path)
            if rate is not None:
                return self.drip(path, rate)
            lie = self.state.lie_for(path)
            if lie is not None:
                return self.lie(path, *lie)
            stream = self.state.stream_for(path)
            if stream is not None:
                return self.stream(path, stream)
        if path.startswith("/git/"):
            login = self.state.args.git_login
            if login is not None and self.headers.get("Authorization") != "Basic " + base64.b64encode(login.encode()).decode():
                return self.finish_request(401, b"login needed\n", {"Content-Type": "text/plain",
                                                                    "WWW-Authenticate": 'Basic realm="fixture-git"'}, path=path)
            return self.git(path)
        self.static(path)

    def file_bytes(self, path):
        rel = os.path.normpath(path.lstrip("/"))
        file = os.path.join(self.state.www, rel)
        if rel.startswith("..") or os.path.isabs(rel) or not os.path.isfile(file):
            return b"x" * 65536  # a made-up body: the fault is the point, not the bytes
        with open(file, "rb") as f:
            return f.read()

    def drip(self, path, rate):
        body = self.file_bytes(path)
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.flush()
        self.state.log(method=self.command, path=path, status=200, bytes=0, range=self.headers.get("Range"),
                       fault="drip", start=round(self.started, 6), end=round(time.monotonic(), 6))
        self.close_connection = True
        try:
            for at in range(0, len(body), rate):
                self.wfile.write(body[at:at + rate])
                self.wfile.flush()
                time.sleep(1.0)
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass

    def lie(self, path, claimed, sent):
        body = self.file_bytes(path)
        while len(body) < sent:
            body += body
        self.finish_request(200, body[:sent], {"Content-Type": "application/octet-stream"}, path=path,
                            fault="lie-length", cut=sent, content_length=claimed)

    def stream(self, path, total):
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        chunk, sent = b"s" * 65536, 0
        try:
            self.wfile.flush()
            while sent < total:
                n = min(len(chunk), total - sent)
                self.wfile.write(chunk[:n])
                sent += n
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass
        self.state.log(method=self.command, path=path, status=200, bytes=sent, range=self.headers.get("Range"),
                       fault="stream", authorization="Authorization" in self.headers,
                       start=round(self.started, 6), end=round(time.monotonic(), 6))

    def issue_token(self, query):
        params = urllib.parse.parse_qs(query)
        login = self.state.args.token_login
        if login is not None:
            expected = "Basic " + base64.b64encode(login.encode()).decode()
            if self.headers.get("Authorization") != expected:
                return self.finish_request(401, b'{"errors":[{"code":"UNAUTHORIZED"}]}',
                                           {"Content-Type": "application/json",
                                            "WWW-Authenticate": 'Basic realm="fixture-token"'}, path="/token")
        scopes = params.get("scope", [""])
        allowed = (":pull", ":pull,push") if login is not None else (":pull",)
        if params.get("service") != ["fixture"] or not all(scope.endswith(allowed) for scope in scopes):
            return self.finish_request(400, b'{"errors":[{"code":"DENIED"}]}', {"Content-Type": "application/json"}, path="/token")
        self.finish_request(200, json.dumps({"token": self.state.token}).encode(), {"Content-Type": "application/json"},
                            path="/token")

    def forward(self, path, body, target=None):
        proxy = target or self.state.proxy
        connection = http.client.HTTPConnection(proxy.hostname, proxy.port or 80, timeout=60)
        headers = {name: value for name, value in self.headers.items()
                   if name.lower() not in ("connection", "keep-alive", "transfer-encoding", "content-length", "expect")}
        headers["X-Forwarded-Proto"] = "https" if self.server.context is not None else "http"
        headers["X-Forwarded-Host"] = self.headers.get("Host", "")
        try:
            connection.request(self.command, self.path, body=body if body or self.command in ("POST", "PUT", "PATCH") else None,
                               headers=headers)
            answer = connection.getresponse()
            answer_body = answer.read()
        except OSError as error:
            return self.finish_request(502, ("proxy: %s\n" % error).encode(), {"Content-Type": "text/plain"},
                                       path=path, fault="proxy")
        finally:
            connection.close()
        passed = {}
        for name, value in answer.getheaders():
            if name.lower() not in ("connection", "keep-alive", "transfer-encoding", "content-length"):
                passed[name] = value
            if name.lower() == "location" and self.state.location_to:
                moved = urllib.parse.urlsplit(value)
                passed[name] = urllib.parse.urlunsplit((self.state.location_to.scheme, self.state.location_to.netloc,
                                                        moved.path, moved.query, moved.fragment))
        length = answer.getheader("Content-Length") if self.command == "HEAD" else None
        self.finish_request(answer.status, answer_body, passed, path=path,
                            content_length=int(length) if length is not None else None)

    def static(self, path):
        www = self.state.www
        rel = os.path.normpath(path.lstrip("/"))
        if rel.startswith("..") or os.path.isabs(rel) or path.endswith((".headers", ".tmpl")):
            return self.finish_request(404, b"not found\n", {"Content-Type": "text/plain"}, path=path)
        file = os.path.join(www, rel)
        status, headers = 200, {}
        sidecar = file + ".headers"
        if os.path.isfile(sidecar):
            with open(sidecar) as f:
                for line in f.read().replace("{{BASE}}", self.state.base).splitlines():
                    name, _, value = line.partition(":")
                    if name.strip().lower() == "status":
                        status = int(value.strip())
                    elif name.strip():
                        headers[name.strip()] = value.strip()
        body = None
        if os.path.isfile(file):
            with open(file, "rb") as f:
                body = f.read()
        elif os.path.isfile(file + ".tmpl"):
            with open(file + ".tmpl", "rb") as f:
                body = f.read().replace(b"{{BASE}}", self.state.base.encode())
                body = body.replace(b"{{HOST}}", self.state.base.split("://", 1)[1].encode())
        elif not os.path.isfile(sidecar):
            return self.finish_request(404, b"not found\n", {"Content-Type": "text/plain"}, path=path)
        body = body or b""
        if path.startswith(JSON_PREFIXES) or path.endswith(".json"):
            headers.setdefault("Content-Type", "application/json")
        else:
            headers.setdefault("Content-Type", "application/octet-stream")
        if status != 200:
            return self.finish_request(status, body, headers, path=path)
        headers["Accept-Ranges"] = "bytes"
        range_header = self.headers.get("Range")
        if range_header and any(r.search(path) for r in self.state.ignore_range):
            return self.finish_request(200, body, headers, path=path, fault="ignore-range")
        if range_header:
            m = re.fullmatch(r"bytes=(\d*)-(\d*)", range_header.strip())
            if not m or (m.group(1) == "" and m.group(2) == ""):
                return self.finish_request(416, b"", {"Content-Range": "bytes */%d" % len(body)}, path=path)
            if m.group(1) == "":
                start, end = max(0, len(body) - int(m.group(2))), len(body) - 1
            else:
                start = int(m.group(1))
                end = int(m.group(2)) if m.group(2) else len(body) - 1
            end = min(end, len(body) - 1)
            if start >= len(body) or start > end:
                return self.finish_request(416, b"", {"Content-Range": "bytes */%d" % len(body)}, path=path)
            headers["Content-Range"] = "bytes %d-%d/%d" % (start, end, len(body))
            return self.finish_request(206, body[start:end + 1], headers, path=path)
        cut = self.state.cut_for(path)
        if cut is not None and cut < len(body):
            return self.finish_request(200, body, headers, path=path, fault="cut", cut=cut)
        self.finish_request(200, body, headers, path=path)

    def read_request_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def git(self, path):
        """Runs git http-backend as a CGI program (smart HTTP, protocol v2 passed through)."""
        split = urllib.parse.urlsplit(self.path)
        body = self.read_request_body() if self.command == "POST" else b""
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": os.path.join(self.state.www, "git"),
            "GIT_HTTP_EXPORT_ALL": "1",
            "GATEWAY_INTERFACE": "CGI/1.1",
            "REQUEST_METHOD": self.command,
            "PATH_INFO": path[len("/git"):],
            "QUERY_STRING": split.query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_ADDR": self.client_address[0],
            "SERVER_PROTOCOL": "HTTP/1.1",
        }
        for name in ("Git-Protocol", "Content-Encoding", "Accept"):
            if self.headers.get(name):
                env["HTTP_" + name.upper().replace("-", "_")] = self.headers[name]
        result = subprocess.run(["git", "http-backend"], input=body, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        out = result.stdout
        sep = out.find(b"\r\n\r\n")
        sep_len = 4
        if sep < 0:
            sep, sep_len = out.find(b"\n\n"), 2
        if result.returncode != 0 or sep < 0:
            return self.finish_request(500, result.stderr, {"Content-Type": "text/plain"}, path=path)
        status, headers = 200, {}
        for line in out[:sep].decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                headers[name.strip()] = value.strip()
        self.finish_request(status, out[sep + sep_len:], headers, path=path)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128
    context = None

    def process_request_thread(self, request, client_address):
        # The TLS handshake runs in the connection's own thread, so a slow client never
        # holds up accept() for the others.
        if self.context is not None:
            try:
                request = self.context.wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError):
                self.shutdown_request(request)
                return
        super().process_request_thread(request, client_address)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", required=True)
    parser.add_argument("--port", type=int, default=0)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--tls", dest="tls", action="store_true", default=True)
    mode.add_argument("--plain", dest="tls", action="store_false")
    parser.add_argument("--delay-ms", type=int, default=0)
    parser.add_argument("--nodelay", action="store_true")  # the default now; accepted, ignored
    parser.add_argument("--fail-first", action="append", default=[])
    parser.add_argument("--cut-after", action="append", default=[])
    parser.add_argument("--ignore-range", action="append", default=[])
    parser.add_argument("--drip", action="append", default=[])
    parser.add_argument("--lie-length", action="append", default=[])
    parser.add_argument("--stream", action="append", default=[])
    parser.add_argument("--hold-until", action="append", default=[])
    parser.add_argument("--proxy-to")
    parser.add_argument("--location-to")
    parser.add_argument("--registry-to")
    parser.add_argument("--registry-token", action="store_true")
    parser.add_argument("--api-token")
    parser.add_argument("--token-login")
    parser.add_argument("--git-login")
    parser.add_argument("--log")
    args = parser.parse_args()

    server = Server(("127.0.0.1", args.port), Handler)
    server.state = State(args)
    scheme = "http"
    if args.tls:
        tls = os.path.join(os.path.abspath(args.root), "tls")
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(os.path.join(tls, "server.pem"), os.path.join(tls, "server.key"))
        server.context = context
        scheme = "https"
    port = server.server_address[1]
    server.state.base = "%s://127.0.0.1:%d" % (scheme, port)
    print("listening " + server.state.base, flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
