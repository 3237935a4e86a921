"""A stand-in for `python -m sglang.launch_server` (SGLang does not run on these CPU machines): it takes the
flags SGLang takes, reads the API key from the `--config` YAML file as SGLang does, answers /health with 503
while "starting" and 200 after, exports SGLang's token counters on /metrics, and answers chat completions
that carry the key, writing each request body to $STAND_IN_LOG. A regex-constrained request is answered
"yes", a `response_format` one '{"a": 1}', anything else "plain"."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

STARTING_S = 1.0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    for flag in ("--model-path", "--served-model-name", "--host", "--port", "--random-seed", "--config"):
        ap.add_argument(flag, required=True)
    ap.add_argument("--enable-metrics", action="store_true")
    args, rest = ap.parse_known_args(argv)
    key = ""
    for line in Path(args.config).read_text().splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "api-key":
            key = value.strip().strip('"')
    log = Path(os.environ["STAND_IN_LOG"])
    log.write_text(json.dumps({"argv": argv, "config_mode": oct(Path(args.config).stat().st_mode & 0o777)}) + "\n")
    began, generated = time.monotonic(), [0]

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_: object) -> None:
            pass

        def _send(self, code: int, body: bytes = b"", kind: str = "application/json") -> None:
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802
            if self.path == "/health":
                self._send(503 if time.monotonic() - began < STARTING_S else 200)
            elif self.path == "/metrics" and args.enable_metrics:
                text = f"sglang:prompt_tokens_total 7.0\nsglang:generation_tokens_total {generated[0]}.0\n"
                self._send(200, text.encode(), "text/plain")
            else:
                self._send(404)

        def do_POST(self) -> None:  # noqa: N802
            if self.headers.get("Authorization") != f"Bearer {key}":
                self._send(401, b'{"error": "bad key"}')
                return
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            with log.open("a") as f:
                f.write(json.dumps(body) + "\n")
            content = "yes" if "regex" in body else '{"a": 1}' if "response_format" in body else "plain"
            generated[0] += 1
            reply = {
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 7, "completion_tokens": 1},
            }
            self._send(200, json.dumps(reply).encode())

    ThreadingHTTPServer((args.host, int(args.port)), Handler).serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
