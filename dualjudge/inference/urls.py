"""Endpoint URLs and the secrets that must never travel in them or come back out of them."""

from __future__ import annotations

import urllib.parse

SECRET_SHOWN = "***"


def url_problem(url: str) -> str | None:
    """Why `url` cannot be an endpoint's base URL (http or https, a host, a port in range, no credentials)."""
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port  # ValueError when out of range
    except ValueError as e:
        return f"{e}"
    if parts.scheme not in ("http", "https") or not parts.hostname or any(c.isspace() for c in url):
        return "not an http(s) URL with a host (e.g. http://host:8000/v1)"
    if parts.username is not None or parts.password is not None:
        return (
            "it holds credentials (user:password@): give the key through the environment instead, never in "
            "the URL (it would be printed and stored)"
        )
    if port == 0:
        return "port 0 is not a port"
    return None


def redacted(url: str) -> str:
    """The URL as it may be shown: credentials in it replaced by ***."""
    scheme, sep, rest = url.partition("://")
    host_part, slash, path = rest.partition("/")
    if sep and "@" in host_part:
        host_part = SECRET_SHOWN + "@" + host_part.rsplit("@", 1)[1]
    return f"{scheme}{sep}{host_part}{slash}{path}"


def scrub(text: str, *secrets: str) -> str:
    """`text` with every secret (an API key, and its Bearer header) shown as ***."""
    for secret in secrets:
        if secret and secret != "EMPTY" and len(secret) >= 4:
            text = text.replace(secret, SECRET_SHOWN)
    return text
