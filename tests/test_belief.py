"""The index decomposed (issue 54): a judge's favour for its own family told apart from agreement with its own
answer, and split into harmful and legitimate parts. Tables come from the independent simulator
(benchmarks/stats/simulator.py, belief_scenarios)."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dualjudge.analysis.pointwise.belief import judge_beliefs
from dualjudge.analysis.pointwise.self_preference import self_preference
from dualjudge.analysis.shared.results import SelfPreference
from dualjudge.analysis.shared.table import validate
from dualjudge.report.self_preference import section

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks" / "stats"))
from simulator import belief_scenarios, simulate  # noqa: E402

SCENARIOS = {s.name: s for s in belief_scenarios()}
AGREEMENT_ONLY = SCENARIOS["agreement with the judge's own answer only"]
RESAMPLES = 100


def _analyse(frame: pd.DataFrame, outcomes: tuple[str, ...] = ("overall",)) -> dict:
    return self_preference(validate(frame, "simulated"), n_resamples=RESAMPLES, outcomes=outcomes)  # type: ignore[arg-type]


def test_agreement_with_the_judges_own_answer_is_not_taken_for_self_preference():
    """Judges that favour answers sharing their own label, with no own-family term: the index finds significant
    self-preference for every judge; held fixed for agreement, every estimate is near 0 and covers it, and the
    report says that what looked like self-preference is agreement with its own answers."""
    frame, truth = simulate(AGREEMENT_ONLY, 2)
    result = _analyse(frame)
    judges = result["overall"]["judges"]
    assert len(judges) == 5 and result["overall"]["belief_reason"] is None and result["overall"]["belief_gold"]
    for e in judges:
        assert truth["overall"][e["judge"]]["controlled"] == 0.0
        assert e["estimate"] > 0.25 and e["ci_low"] > 0 and e["p_adjusted"] < 0.05  # today's index: a false finding
        b = e["belief"]
        c = b["controlled"]
        assert abs(c["estimate"]) < 0.2 and c["ci_low"] <= 0 <= c["ci_high"], (e["judge"], c)
        assert b["explained"]["ci_low"] > 0  # agreement explains a part of the index that is not noise
        assert b["agreement"]["estimate"] > 0.5  # the planted favour for answers sharing its label (0.9 to 1.5)
        assert b["source"] == "model" and b["items"] == 300
    md = "\n".join(section(SelfPreference.model_validate(result)))
    assert "#### Self-preference or agreement with the judge's own answer?" in md
    assert sum("what looks like self-preference is agreement with its own answers" in line for line in md.splitlines()) >= 3


def test_an_own_family_term_beyond_agreement_and_a_harmful_only_term_are_recovered():
    frame, truth = simulate(SCENARIOS["an own-family term beyond agreement"], 3)
    for e in _analyse(frame)["overall"]["judges"]:
        c, planted = e["belief"]["controlled"], truth["overall"][e["judge"]]["controlled"]
        assert c["ci_low"] <= planted <= c["ci_high"], (e["judge"], c, planted)
        assert e["estimate"] > planted + 0.2  # the index adds agreement on top
    frame, truth = simulate(SCENARIOS["an own-family term only where the judge's own answer is wrong"], 3)
    for e in _analyse(frame)["overall"]["judges"]:
        b, planted = e["belief"], truth["overall"][e["judge"]]
        assert b["harmful"]["ci_low"] <= planted["harmful"] <= b["harmful"]["ci_high"], (e["judge"], b["harmful"], planted)
        assert b["legitimate"]["ci_low"] <= planted["legitimate"] <= b["legitimate"]["ci_high"], e["judge"]
        assert planted["legitimate"] == 0.0
        if planted["harmful"] > 0.5:
            assert b["harmful"]["ci_low"] > 0  # a planted harmful term is found


def test_a_table_without_labels_says_the_control_cannot_be_made(cli, tmp_path):
    frame, _ = simulate(AGREEMENT_ONLY, 0)
    frame = frame.drop(columns=["predicted_category", "category"])
    result = _analyse(frame)
    reason = result["overall"]["belief_reason"]
    assert reason and "carry no final label" in reason
    assert all(e["belief"] is None for e in result["overall"]["judges"])
    md = "\n".join(section(SelfPreference.model_validate(result)))
    assert f"The control cannot be made: {reason}." in md
    table = tmp_path / "t.csv"
    frame.to_csv(table, index=False)
    code, out, err = cli("stats", "self-preference", str(table), "--resamples", str(RESAMPLES))
    assert code == 0, err
    assert "agreement with the judge's own answer not held fixed: the answers carry no final label" in " ".join(out.split())


def test_a_judge_that_never_answered_is_named_and_left_out_and_a_family_answer_stands_in():
    """A judge model that is no system: where a model of its family answered, that family's answers give its own
    label; where none did, it is named in one line and left out of the decomposition."""
    frame, _ = simulate(AGREEMENT_ONLY, 0)
    extra = frame[frame["judge_model"] == "qwen-7b"].copy()
    extra["judge_model"], extra["judge_family"], extra["judge_base_llm"] = "qwen-72b", "qwen", "qwen"
    lone = frame[frame["judge_model"] == "phi-4"].copy()
    lone["judge_model"], lone["judge_family"], lone["judge_base_llm"] = "claude", "anthropic", "anthropic"
    result = _analyse(pd.concat([frame, extra, lone], ignore_index=True))
    out = result["overall"]
    assert out["never_answered"] == ["claude"]
    judges = {e["judge"]: e for e in out["judges"]}
    assert judges["qwen-72b"]["belief"]["source"] == "family"
    assert judges["claude"]["belief"]["controlled"] is None and "never answered" in judges["claude"]["belief"]["reason"]
    md = "\n".join(section(SelfPreference.model_validate(result)))
    assert "left out of the decomposition: claude." in md


def test_own_labels_are_the_judges_majority_and_on_an_even_split_each_tied_label():
    rows = []
    answers = {"a": ["x", "x", "y"], "b": ["y", "z"], "c": ["z"]}  # a: x wins 2-1; b: an even split; c: wrong
    for item, labels in answers.items():
        for r, label in enumerate(labels):
            rows.append(
                {"item_id": item, "repeat": r, "system_model": "j", "judge_model": "k", "overall": 5.0, "category": "x"}
                | {"predicted_category": label}
            )
    frame = validate(pd.DataFrame(rows))
    beliefs = judge_beliefs(frame, ["j"], {"j": "j"}, "family")
    a, b, c = (f"table\x1f{i}" for i in "abc")
    assert beliefs.label["j"] == {a: frozenset("x"), b: frozenset("yz"), c: frozenset("z")} and beliefs.split["j"] == 1
    assert beliefs.wrong["j"] == {a: False, b: True, c: True}  # gold x: b's tied labels are both wrong


def test_own_family_answers_that_always_share_the_judges_label_cannot_be_told_apart():
    """Every other family always gives a label its own answers never give: an own-family answer and an answer
    sharing the judge's label are one thing, so the controlled estimate is not given, with the reason."""
    frame, _ = simulate(replace(AGREEMENT_ONLY, accuracy=dict.fromkeys(AGREEMENT_ONLY.accuracy, 1.0)), 0)
    frame = frame.copy()
    other = frame["system_model"] != "qwen-7b"
    frame.loc[other, "predicted_category"] = "elsewhere"  # no other answer ever agrees with qwen-7b
    frame.loc[~other, "predicted_category"] = "right"
    result = _analyse(frame)
    qwen = next(e for e in result["overall"]["judges"] if e["judge"] == "qwen-7b")
    assert qwen["belief"]["controlled"] is None and "cannot be told apart" in qwen["belief"]["reason"]


def test_stats_self_preference_and_summary_json_carry_the_decomposition(cli, tmp_path):
    frame, _ = simulate(AGREEMENT_ONLY, 1)
    table = tmp_path / "t.parquet"
    frame.to_parquet(table, index=False)
    code, out, err = cli("stats", "self-preference", str(table), "--resamples", str(RESAMPLES), "--json")
    assert code == 0, err
    data = json.loads(out)
    code, text, _ = cli("stats", "self-preference", str(table), "--resamples", str(RESAMPLES))
    code, _, err = cli("analyze", str(table), "--out", str(tmp_path / "a"), "--resamples", str(RESAMPLES))
    assert code == 0, err
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())["self_preference"]["overall"]
    md = (tmp_path / "a" / "report.md").read_text()
    for row, kept in zip(data["judges"], summary["judges"]):
        assert row["belief"] == kept["belief"] and row["belief"]["controlled"] is not None
        c = row["belief"]["controlled"]
        said = f"{row['judge']} scores its own family's answers"
        assert said in " ".join(text.split()) and said in md
        assert f"with agreement with its own answers held fixed it is {c['estimate']:+.2f} points" in " ".join(text.split())
        assert f"with agreement with its own answers held fixed it is {c['estimate']:+.2f} points" in md  # findings
    assert np.isfinite([j["belief"]["explained"]["estimate"] for j in data["judges"]]).all()


@pytest.mark.parametrize("outcome", ["equivalent"])
def test_the_binary_outcome_is_decomposed_too(outcome):
    frame, _ = simulate(AGREEMENT_ONLY, 4)
    result = _analyse(frame, (outcome,))
    judges = result[outcome]["judges"]
    controlled = [e["belief"]["controlled"] for e in judges]
    assert all(c is not None for c in controlled)
    assert abs(np.mean([c["estimate"] for c in controlled])) < 0.04  # RMSE 0.031 per judge over 1,000 (RESULTS.md)
    assert sum(c["ci_low"] <= 0 <= c["ci_high"] for c in controlled) >= 4
    assert np.mean([e["estimate"] for e in judges]) > 0.06  # the index: +0.11 on average (RESULTS.md)
