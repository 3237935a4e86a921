"""Endpoint URLs and the secrets that must never travel in them or come back out of them."""

from __future__ import annotations

import re
import urllib.parse

SECRET_SHOWN = "***"
# a host name (urlsplit lowercases it) or an IP address
HOST = re.compile(r"^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*\.?|[0-9a-f:.]+)$")


def url_problem(url: str) -> str | None:
    """Why `url` cannot be an endpoint's base URL (http or https, a host, a port in range, no credentials)."""
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port  # ValueError when out of range
    except ValueError as e:
        return f"{e}"
    if parts.scheme not in ("http", "https") or not parts.hostname or any(c.isspace() for c in url):
        return "not an http(s) URL with a host (e.g. http://host:8000/v1)"
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        return (
            "it holds credentials (user:password@): give the key through the environment instead, never in "
            "the URL (it would be printed and stored)"
        )
    if parts.query or parts.fragment or "?" in url or "#" in url:
        return (
            "it holds a query or a fragment (?... or #...), where keys are often written: a base URL takes neither; "
            "give the key through the environment instead (it would be printed and stored)"
        )
    if not HOST.match(parts.hostname):
        return (
            "its host holds characters other than ASCII letters, digits, '.', '-' (or an IPv6 address): write it in "
            "ASCII (a name in another script as its punycode, xn--...)"
        )
    if port == 0:
        return "port 0 is not a port"
    return None


def redacted(url: str) -> str:
    """The URL as it may be shown: credentials, a query and a fragment in it each replaced by ***."""
    scheme, sep, rest = url.partition("://")
    rest, hash_, _ = rest.partition("#")
    rest, question, _ = rest.partition("?")
    host_part, slash, path = rest.partition("/")
    if sep and "@" in host_part:
        host_part = SECRET_SHOWN + "@" + host_part.rsplit("@", 1)[1]
    shown = f"{scheme}{sep}{host_part}{slash}{path}"
    return shown + (f"?{SECRET_SHOWN}" if question else "") + (f"#{SECRET_SHOWN}" if hash_ else "")


MIN_KEY_CHARS = 8  # a key shorter than this could be any word of a reply: it cannot be scrubbed safely, so it is refused


def short_key_problem(key: str, where: str) -> str | None:
    """Why `key` cannot be used (too short to tell from the text of a reply), or None. "EMPTY" is no key."""
    if key == "EMPTY" or len(key) >= MIN_KEY_CHARS:
        return None
    return (
        f"{where} holds a key of {len(key)} characters; a key under {MIN_KEY_CHARS} could be any word of a reply, so "
        f"dualjudge cannot keep it out of the store and the reports: set the provider's full key"
    )


def scrub(text: str, *secrets: str) -> str:
    """`text` with every secret (an API key, and its Bearer header) shown as ***."""
    for secret in secrets:
        if secret and secret != "EMPTY" and len(secret) >= 4:
            text = text.replace(secret, SECRET_SHOWN)
    return text
