"""A hostile OpenAI-compatible provider for tests: a small local server whose replies can be switched to
every fault a real provider (or a dying vLLM) shows, so each fault is a test that runs in seconds.

    with Provider() as api:             # answers well: verdicts valid against the request's own schema
        api.script("500", "429", "reset")   # the next three chat requests get these faults, then good ones
        api.always = "hang"                 # every request from now on
        api.url                             # http://127.0.0.1:PORT/v1

Faults: "500", "503", "429" (Retry-After: 0), "reset" (the connection closed with no reply), "truncated"
(a body shorter than its Content-Length), "hang" (no reply until `release()` or the hang limit),
"html" (200 with an HTML page), "not_json" (200, application/json, not JSON), "empty_choices",
"length" (finish_reason "length", the text cut in half), "off_schema" (valid JSON outside the schema),
"markup" (an answer full of HTML and script markup), "gzip_bomb" (a gzip body that inflates to 60 MiB),
"unconstrained" (prose whatever the constraint), "404" (as a base URL without /v1 gets).
GET /health answers 200 unless `unhealthy`; GET /v1/models lists `served`; GET /metrics answers `metrics`
(Prometheus text; with `count_tokens`, token counters that grow at every poll, as a busy vLLM's do).
`delay_s` slows every good answer; `max_in_flight` counts the most requests it held at once.
"""

from __future__ import annotations

import json
import re
import socket
import struct
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.helpers.hosted import KEY

MARKUP = (
    '<script>document.title="pwned"</script><img src=x onerror="document.title=\'pwned\'">'
    '<!--<script> </script>--> & "quotes"\nSIGN_TYPE: no_entry'
)


def _with(content: Any = None, **usage: Any) -> Callable[[dict[str, Any]], bytes]:
    """A fault: the good completion with its content (a JSON text, or raw JSON spliced in) or usage replaced."""

    def make(good: dict[str, Any]) -> bytes:
        if usage:
            good["usage"].update(usage)
        if isinstance(content, bytes):  # raw JSON text spliced in as the content's value
            good["choices"][0]["message"]["content"] = "@@"
            return json.dumps(good).encode().replace(b'"@@"', content)
        if content is not None:
            good["choices"][0]["message"]["content"] = content
        return json.dumps(good).encode()

    return make


# replies no model should send, each of which once crashed a run (issue 33)
HOSTILE: dict[str, Callable[[dict[str, Any]], bytes]] = {
    "deep_content": _with("[" * 20000 + "]" * 20000),  # a verdict 20,000 deep
    "huge_int": _with('{"accuracy": ' + "9" * 5000 + "}"),  # a 5,000-digit number in a verdict
    "surrogate": _with(b'"a lone \\ud800 surrogate"'),  # the JSON escape of U+D800, alone
    "huge_usage": _with(completion_tokens=10**30),
    "negative_usage": _with(completion_tokens=-5),
    "parts": _with([{"type": "text", "text": '{"equivalent": true, '}, {"type": "text", "text": '"reasoning": "x"}'}]),
    "one_part": _with({"type": "text", "text": "SIGN_TYPE: no_entry"}),  # one part object, not a list of them
}
HOSTILE["deep_body"] = lambda good: b'{"choices": ' + b"[" * 20000 + b"]" * 20000 + b"}"
# replies that carry the hosted runs' key (tests/helpers/hosted.py): in a 200's content, and in a non-JSON 200 body
# at an offset that straddles the 80 characters an error shows
HOSTILE["key_in_content"] = _with(f"The key is {KEY}. SIGN_TYPE: no_entry")
HOSTILE["key_in_body"] = lambda good: b"x" * 54 + KEY.encode() + b" and then not JSON"
# the key in a 200's content in JSON escapes (a \u0073 for its first letter, its dashes as \u002d), which no look at
# the reply's bytes finds
ESCAPED_KEY = ("\\u%04x" % ord(KEY[0]) + KEY[1:].replace("-", "\\u002d")).encode()
HOSTILE["key_escaped"] = _with(b'"The key is ' + ESCAPED_KEY + b'. SIGN_TYPE: no_entry"')


def example(schema: dict[str, Any], defs: dict[str, Any] | None = None) -> Any:
    """A value valid against the subset of JSON Schema the verdict models produce."""
    defs = defs if defs is not None else schema.get("$defs", {})
    if "$ref" in schema:
        return example(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return example(schema[key][0], defs)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        return {k: example(v, defs) for k, v in schema.get("properties", {}).items()}
    if kind == "integer":
        low, high = schema.get("minimum", 0), schema.get("maximum", 10)
        return int(low + round((high - low) * 0.7))
    if kind == "number":
        return float(schema.get("minimum", 0))
    if kind == "boolean":
        return True
    if kind == "array":
        return [example(schema.get("items", {}), defs)] * int(schema.get("minItems", 1))
    return "fine"


class Provider(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, served: tuple[str, ...] = ("gpt-4o-2024-08-06",), hang_limit_s: float = 30.0) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.served = served
        self.hang_limit_s = hang_limit_s
        self.always: str | None = None
        self.heal_at_models: int | None = None  # the n-th GET /v1/models (an engine opened again) clears `always`
        self.models_asked = 0
        self.key: str | None = None  # the only API key taken (None: any); another is answered 401
        self.unhealthy = False
        self.bodies: list[dict[str, Any]] = []
        self.faults_sent: list[str] = []
        self.keys: set[str] = set()
        self.in_flight = 0
        self.max_in_flight = 0
        self.delay_s = 0.0  # seconds before each good answer
        self.metrics: str | None = None  # GET /metrics (None: 404)
        self.count_tokens = False  # GET /metrics: generation counters that grow at each poll
        self.polls = 0
        self.vary = False  # number each free-text answer, so no two answers (and no two judge requests) are alike
        self.answered = 0
        self.lock = threading.Lock()
        self._script: list[str] = []
        self._released = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def script(self, *faults: str) -> None:
        """The next requests get these faults, in order ("ok" for a good answer)."""
        with self.lock:
            self._script.extend(faults)

    def next_fault(self) -> str:
        with self.lock:
            if self._script:
                return self._script.pop(0)
            return self.always or "ok"

    def release(self) -> None:
        """End every hang now (and every later one at once)."""
        self._released.set()

    def __enter__(self) -> Provider:
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
        self.shutdown()
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    server: Provider
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        if self.path.endswith("/models") and not self.path.startswith("/v1/"):
            self._json(404, {"error": {"message": "not found"}})  # the API lives under /v1, as real ones do
        elif self.path.endswith("/health"):
            self._json(500 if self.server.unhealthy else 200, {})
        elif self.path.endswith("/metrics") and (self.server.metrics is not None or self.server.count_tokens):
            self.server.polls += 1
            text = self.server.metrics or f'vllm:generation_tokens_total{{engine="0"}} {self.server.polls * 7.0}\n'
            self._raw(200, text.encode(), "text/plain; version=0.0.4")
        elif self.path.endswith("/version"):
            self._json(200, {"version": "fake"})
        elif self.path.endswith("/models") and self.server.key and self.headers.get("Authorization") != f"Bearer {self.server.key}":
            self._json(401, {"error": {"message": "Incorrect API key provided"}})
        elif self.path.endswith("/models"):
            self.server.models_asked += 1
            if self.server.heal_at_models is not None and self.server.models_asked >= self.server.heal_at_models:
                self.server.always = None
            self._json(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in self.server.served]})
        else:
            self._json(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if not self.path.startswith("/v1/"):
            self._json(404, {"error": {"message": "not found"}})
            return
        fault = self.server.next_fault()
        with self.server.lock:
            self.server.bodies.append(body)
            self.server.faults_sent.append(fault)
            self.server.keys.add(self.headers.get("Authorization", ""))
            self.server.in_flight += 1
            self.server.max_in_flight = max(self.server.max_in_flight, self.server.in_flight)
        try:
            self._answer(body, fault)
        finally:
            with self.server.lock:
                self.server.in_flight -= 1

    def _answer(self, body: dict[str, Any], fault: str) -> None:
        if fault in ("500", "503", "404"):
            self._json(int(fault), {"error": {"message": f"fault {fault}", "type": "server_error"}})
        elif fault == "429":
            self._json(429, {"error": {"message": "rate limit", "type": "rate_limit_error"}}, {"Retry-After": "0"})
        elif fault == "reset":
            self._reset()
        elif fault == "hang":
            self.server._released.wait(self.server.hang_limit_s)
            self._reset()
        elif fault == "truncated":
            data = json.dumps(self._completion(body, self._content(body))).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self._reset()
        elif fault == "html":
            self._raw(200, b"<html><body><h1>Bad Gateway</h1></body></html>", "text/html")
        elif fault == "not_json":
            self._raw(200, b"this is not json", "application/json")
        elif fault == "empty_choices":
            self._json(200, {**self._completion(body, ""), "choices": []})
        elif fault == "length":
            text = self._content(body)
            self._json(200, self._completion(body, text[: len(text) // 2], finish="length"))
        elif fault == "unconstrained":  # a replica started without structured outputs: prose, whatever was asked
            self._json(200, self._completion(body, "I would say this is a no entry sign, mostly."))
        elif fault == "off_schema":
            self._json(200, self._completion(body, json.dumps({"score": "great", "verdict": "yes"})))
        elif fault == "echo_401":  # a provider that echoes the request's Authorization header in its error
            self._json(401, {"error": {"message": f"Incorrect API key: {self.headers.get('Authorization')}"}})
        elif fault == "gzip_bomb":  # 200, gzip: about 60 KB that inflate to 60 MiB (a JSON string of spaces)
            import gzip

            body_bytes = b'{"choices": [{"message": {"content": "' + b" " * (60 * 2**20) + b'"}}]}'
            self._raw(200, gzip.compress(body_bytes, 9), "application/json", {"Content-Encoding": "gzip"})
        elif fault in HOSTILE:
            self._raw(200, HOSTILE[fault](self._completion(body, self._content(body))), "application/json")
        elif fault == "markup":
            self._json(200, self._completion(body, self._content(body, markup=True)))
        else:
            if self.server.delay_s:
                time.sleep(self.server.delay_s)  # a busy server: requests pile up in flight
            self._json(200, self._completion(body, self._content(body)))

    @staticmethod
    def _schema(body: dict[str, Any]) -> dict[str, Any] | None:
        fmt = body.get("response_format")
        if fmt:
            return dict(fmt["json_schema"]["schema"])
        so = body.get("structured_outputs") or {}
        if "json" in so:
            return dict(so["json"]) if isinstance(so["json"], dict) else dict(json.loads(so["json"]))
        return None

    def _content(self, body: dict[str, Any], markup: bool = False) -> str:
        schema = self._schema(body)
        if schema is not None:
            value = example(schema)
            if markup and isinstance(value, dict) and "reasoning" in value:
                value["reasoning"] = MARKUP.splitlines()[0]
            return json.dumps(value)
        regex = (body.get("structured_outputs") or {}).get("regex", "")
        found = re.search(r"SIGN_TYPE: \(([a-z_]+)", regex)
        category = found.group(1) if found else "no_entry"
        if markup:
            return MARKUP.replace("no_entry", category)
        numbered = ""
        if self.server.vary:
            with self.server.lock:
                self.server.answered += 1
                numbered = f" (answer {self.server.answered})"
        bound = re.match(r"\[ -~\\n\]\{0,(\d+)\}", regex)  # the free text's bound, kept as a constrained engine does
        prose = f"A red ring and a white bar: no entry{numbered}."
        return f"{prose[: int(bound.group(1)) if bound else None]}\nSIGN_TYPE: {category}"

    @staticmethod
    def _completion(body: dict[str, Any], text: str, finish: str = "stop") -> dict[str, Any]:
        return {
            "id": "x",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "m"),
            "choices": [{"index": 0, "finish_reason": finish, "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": max(1, len(text) // 4), "total_tokens": 15},
        }

    def _json(self, code: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        self._raw(code, json.dumps(payload).encode(), "application/json", headers)

    def _raw(self, code: int, data: bytes, kind: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _reset(self) -> None:
        """Close the connection with a TCP reset (SO_LINGER 0), no reply."""
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        self.close_connection = True
        try:
            self.connection.close()
        except OSError:
            pass
