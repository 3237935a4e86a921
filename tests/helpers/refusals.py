"""A refused command: exit 2, one `error:` line, and nothing it was given changed."""

from __future__ import annotations

import hashlib
from pathlib import Path


def snapshot(*paths: Path) -> dict[str, object]:
    """Bytes of every file and the listing of every folder under the given paths."""
    out: dict[str, object] = {}
    for p in paths:
        if p.is_dir():
            for f in sorted(p.rglob("*")):
                out[str(f)] = hashlib.sha256(f.read_bytes()).hexdigest() if f.is_file() else "dir"
            out[str(p)] = "dir"
        elif p.exists():
            out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
        else:
            out[str(p)] = None
    return out


def refused(cli, args: list[str], needle: str, untouched: list[Path]) -> str:
    """The command exits 2 with one `error:` line containing `needle`, and changes nothing it names."""
    before = snapshot(*untouched)
    code, out, err = cli(*args)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, (args, out, err)
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert needle in lines[0], lines[0]
    assert "Traceback" not in err + out
    assert snapshot(*untouched) == before, f"{args} modified what it was given"
    return lines[0]
