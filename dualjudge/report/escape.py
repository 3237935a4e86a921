"""One escaping rule for every string that reaches a page: model outputs, model and family names, and
whatever a foreign verdict table holds are data, never markup.

- Markdown that becomes HTML (report.html) is rendered with raw HTML disabled: a `<script>` or an
  `<img onerror=...>` in a name or an answer shows as text.
- Data embedded in a page's `<script type="application/json">` block (the explorer) is JSON with every
  character that could end the block or open a comment inside it (`<`, `>`, `&`, and the line
  separators U+2028/U+2029) written as a \\u escape, so no content can close the element, start an
  HTML comment that swallows the page script, or break the JavaScript that parses it.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

_SCRIPT_SAFE = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def script_json(data: Any) -> str:
    """JSON text safe inside `<script type="application/json">`: parses back to `data` exactly."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return "".join(_SCRIPT_SAFE.get(ch, ch) for ch in text)


def html_text(value: object) -> str:
    """A value as HTML text (quotes escaped too, so it is also safe in an attribute)."""
    return html.escape(str(value), quote=True)


def local_link(url: str) -> bool:
    """Whether a link or image may stay one in report.html: a link within the run folder (the explorer, a
    figure) or an embedded PNG. Anything with a scheme (http:, https:, javascript:, file:) is shown as text,
    so a name such as `![x](http://host/p.png)` never makes the opened report fetch or go anywhere."""
    head = url.split("#", 1)[0].split("?", 1)[0].split("/", 1)[0]
    return ":" not in head or url.startswith("data:image/png;base64,")


def markdown_to_html(md: str) -> str:
    """CommonMark (with tables) to HTML, raw HTML in the source escaped rather than passed through, and
    only local links and embedded figures kept as links and images."""
    from markdown_it import MarkdownIt

    parser = MarkdownIt("commonmark", {"html": False}).enable("table")
    parser.validateLink = local_link  # type: ignore[method-assign]
    return str(parser.render(md))


_MARKUP = {
    "\\": "\\\\",
    "<": "\\<",
    ">": "\\>",
    "[": "\\[",
    "]": "\\]",
    "`": "\\`",
    "&": "\\&",
    "\r\n": "\\n",
    "\r": "\\n",
    "\n": "\\n",
}
_MARKUP_RE = re.compile("|".join(re.escape(k) for k in sorted(_MARKUP, key=len, reverse=True)))
_PLAIN_RE = re.compile(r"\\([\\<>\[\]`&n])")


def md_text(text: str) -> str:
    """A name as Markdown text: the characters that open HTML, a link or image, a code span or an entity are
    backslash-escaped and a newline is written as the two characters \\n, so a model or family name reads
    the same in report.md, in any Markdown viewer and in report.html, and never becomes markup."""
    return _MARKUP_RE.sub(lambda m: _MARKUP[m.group(0)], text)


def plain(text: str) -> str:
    """The name `md_text` escaped, as it was (a newline comes back as a newline)."""
    return _PLAIN_RE.sub(lambda m: "\n" if m.group(1) == "n" else m.group(1), text)


def md_strings(data: Any) -> Any:
    """Every string in a JSON-like value (dict keys included) through `md_text`."""
    if isinstance(data, str):
        return md_text(data)
    if isinstance(data, dict):
        return {md_strings(k): md_strings(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [md_strings(v) for v in data]
    return data


def table_cell(text: str) -> str:
    """A value as one Markdown table cell: a newline shown as the two characters \\n (it would end the row), a
    pipe escaped (it would end the cell)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\\n").replace("|", "\\|")


def page(body: str) -> str:
    """The report's HTML page around a body rendered from its Markdown."""
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>dualjudge report</title><style>"
        "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}"
        "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}"
        "td:first-child,th:first-child{text-align:left}img{max-width:100%}</style></head><body>" + body + "</body></html>"
    )
