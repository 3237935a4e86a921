"""A headless browser for pictures and checks of the report's pages: Debian's `chromium` package, found
on PATH (dualjudge never downloads a browser)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

NAMES = ("chromium", "chromium-browser", "google-chrome")
# Offline and quiet: no background networking, sync, component updates or first-run work (on a machine
# without a network chromium otherwise retries its own connections), and a fresh profile each time.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--hide-scrollbars",
    "--allow-file-access-from-files",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def find_chromium() -> str | None:
    return next((path for name in NAMES if (path := shutil.which(name))), None)


def _run(browser: str, args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="dualjudge-chromium-") as profile:
        return subprocess.run(
            [browser, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True, text=True, timeout=timeout, check=False
        )


def screenshot(
    page: Path, png: Path, browser: str, size: tuple[int, int] = (1400, 1800), budget_ms: int = 5000, timeout: float = 120
) -> bool:
    """A PNG of `page` as the browser renders it after its scripts ran; whether it was written."""
    png.unlink(missing_ok=True)
    _run(
        browser,
        [
            f"--window-size={size[0]},{size[1]}",
            f"--virtual-time-budget={budget_ms}",
            f"--screenshot={png.resolve()}",
            page.resolve().as_uri(),
        ],
        timeout,
    )
    return png.is_file() and png.stat().st_size > 0


def dump_dom(url: str, browser: str, budget_ms: int = 10000, timeout: float = 120) -> tuple[str, list[str]]:
    """The page's DOM after its scripts ran (the fragment of `url` included), and the console messages
    the page logged at warning level or above (uncaught errors among them)."""
    budget = [f"--virtual-time-budget={budget_ms}"] if budget_ms else []  # 0: dump at the load event, in real time
    done = _run(browser, ["--enable-logging=stderr", "--v=0", *budget, "--dump-dom", url], timeout)
    console = [line for line in done.stderr.splitlines() if "CONSOLE" in line and ":INFO:" not in line]
    return done.stdout, console
