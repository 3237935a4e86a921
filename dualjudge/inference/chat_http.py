"""The lean HTTP path to an OpenAI-compatible chat endpoint: one aiohttp session per endpoint, the body
sent as JSON bytes, the reply parsed once.

The OpenAI client costs about 2.5 ms of CPU per request (request transforms, httpx's connection pool,
response models), which caps one event loop at a few hundred requests a second: less than eight GPU
servers answer. This path does what the engine needs and no more, and names every failure in the
engine's terms: `Transient` (connection lost or refused, a timeout, a 5xx, a 429 with its Retry-After,
a reply that is not a chat completion) is retried; `StatusError` (another 4xx: the request itself is
wrong) is not.
"""

from __future__ import annotations

import asyncio
import json
import urllib.parse
import urllib.request
from typing import Any

import aiohttp

from dualjudge.inference.urls import SECRET_SHOWN, scrub


class Transient(Exception):
    """A failure worth retrying: the endpoint, not the request."""


class ConnectionFailed(Transient):
    pass


class RequestTimeout(Transient):
    pass


class ServerError(Transient):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


class RateLimited(Transient):
    def __init__(self, retry_after: float | None, message: str) -> None:
        super().__init__(f"HTTP 429: {message}")
        self.retry_after = retry_after


class MalformedReply(Transient):
    """A reply that is not a chat completion (an HTML page, a body that is not JSON, no choices): a
    failure of that request, retried like a transient one, never of the run."""


class StatusError(Exception):
    """A 4xx other than 429: the endpoint answered that the request is wrong."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message


def retry_after(value: str | None) -> float | None:
    """Seconds a 429 asks the client to wait (its Retry-After header, in seconds), capped at 120."""
    try:
        return min(float(value), 120.0) if value is not None else None
    except ValueError:
        return None


def _message(data: bytes, key: str = "") -> str:
    """The error message of a reply body: the OpenAI-style error.message, else the text itself, short, with
    the API key scrubbed before it is cut (a provider may echo the Authorization header)."""
    try:
        payload = json.loads(data)
        error = payload.get("error") if isinstance(payload, dict) else None
        if isinstance(error, dict) and error.get("message"):
            return scrub(str(error["message"]), key)[:300]
        if isinstance(payload, dict) and payload.get("message"):
            return scrub(str(payload["message"]), key)[:300]
    except (ValueError, RecursionError):
        pass
    return scrub(" ".join(data.decode("utf-8", "replace").split()), key)[:300] or "no body"


def proxy_for(url: str) -> str | None:
    """The proxy the environment names for `url` (HTTP(S)_PROXY, minus NO_PROXY), looked up once per
    endpoint rather than per request."""
    parts = urllib.parse.urlsplit(url)
    if urllib.request.proxy_bypass_environment(parts.hostname or ""):  # type: ignore[attr-defined]
        return None
    return urllib.request.getproxies_environment().get(parts.scheme)


MAX_REPLY_BYTES = 32 * 2**20  # a chat completion, decompressed: a few KB; past this it is refused as it streams


async def _bounded(content: aiohttp.StreamReader) -> bytes:
    """The reply's body, read as it arrives (after any gzip or deflate is undone) and refused past
    MAX_REPLY_BYTES: a body that inflates to gigabytes never sits in memory, and is an error outcome (retried,
    never stored)."""
    parts, size = [], 0
    async for chunk in content.iter_chunked(1 << 16):
        size += len(chunk)
        if size > MAX_REPLY_BYTES:
            raise MalformedReply(f"the reply is over {MAX_REPLY_BYTES // 2**20} MiB once decompressed; not read further")
        parts.append(chunk)
    return b"".join(parts)


def scrub_strings(value: Any, key: str) -> Any:
    """`value` (decoded JSON) with the key shown as *** in every string in it, keys of objects included: a provider
    that echoes the key with JSON escapes (a \\u0073 for its first letter, \\/ for a slash) hides it from a look
    at the bytes, never from this."""
    if key in ("", "EMPTY"):
        return value
    if isinstance(value, str):
        return scrub(value, key)
    if isinstance(value, list):
        return [scrub_strings(v, key) for v in value]
    if isinstance(value, dict):
        return {scrub(k, key) if isinstance(k, str) else k: scrub_strings(v, key) for k, v in value.items()}
    return value


class ChatClient:
    """POST /chat/completions to one endpoint. The session opens on first use (inside the event loop)."""

    def __init__(self, base_url: str, api_key: str, timeout_s: float) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.headers = {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"}
        self._key = api_key  # scrubbed from every message this client raises (a provider may echo it)
        self.timeout = aiohttp.ClientTimeout(total=timeout_s)
        self.proxy = proxy_for(self.url)
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            # no connection limit here: the engine's per-endpoint slots bound what is in flight
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0), timeout=self.timeout, skip_auto_headers=("User-Agent",)
            )
        return self._session

    async def create(self, body: dict[str, Any]) -> dict[str, Any]:
        """The reply as a dict, or one of this module's errors."""
        data = json.dumps(body, separators=(",", ":")).encode()
        try:
            async with self._open().post(self.url, data=data, headers=self.headers, proxy=self.proxy) as resp:
                status, after = resp.status, resp.headers.get("Retry-After")
                raw = await _bounded(resp.content)
        except asyncio.TimeoutError:
            raise RequestTimeout("no answer in time") from None
        except (aiohttp.ClientError, OSError) as e:  # refused, reset, truncated, closed mid-reply
            raise ConnectionFailed(scrub(f"{type(e).__name__}: {e}", self._key)[:200]) from None
        raw = self._scrubbed(raw)  # a key anywhere in a reply (an error, a body, a 200's content) never goes further
        if status == 429:
            raise RateLimited(retry_after(after), _message(raw, self._key))
        if status >= 500:
            raise ServerError(status, _message(raw, self._key))
        if status >= 400:
            raise StatusError(status, _message(raw, self._key))
        try:
            payload = json.loads(raw)
        except (ValueError, RecursionError):  # RecursionError: JSON nested past Python's stack
            shown = " ".join(raw[:400].decode("utf-8", "replace").split())[:80]
            raise MalformedReply(f"the reply is not a chat completion (not JSON within bounds: {shown})") from None
        if not isinstance(payload, dict):
            raise MalformedReply(f"the reply is not a chat completion ({type(payload).__name__})")
        scrubbed: dict[str, Any] = scrub_strings(payload, self._key)  # a key JSON-escaped in the bytes (\u0073k-...)
        return scrubbed

    def _scrubbed(self, raw: bytes) -> bytes:
        """The reply's bytes with the API key shown as *** wherever it is, whatever its length or offset."""
        key = self._key.encode()
        if self._key in ("", "EMPTY") or len(key) < 4 or key not in raw:
            return raw
        return raw.replace(key, SECRET_SHOWN.encode())

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
