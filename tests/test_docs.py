"""The documentation lives in the repository: every relative link in README.md and docs/ resolves inside
a clone, and none points outside it (a user's clone has no sibling folders)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_every_relative_link_resolves_inside_the_repository():
    broken = []
    for page in _pages():
        for target in LINK.findall(page.read_text()):
            if re.match(r"^[a-z]+:", target):
                continue  # a URL
            resolved = (page.parent / target).resolve()
            if not resolved.exists() or ROOT not in resolved.parents:
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not broken, broken


def test_no_page_sends_the_reader_outside_the_clone_and_the_design_is_linked():
    for page in _pages():
        assert "../shared" not in page.read_text(), page
    readme = (ROOT / "README.md").read_text()
    assert "(docs/design.md)" in readme and "(docs/extending.md)" in readme
    assert len(readme.splitlines()) <= 200  # quick start, concepts, how-to; the reference lives in docs/
    design = (ROOT / "docs" / "design.md").read_text()
    for package in ("testbed", "inference", "protocol", "storage", "runs", "studies", "analysis", "report", "cli"):
        assert f"`{package}/`" in design, package  # every package has its row
