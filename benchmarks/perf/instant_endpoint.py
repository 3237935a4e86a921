"""An OpenAI-compatible endpoint that answers every chat completion at once with the same small quality
verdict: the far side of `runner_overhead.py --json`, run in its own process so the runner's CPU is
measured alone.

    python benchmarks/perf/instant_endpoint.py PORT
"""

from __future__ import annotations

import json
import sys

from aiohttp import web

VERDICT = '{"reasoning":"r","accuracy":7,"completeness":7,"relevance":7}'
BODY = json.dumps(
    {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "instant",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": VERDICT}}],
        "usage": {"prompt_tokens": 900, "completion_tokens": 40, "total_tokens": 940},
    }
).encode()


async def chat(request: web.Request) -> web.Response:
    await request.read()
    return web.Response(body=BODY, content_type="application/json")


async def models(request: web.Request) -> web.Response:
    return web.json_response({"object": "list", "data": [{"id": "instant", "object": "model"}]})


def main() -> None:
    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_get("/v1/models", models)
    app.router.add_get("/health", lambda r: web.Response(text="ok"))
    web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None, access_log=None)


if __name__ == "__main__":
    main()
