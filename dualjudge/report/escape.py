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


def table_cell(text: str) -> str:
    """A value as one Markdown table cell: a newline shown as the two characters \\n (it would end the row), a
    pipe escaped (it would end the cell)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\\n").replace("|", "\\|")
