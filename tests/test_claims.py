"""Claims the data support, round two (issue 45): one answer on every surface of the leaderboard, bounds taken
against neutral judges, disconnected designs ranked block by block, copies and duplicate keys, warnings where
they change something, and a board for a table of binary verdicts."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from dualjudge.analysis.board.leaderboard import leaderboard
from dualjudge.analysis.shared.table import validate
from dualjudge.analysis.simulated.simulate import Planted, simulate

TIED = Planted(quality={"qwen-j": 0.3, "qwen-small": -0.4, "google-j": 0.3, "meta-j": -0.2, "mistral-j": 0.0})


def _rebrand(frame: pd.DataFrame, suffix: str) -> pd.DataFrame:
    """The same design under other names: other judges, systems, families, items and signs."""
    out = frame.copy()
    for col in ("system_model", "judge_model", "system_family", "judge_family", "system_base_llm", "judge_base_llm"):
        if col in out:
            out[col] = out[col].astype(str) + suffix
    for col in ("item_id", "sign_code"):
        out[col] = out[col].astype(str) + suffix
    return out


def test_every_surface_gives_one_answer_when_a_refit_moves_the_top(cli, tmp_path):
    """Two best systems planted equal, so leaving out one judge puts the other first: summary.json's rows, the
    report's table and findings, and `stats systems` as text and as JSON all name no best system, show no P(best)
    and no rank interval of 1-1 for the top."""
    table = tmp_path / "t.parquet"
    simulate(TIED, n_signs=12, items_per_sign=7, repeats=2, seed=2).to_parquet(table, index=False)
    code, out, err = cli("analyze", str(table), "--out", str(tmp_path / "a"), "--resamples", "100")
    assert code == 0, err
    board = json.loads((tmp_path / "a" / "summary.json").read_text())["systems"]["overall"]["system_model"]
    assert not board["settled"] and board["unsettled"]
    top = board["rows"][0]
    assert top["p_best"] is None and (top["rank_low"], top["rank_high"]) != (1, 1)  # summary.json
    md = (tmp_path / "a" / "report.md").read_text()
    row = next(line for line in md.splitlines() if line.startswith(f"| system model | {top['group']} |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[4] == "-" and not re.fullmatch(r"1( \[1-1\])?", cells[3])  # the report's table: P(best), rank
    assert "Which system is best is not settled" in md and "Best system model with the judges' biases taken out" not in md
    assert "Which system is best is not settled" in " ".join(out.split())  # analyze's own line
    code, text, _ = cli("stats", "systems", str(table), "--resamples", "100")
    first = next(line for line in text.splitlines() if line.strip().startswith("1. "))
    assert "P(best) -" in first and "rank 1-1" not in first and "the top is not settled" in text  # stats, text
    code, text, _ = cli("stats", "systems", str(table), "--resamples", "100", "--json")
    result = json.loads(text)  # stats, JSON
    assert not result["settled"] and all(r["p_best"] is None for r in result["rows"])
    assert [(r["group"], r["rank_low"], r["rank_high"]) for r in result["rows"]] == [
        (r["group"], r["rank_low"], r["rank_high"]) for r in board["rows"]
    ]
    for c in result["changes"]:  # a change some refit reverses is not stated as settled
        assert c["settled"] == ("not settled" not in c["sentence"])


def test_a_disconnected_design_is_ranked_block_by_block_and_says_so_first(tmp_path, cli):
    """Two tables that share no judge, system or item: each block gets its own board, nothing ranks across them,
    and the report says so in its first lines."""
    a = simulate(Planted(), n_signs=10, items_per_sign=5, repeats=1, seed=0)
    b = _rebrand(simulate(Planted(), n_signs=10, items_per_sign=5, repeats=1, seed=1), "-b")
    table = tmp_path / "two.parquet"
    pd.concat([a, b]).to_parquet(table, index=False)
    boards = leaderboard(validate(pd.concat([a, b]), "two blocks"), n_resamples=100)
    board = boards["system_model"]
    assert not board["estimable"] and board["rows"] == [] and board["naive"] == []
    assert "2 blocks that share no judge, system or item" in board["reason"]
    assert [len(x["board"]["rows"]) for x in board["blocks"]] == [5, 5]
    assert {r["group"] for r in board["blocks"][1]["board"]["rows"]} == {g + "-b" for g in Planted().generators}
    code, _, err = cli("analyze", str(table), "--out", str(tmp_path / "a"), "--resamples", "100")
    assert code == 0, err
    head = "\n".join((tmp_path / "a" / "report.md").read_text().splitlines()[:6])
    assert "This table is 2 disconnected blocks" in head and "never across" in head
    md = (tmp_path / "a" / "report.md").read_text()
    assert "### Block 1" in md and "### Block 2" in md


def test_a_copied_judge_changes_no_board_and_duplicate_keys_are_flagged():
    frame = simulate(Planted(), n_signs=10, items_per_sign=5, repeats=1, seed=3)
    copy = frame[frame["judge_model"] == "google-j"].assign(judge_model="google-j-copy")
    twice = validate(pd.concat([frame, copy]), "copied")
    alone, copied = leaderboard(validate(frame, "alone"), n_resamples=100), leaderboard(twice, n_resamples=100)
    est = {r["group"]: r["estimate"] for r in alone["system_model"]["rows"]}
    assert {r["group"]: r["estimate"] for r in copied["system_model"]["rows"]} == pytest.approx(est)
    assert any(w.startswith("google-j-copy merged with google-j before fitting") for w in copied["system_model"]["warnings"])
    assert any("identical overall verdicts (judges)" in w for w in copied["system_model"]["warnings"])
    declared = leaderboard(validate(frame, "aliased"), n_resamples=100, aliases=(("qwen-j", "qwen-small"),))
    assert any("qwen-j and qwen-small are declared one model" in w for w in declared["system_model"]["warnings"])


def test_a_table_of_binary_verdicts_gets_a_board(cli, tmp_path):
    frame = simulate(Planted(), n_signs=10, items_per_sign=5, repeats=1, seed=4)
    binary = frame.drop(columns=[c for c in ("overall", "accuracy", "completeness", "relevance") if c in frame])
    table = tmp_path / "binary.csv"
    binary.to_csv(table, index=False)
    code, _, err = cli("analyze", str(table), "--out", str(tmp_path / "a"), "--resamples", "100")
    assert code == 0, err
    systems = json.loads((tmp_path / "a" / "summary.json").read_text())["systems"]
    assert systems["equivalent"]["system_model"]["estimable"]
    md = (tmp_path / "a" / "report.md").read_text()
    assert "binary verdicts only" in md and "calibrated equivalent [95% CI]" in md


def _two_families(n_signs: int, items_per_sign: int, seed: int) -> pd.DataFrame:
    """Two judges of two families judging each other's answers, nothing planted: the demo's design."""
    pair = {"qwen-j": "qwen", "google-j": "google"}
    zero = {"qwen-j": 0.0, "google-j": 0.0}
    planted = Planted(judges=pair, generators=pair, leniency=zero, quality=zero, family_bonus=zero)
    return simulate(planted, n_signs=n_signs, items_per_sign=items_per_sign, repeats=1, seed=seed)


def test_every_warning_of_the_board_reaches_the_report_even_without_a_calibrated_ranking(cli, tmp_path):
    """Two judges of two families: no calibrated ranking, and the items each system answered differ in
    difficulty: the warnings summary.json holds are in report.md too."""
    frame = _two_families(n_signs=10, items_per_sign=5, seed=5)
    frame = frame[
        ~((frame["system_model"] == "qwen-j") & (frame["sign_code"].astype(str) < frame["sign_code"].astype(str).min() + "5"))
    ]
    table = tmp_path / "t.csv"
    frame.to_csv(table, index=False)
    code, _, err = cli("analyze", str(table), "--out", str(tmp_path / "a"), "--resamples", "100")
    assert code == 0, err
    board = json.loads((tmp_path / "a" / "summary.json").read_text())["systems"]["overall"]["system_model"]
    assert not board["estimable"] and board["warnings"]
    from dualjudge.report.escape import md_strings
    from dualjudge.report.once import explanations, unfold

    shown = md_strings(json.loads((tmp_path / "a" / "summary.json").read_text()))  # as the report prints it
    md = " ".join(unfold((tmp_path / "a" / "report.md").read_text(), explanations(shown)).split())
    for w in board["warnings"]:
        assert " ".join(w.split())[:60] in md, w


def test_the_report_states_each_reason_once(cli, tmp_path):
    """The demo's design (two judges of two families, two signs): every reason the summary gives for what it
    cannot estimate is printed once and referred to after, however many judges and sections share it."""
    from dualjudge.report.escape import md_strings
    from dualjudge.report.once import explanations, unfold

    frame = _two_families(n_signs=2, items_per_sign=4, seed=6)
    table = tmp_path / "t.csv"
    frame.to_csv(table, index=False)
    code, _, err = cli("analyze", str(table), "--out", str(tmp_path / "a"), "--resamples", "100")
    assert code == 0, err
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    md = (tmp_path / "a" / "report.md").read_text()
    shared = [t for t in explanations(summary) if "\\" not in t and "no chain of neutral judgements" in t]
    assert shared  # the design's reason is among the summary's explanations
    for text in explanations(summary):
        if "\\" not in text and "|" not in text:  # as the report prints it (no Markdown escapes in the text)
            assert md.count(text) <= 1, text
    assert re.search(r"reason \d+, above", md)
    for text in (t for t in shared if t.startswith("no chain")):  # nothing lost: each reference reads as its text
        assert unfold(md, explanations(md_strings(summary))).count(text) > 1, text


def test_the_multivac_table_is_shipped_and_ranked_block_by_block():
    """The real table ships with its licence and provenance, and its board is two blocks, none across."""
    from tests.helpers.processes import ROOT

    folder = ROOT / "benchmarks" / "real" / "multivac"
    assert "MIT License" in (folder / "LICENSE").read_text() and "ba0f7b5" in (folder / "README.md").read_text()
    frame = validate(pd.read_csv(folder / "verdicts.csv"), "multivac")
    assert len(frame) == 21413 and frame["judge_model"].nunique() == 46
    board = leaderboard(frame, n_resamples=20, aliases=(("judge_gpt54", "gpt_5_4"),))["system_model"]
    assert [len(b["judges"]) for b in board["blocks"]] == [32, 14] and board["rows"] == []
    assert any("judge_gpt54 and gpt_5_4 are declared one model" in w for w in board["blocks"][0]["board"]["warnings"])
    first = board["blocks"][0]["board"]
    if not first["settled"]:  # whatever the refits say, the rows say the same
        assert all(r["p_best"] is None for r in first["rows"]) and first["rows"][0]["rank_low"] < first["rows"][0]["rank_high"]
    page = (ROOT / "docs" / "multivac.md").read_text()
    assert "+0.406" in page and "Table 3" in page and "two blocks" in page.lower()
