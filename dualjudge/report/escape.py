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


def markdown_to_html(md: str) -> str:
    """CommonMark (with tables) to HTML, raw HTML in the source escaped rather than passed through."""
    from markdown_it import MarkdownIt

    return str(MarkdownIt("commonmark", {"html": False}).enable("table").render(md))
