"""The explorer page in headless chromium: its answer cards, and the verdict rows a filter should show."""

from __future__ import annotations

from html.parser import HTMLParser

import pandas as pd
import pytest

from dualjudge.report.browser import dump_dom, find_chromium

GOOD, POOR = 7.0, 5.0


class Cards(HTMLParser):
    """The answer cards of a dumped page, by their data attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.cards: list[dict[str, str]] = []
        self.errors: list[str] = []
        self.count: str | None = None
        self.dom = ""
        self._in_errors = False

    def handle_starttag(self, tag, attrs):  # type: ignore[no-untyped-def]
        a = dict(attrs)
        if tag == "article" and a.get("class") == "answer":
            self.cards.append(a)
        if tag == "p" and a.get("id") == "count":
            self.count = a.get("data-count")
        if tag == "ul" and a.get("id") == "errors":
            self._in_errors = True

    def handle_endtag(self, tag):  # type: ignore[no-untyped-def]
        if tag == "ul":
            self._in_errors = False

    def handle_data(self, data):  # type: ignore[no-untyped-def]
        if self._in_errors and data.strip():
            self.errors.append(data)


def open_page(path, fragment: str) -> Cards:
    browser = find_chromium()
    if browser is None:
        pytest.skip("Debian's chromium is not installed (.ci/run installs it)")
    dom, console = dump_dom(path.resolve().as_uri() + "#" + fragment, browser)
    page = Cards()
    page.feed(dom)
    page.dom = dom
    assert 'data-ready="1"' in dom, dom[:2000]
    assert page.errors == [] and not [c for c in console if "Uncaught" in c or ":ERROR:" in c], (page.errors, console)
    return page


def answer_keys(table: pd.DataFrame) -> set[tuple[str, str, str, str]]:
    return {(r.item_id, r.system_model, r.system, str(r.repeat)) for r in table.itertuples()}


def card_keys(page: Cards) -> list[tuple[str, str, str, str]]:
    return [(c["data-variant"], c["data-system-model"], c["data-strategy"], c["data-repeat"]) for c in page.cards]


def error_rows(table: pd.DataFrame, judge: str, kind: str = "type2", variant: str = "holistic") -> pd.DataFrame:
    """The verdict table's Type II (not equivalent, overall > 7) or Type I (equivalent, overall < 5) rows."""
    t = table[(table["judge_model"] == judge) & (table["judge_variant"] == variant)]
    t = t[(t["quality_status"] == "ok") & (t["equivalence_status"] == "ok")]
    eq = t["equivalent"].astype(bool)
    return t[(t["overall"] > GOOD) & ~eq] if kind == "type2" else t[(t["overall"] < POOR) & eq]
