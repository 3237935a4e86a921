"""The calibrated system leaderboard (`dualjudge stats systems`, summary.json `systems`, the report's
"Which system is best") against planted truths from the independent simulator: a small, fixed-seed
version of benchmarks/stats/system_ranking.py, the CLI contract on foreign tables, and the demo's
simulated table."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dualjudge.analysis.board.leaderboard import leaderboard
from dualjudge.analysis.shared.table import validate
from dualjudge.analysis.simulated.simulate import simulate as quick_table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks" / "stats"))
from simulator import FOUR, Scenario, simulate, system_scenarios, system_truth  # noqa: E402

SCENARIOS = {s.name: s for s in system_scenarios()}
ROW = {"group", "estimate", "ci_low", "ci_high", "rank", "rank_low", "rank_high", "p_best"}
CHANGE = {"higher", "lower", "ranking", "difference", "ci_low", "ci_high"}


def _boards(sc: Scenario, seed: int, resamples: int = 150, outcome: str = "overall") -> dict:
    frame, _ = simulate(sc, seed)
    return leaderboard(validate(frame, "simulated"), outcome, n_resamples=resamples, seed=seed)


def _order(rows: list[dict]) -> list[str]:
    return [r["group"] for r in rows]


def test_one_strong_self_preferring_judge_turns_the_naive_ranking_and_the_calibrated_one_stays_right():
    sc = replace(SCENARIOS["one strong self-preferring judge"], n_signs=20)
    truth = system_truth(sc)["overall"]["system_model"]
    true_order = sorted(truth, key=lambda g: -truth[g])
    assert true_order == ["gemma-12b", "pixtral-12b", "qwen-7b", "llama-11b"]
    for seed in (0, 1):
        board = _boards(sc, seed)["system_model"]
        assert board["estimable"] and _order(board["rows"]) == true_order
        naive = _order(board["naive"])
        assert naive.index("qwen-7b") < naive.index("gemma-12b")  # qwen-7b's own judge lifts it above the best
        turned = [c for c in board["changes"] if c["ranking"] == "naive"]
        assert {(c["higher"], c["lower"]) for c in turned} >= {("gemma-12b", "qwen-7b")}
        c = next(c for c in turned if c["higher"] == "gemma-12b")
        assert 0 < c["ci_low"] < c["difference"] < c["ci_high"]
        assert c["sentence"].startswith(
            "the naive panel (mean of every verdict) ranks qwen-7b above gemma-12b; with "
            "the judges' biases taken out gemma-12b is ahead by"
        )
        # without qwen-7b's own verdicts the naive panel is right again: self-exclusion is not wrong here
        assert not [c for c in board["changes"] if c["ranking"] == "self_excluded"]
        top = board["rows"][0]
        assert top["rank"] == top["rank_low"] == 1 and top["p_best"] > 0.9
        assert board["sensitivity"]["leave_outs"] == 8 and board["sensitivity"]["top_changes"] == 0


def test_agreeing_unbiased_judges_give_the_naive_order_and_no_ranking_changes():
    quiet = {j: 0.3 for j in FOUR}
    sc = replace(
        SCENARIOS["agreeing judges, no bias"],
        noise=quiet,
        n_signs=15,
        quality={"qwen-7b": 0.0, "gemma-12b": 0.6, "llama-11b": -0.6, "pixtral-12b": 1.2},
        strategies={"sa": 0.0, "cot": 0.5},
    )
    boards = _boards(sc, 3)
    for by in ("system_model", "system"):
        b = boards[by]
        assert _order(b["rows"]) == _order(b["naive"]) == _order(b["self_excluded"]), by
        assert b["changes"] == [] and b["warnings"] == [], by
        assert all(_order(rows) == _order(b["rows"]) for rows in b["judges"].values())
    assert _order(boards["system_model"]["rows"]) == ["pixtral-12b", "gemma-12b", "qwen-7b", "llama-11b"]


def test_scores_differences_and_rank_intervals_cover_the_planted_truth():
    """Fixed seeds, so the counts are exact; the benchmark measures coverage on many more datasets."""
    sc = replace(SCENARIOS["leniency, scales and self-preference"], n_signs=15)
    covered: dict[str, list[bool]] = {"score": [], "difference": [], "rank": []}
    wrong_pairs = 0
    for seed in range(4):
        truth = system_truth(sc)["overall"]
        boards = _boards(sc, seed)
        for by in ("system_model", "system"):
            t, b = truth[by], boards[by]
            ranks = {g: 1 + sum(w > v for w in t.values()) for g, v in t.items()}
            covered["score"] += [r["ci_low"] <= t[r["group"]] <= r["ci_high"] for r in b["rows"]]
            covered["rank"] += [r["rank_low"] <= ranks[r["group"]] <= r["rank_high"] for r in b["rows"]]
            covered["difference"] += [d["ci_low"] <= t[d["higher"]] - t[d["lower"]] <= d["ci_high"] for d in b["differences"]]
            est = {r["group"]: r["estimate"] for r in b["rows"]}
            wrong_pairs += sum(est[g] <= est[h] for g in t for h in t if t[g] - t[h] > 0.3)
            if b["settled"]:  # P(best) only where no refit puts another group first
                assert abs(sum(r["p_best"] for r in b["rows"]) - 1) < 1e-9
            else:
                assert all(r["p_best"] is None for r in b["rows"]) and b["unsettled"]
            assert all(r["rank_low"] <= r["rank"] <= r["rank_high"] for r in b["rows"])
    assert np.mean(covered["score"]) >= 0.9 and np.mean(covered["difference"]) >= 0.9
    assert all(covered["rank"]) and wrong_pairs == 0


def test_two_judges_of_two_families_give_no_calibrated_ranking_and_say_why(cli, tmp_path):
    """The demo's real run: each judge's own-family effect and its family's quality are one unknown."""
    sc = Scenario(
        "two by two", {"a-m": "a", "b-m": "b"}, {"a-m": "a", "b-m": "b"}, {"a-m": 0.2, "b-m": 0.0}, n_signs=8, items_per_sign=4
    )
    frame, _ = simulate(sc, 0)
    path = tmp_path / "two.csv"
    frame.to_csv(path, index=False)
    code, out, err = cli("stats", "systems", str(path), "--json", "--resamples", "100")
    assert code == 0, err
    result = json.loads(out)
    assert result["rows"] == [] and not result["estimable"] and "cannot separate" in result["reason"]
    assert [r["group"] for r in result["naive"]] and result["changes"] == []
    assert any("no calibrated ranking" in w for w in result["warnings"])


def _contract(result: dict, by: str, outcome: str) -> None:
    assert {"outcome", "by", "unit", "rows", "naive", "self_excluded", "changes", "warnings"} <= set(result)
    assert result["outcome"] == outcome and result["by"] == by
    assert result["unit"] == ("points" if outcome == "overall" else "probability")
    assert all(set(r) == ROW for r in result["rows"])
    assert all(set(r) == {"group", "estimate", "rank"} for r in result["naive"] + result["self_excluded"])
    assert all(CHANGE <= set(c) for c in result["changes"])
    assert [r["rank"] for r in result["rows"]] == sorted(r["rank"] for r in result["rows"])


@pytest.mark.parametrize("by", ["system_model", "system", "both"])
@pytest.mark.parametrize("outcome", ["overall", "equivalent"])
def test_the_cli_contract_on_a_table_from_the_analysis_simulator(cli, tmp_path, by, outcome):
    path = tmp_path / "t.csv"
    quick_table(n_signs=8, items_per_sign=4, repeats=1, seed=2).to_csv(path, index=False)
    code, out, err = cli(
        "stats", "systems", str(path), "--by", by, "--outcome", outcome, "--json", "--resamples", "100", "--seed", "5"
    )
    assert code == 0, err
    result = json.loads(out)
    _contract(result, by, outcome)
    groups = {"system_model": 5, "system": 4, "both": 20}[by]
    assert len(result["rows"]) == len(result["naive"]) == groups
    if by == "both":
        assert all(" / " in r["group"] for r in result["rows"])
    again = json.loads(
        cli("stats", "systems", str(path), "--by", by, "--outcome", outcome, "--json", "--resamples", "100", "--seed", "5")[1]
    )
    assert again == result  # the same seed, the same numbers


def test_the_cli_contract_on_foreign_tables(cli, tmp_path):
    """Tables made elsewhere: only the required columns (no signs, no families, no strategy), and another scale."""
    sim = quick_table(n_signs=6, items_per_sign=7, repeats=1, seed=3)
    minimal = sim[["item_id", "system_model", "judge_model", "overall", "equivalent"]].assign(
        item_id=sim["item_id"] + "_" + sim["system"] + "_" + sim["repeat"].astype(str)
    )
    path = tmp_path / "minimal.csv"
    minimal.to_csv(path, index=False)
    code, out, err = cli("stats", "systems", str(path), "--json", "--resamples", "100")
    assert code == 0, err
    result = json.loads(out)
    _contract(result, "system_model", "overall")
    assert len(result["rows"]) == 5
    five = sim.assign(**{c: sim[c] / 2 for c in ("overall", "accuracy", "completeness", "relevance")})
    path = tmp_path / "five.csv"
    five.to_csv(path, index=False)
    code, out, err = cli("stats", "systems", str(path), "--json", "--resamples", "100", "--scale-max", "5")
    assert code == 0, err
    result5 = json.loads(out)
    _contract(result5, "system_model", "overall")
    assert all(r["estimate"] <= 5 for r in result5["rows"])
    code, out, err = cli("stats", "systems", str(tmp_path / "nothing.csv"), "--json")
    assert code == 2 and "not found" in err and out == ""


def test_a_table_with_two_judge_variants_is_ranked_by_the_one_asked_for(cli, tmp_path):
    sim = quick_table(n_signs=6, items_per_sign=4, repeats=1, seed=4)
    harsh = sim.assign(judge_variant="rubric", overall=(sim["overall"] - 1).clip(lower=0))
    path = tmp_path / "variants.csv"
    pd.concat([sim.assign(judge_variant="holistic"), harsh]).to_csv(path, index=False)
    h = json.loads(cli("stats", "systems", str(path), "--json", "--resamples", "100")[1])
    r = json.loads(cli("stats", "systems", str(path), "--json", "--resamples", "100", "--variant", "rubric")[1])
    assert h["judge_variant"] == "holistic" and r["judge_variant"] == "rubric"
    assert any("other judge variants (rubric)" in w for w in h["warnings"])
    assert r["naive"][0]["estimate"] < h["naive"][0]["estimate"]
    code, _, err = cli("stats", "systems", str(path), "--variant", "nope")
    assert code == 2 and "no judge variant 'nope'" in err


def test_answers_with_one_verdict_are_left_out_and_said_to_be():
    frame = validate(quick_table(n_signs=6, items_per_sign=4, repeats=1, seed=1), "t")
    weak = frame["system_model"] == "meta-j"
    drop = weak & (frame["judge_model"] != "google-j") & (frame["item_id"].str.endswith("_i0"))
    frame.loc[drop, "quality_status"] = "parse_failure"
    frame.loc[drop, "overall"] = np.nan
    board = leaderboard(frame, "overall", n_resamples=100)["system_model"]
    assert any(w.startswith("meta-j: ") and "fewer than two overall verdicts" in w for w in board["warnings"])


def test_the_shipped_simulated_table_is_what_the_simulator_makes():
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "simulated" / "make.py"), "--check"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_simulated_tables_report_says_so_and_shows_the_planted_truth(cli, tmp_path):
    out = tmp_path / "sim"
    code, _, err = cli(
        "analyze", str(ROOT / "benchmarks" / "simulated" / "cross-family.parquet"), "--out", str(out), "--resamples", "200"
    )
    assert code == 0, err
    md = (out / "report.md").read_text()
    assert md.splitlines()[0].startswith("# dualjudge report: SIMULATED DATA")
    assert "**These data are simulated**" in md and "qwen-7b +1.6" in md
    section = md[md.index("## Which system is best") : md.index("## Strategies")]
    assert "planted overall (this sample)" in section and "Ranking change: the naive panel" in section
    summary = json.loads((out / "summary.json").read_text())
    planted = summary["simulation"]["truth_systems"]["overall"]["system_model"]
    rows = summary["systems"]["overall"]["system_model"]["rows"]
    assert [r["group"] for r in rows] == sorted(planted, key=lambda g: -planted[g])
    assert all(abs(r["estimate"] - planted[r["group"]]) < 0.1 for r in rows)
    assert (out / "figures" / "systems.png").is_file()
    findings = md[md.index("## Findings") : md.index("## Which system is best")]
    assert "Best system model with the judges' biases taken out: gemma-12b" in findings
    assert "the naive panel puts qwen-7b first" in findings


def test_a_damaged_planted_file_is_a_one_line_error(cli, tmp_path):
    path = tmp_path / "t.csv"
    quick_table(n_signs=4, items_per_sign=2, repeats=1).to_csv(path, index=False)
    (tmp_path / "planted.json").write_text("{not json")
    code, _, err = cli("analyze", str(path), "--out", str(tmp_path / "a"), "--resamples", "100")
    assert code == 2 and "planted.json: unreadable planted truth" in err and len(err.strip().splitlines()) == 1


def test_each_judge_variant_has_its_own_leaderboard_in_the_summary_and_report(cli, tmp_path):
    sim = quick_table(n_signs=6, items_per_sign=4, repeats=1, seed=4)
    rubric = sim.assign(
        judge_variant="rubric",
        overall=np.where(sim["system_model"] == "meta-j", (sim["overall"] + 3).clip(upper=10), sim["overall"]),
    )
    path = tmp_path / "variants.csv"
    pd.concat([sim.assign(judge_variant="holistic"), rubric]).to_csv(path, index=False)
    code, out, err = cli("analyze", str(path), "--out", str(tmp_path / "a"), "--resamples", "100")
    assert code == 0, err
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    holistic = summary["systems"]["overall"]["system_model"]["rows"]
    other = summary["variants"]["rubric"]["systems"]["overall"]["system_model"]["rows"]
    assert other[0]["group"] == "meta-j" != holistic[0]["group"]  # every rubric judge lifts meta-j: its quality
    assert f"Best system model with the judges' biases taken out: {holistic[0]['group']}," in " ".join(out.split())  # the reference
    md = (tmp_path / "a" / "report.md").read_text()
    assert md.index("## Judge variant: rubric") < md.index("### Which system is best", md.index("## Judge variant: rubric"))
