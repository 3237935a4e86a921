"""The calibrated index on judge data that breaks its assumptions: no precise-looking result from a
degenerate fit, per-judge warnings where identification fails, quiet on a realistic table with nothing
wrong. The failure modes come from the independent simulator (benchmarks/stats/simulator.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dualjudge.analysis.pointwise.self_preference import self_preference
from dualjudge.analysis.shared.table import validate

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks" / "stats"))
from simulator import failure_scenarios, realistic_null, simulate  # noqa: E402

RESAMPLES = 100
SCENARIOS = {s.name: s for s in failure_scenarios()}


def _analyse(name: str, seed: int = 0, **overrides: object) -> tuple[dict, dict]:
    from dataclasses import replace

    sc = replace(SCENARIOS[name], **overrides) if overrides else SCENARIOS[name]
    frame, truth = simulate(sc, seed)
    return self_preference(validate(frame, "simulated"), seed=seed, n_resamples=RESAMPLES), truth


def _judges(result: dict, outcome: str = "overall") -> dict[str, dict]:
    return {e["judge"]: e for e in result[outcome]["judges"]}


def _no_degenerate_interval(result: dict) -> None:
    """No identified judge has a zero-width interval or p = 0, on either outcome."""
    for outcome in ("overall", "equivalent"):
        for e in result[outcome]["judges"]:
            if e["identified"]:
                assert e["ci_high"] - e["ci_low"] > 1e-6, e
                assert e["p"] is None if e.get("widened") else e["p"] >= 1 / (RESAMPLES + 1), e
                assert e["p_adjusted"] >= e["p"] if not e.get("warned") else e["p_adjusted"] is None, e


@pytest.mark.parametrize("seed", [0, 1])
def test_a_realistic_table_with_nothing_wrong_gets_no_warning(seed):
    frame, _ = simulate(realistic_null(), seed)
    result = self_preference(validate(frame, "simulated"), seed=seed, n_resamples=RESAMPLES)
    for outcome in ("overall", "equivalent"):
        assert all(e["identified"] and e["warnings"] == [] for e in result[outcome]["judges"])
        assert result[outcome]["correlated_pairs"] == []
    _no_degenerate_interval(result)


def test_a_constant_judge_is_not_identified_and_the_others_keep_real_intervals():
    result, truth = _analyse("a constant judge (always 10)")
    judges = _judges(result)
    assert not judges["gemma-12b"]["identified"] and "gives every answer the same score" in judges["gemma-12b"]["reason"]
    for name, e in judges.items():
        if name != "gemma-12b":
            assert e["identified"] and e["ci_low"] <= truth["overall"][name]["estimate"] <= e["ci_high"]
    _no_degenerate_interval(result)


def test_a_family_judged_only_by_a_judge_that_does_not_track_quality_is_not_identified():
    """Three judges, two of one vendor, the third almost uncorrelated with them (the shape of a real public
    self-preference table): the vendor's judges are measured against noise, so no estimate is printed."""
    result, _ = _analyse("three judges, two of one vendor, one almost uncorrelated")
    judges = _judges(result)
    for name in ("gpt-4", "gpt-3.5"):
        assert not judges[name]["identified"] and judges[name]["estimate"] is None
        assert "hardly track quality" in judges[name]["reason"] and "llama-2" in judges[name]["reason"]
    _no_degenerate_interval(result)


def test_a_judge_at_the_boundary_is_reported_never_estimated():
    """A judge whose scores are the quality itself drives the fit to a boundary (Heywood) solution: it is
    not identified, with the reason in words, and the others' intervals still have width."""
    frame, _ = simulate(realistic_null(), 3)
    exact = frame["judge_model"] == "qwen-7b"
    source = frame["judge_model"] == "gemma-12b"  # the simulator writes each judge's rows in the same answer order
    for column in ("overall", "quality_status"):
        frame.loc[exact, column] = frame.loc[source, column].to_numpy()  # qwen copies gemma: no noise of its own
    result = self_preference(validate(frame, "simulated"), n_resamples=RESAMPLES, outcomes=("overall",))
    judges = _judges(result)
    stopped = [j for j, e in judges.items() if not e["identified"]]
    assert stopped and all(
        "boundary solution" in judges[j]["reason"]
        or "same score" in judges[j]["reason"]
        or judges[j]["reason"].startswith("merged with")  # a copy is merged before fitting
        for j in stopped
        if j in ("qwen-7b", "gemma-12b")
    )
    assert all(e["warnings"] for e in judges.values() if e["identified"]) or any(
        " merged with " in w for w in result["overall"]["warnings"]
    )  # the copy is named to the others
    for e in judges.values():
        if e["identified"]:
            assert e["se"] > 1e-3


def test_two_judges_fix_the_scales_and_say_so():
    result, truth = _analyse("two judges only")
    for outcome in ("overall", "equivalent"):
        assert any("two judges cannot pin" in w for w in result[outcome]["warnings"])
        for name, e in _judges(result, outcome).items():
            assert e["identified"] and any("two judges cannot pin" in w for w in e["warnings"])
            assert e["ci_low"] <= truth[outcome][name]["estimate"] <= e["ci_high"]


def _left_out_estimates(name: str, members: list[str], seed: int = 0) -> dict[str, list[float]]:
    """Each judge's point estimate with each member of a pair left out (what the pair warning shows)."""
    from dualjudge.analysis.pointwise.grid import build_grid
    from dualjudge.analysis.pointwise.self_preference import point_estimates

    frame, _ = simulate(SCENARIOS[name], seed)
    frame = validate(frame, "simulated")
    out: dict[str, list[float]] = {}
    for gone in members:
        for judge, v in point_estimates(build_grid(frame[frame["judge_model"] != gone], "overall", "family")).items():
            if judge != gone and v is not None:
                out.setdefault(judge, []).append(v)
    return out


def test_correlated_judges_are_named_and_warn_only_the_judges_whose_estimate_they_move():
    """A pair warns a judge where leaving a member out moves its estimate beyond its interval; a judge it does not
    move carries no warning, so a warning is never the same five lines on every judge."""
    name = "correlated judges (60% shared noise)"
    result, _ = _analyse(name)
    pairs = result["overall"]["correlated_pairs"]
    assert pairs and not pairs[0]["copied"]
    named = set(pairs[0]["judges"])
    assert named in ({"gemma-12b", "qwen-7b"}, {"llama-11b", "pixtral-12b"})  # four judges: a pair or its mirror
    left_out = _left_out_estimates(name, sorted(named))
    for e in _judges(result).values():
        warned = any("move together beyond what one quality dimension allows" in w for w in e["warnings"])
        if warned:
            assert "without " in " ".join(e["warnings"]) and e["warned"]
        else:  # not warned: every left-out estimate lies inside its interval
            assert all(e["ci_low"] <= v <= e["ci_high"] for v in left_out.get(e["judge"], [])), e


def test_a_judge_entered_twice_is_merged_with_its_twin_in_one_line():
    result, _ = _analyse("a judge entered twice (copied)")
    merged = [w for w in result["overall"]["warnings"] if " merged with " in w]
    assert merged == [w for w in merged if w.startswith("qwen-7b-copy merged with qwen-7b before fitting")] and merged
    assert _judges(result)["qwen-7b-copy"]["reason"].startswith("merged with qwen-7b")
    assert not result["overall"]["correlated_pairs"]  # fitted once, the copy leaves no excess behind


def test_verdicts_missing_on_the_judges_own_low_scores_carry_a_sensitivity_analysis():
    result, _ = _analyse("missing on the judge's own low scores")
    for outcome in ("overall", "equivalent"):
        judges = _judges(result, outcome)
        for name in ("gemma-12b", "llama-11b"):
            text = " ".join(judges[name]["warnings"])
            assert f"{name} misses" in text and "filled in below the model's prediction" in text
            assert "the conclusion changes" in text or "the conclusion holds" in text
        assert not any("misses" in w for w in judges["pixtral-12b"]["warnings"])


def test_shared_taste_is_flagged_on_both_outcomes():
    """The pair is named on both outcomes (the binary verdict may hide it), and it warns the judges it moves."""
    result, _ = _analyse("shared taste (two quality dimensions)")
    pairs = [set(p["judges"]) for o in ("overall", "equivalent") for p in result[o]["correlated_pairs"]]
    assert {"llama-11b", "qwen-7b"} in pairs
    for outcome in ("overall", "equivalent"):
        assert any(any("llama-11b and qwen-7b" in w for w in e["warnings"]) for e in _judges(result, outcome).values()), outcome


def test_family_labels_that_differ_only_in_case_are_warned_about(cli, tmp_path):
    frame, _ = simulate(realistic_null(), 0)
    frame.loc[frame["judge_model"] == "qwen-7b", "judge_family"] = "Qwen"
    frame["overall"] = frame["overall"] * 10  # a 0-100 table
    frame["equivalent"] = frame["equivalent"].astype("float")  # 1.0 / 0.0 with blanks, as pandas writes it
    path = tmp_path / "foreign.csv"
    frame.to_csv(path, index=False)
    code, _, err = cli("stats", "self-preference", str(path), "--resamples", str(RESAMPLES))
    assert code == 2 and "--scale-max" in err
    code, out, err = cli("stats", "self-preference", str(path), "--resamples", str(RESAMPLES), "--scale-max", "100")
    assert code == 0, err
    assert "labelled 'Qwen' as a judge and 'qwen' as a system model" in out
    assert "matches no system family, but 'qwen' does apart from case" in out


def test_zero_one_floats_with_blanks_read_as_booleans():
    frame = pd.DataFrame(
        {
            "item_id": ["a", "a", "b", "b"],
            "system_model": ["s"] * 4,
            "judge_model": ["j", "k"] * 2,
            "equivalent": [1.0, 0.0, np.nan, 1.0],
        }
    )
    table = validate(frame)
    assert table["equivalent"].tolist()[:2] == [True, False] and table["equivalent"].isna().tolist() == [False, False, True, False]
    with pytest.raises(Exception, match="must be boolean, found 0.5"):
        validate(frame.assign(equivalent=[1.0, 0.5, np.nan, 1.0]))


def test_only_the_pair_whose_removal_clears_the_excess_is_named():
    """Five judges, two of which share noise: the model pulls the latent quality toward the pair, and the
    other three judges' residuals then move together as well (three spurious pairs, which the warning
    used to name beside the right one). Only the pair whose leaving out clears the excess is named."""
    from dataclasses import replace

    import simulator

    five = replace(
        SCENARIOS["correlated judges (60% shared noise)"],
        judges={**simulator.FOUR, "mistral-7b": "mistral"},
        affected=(*simulator.FOUR, "mistral-7b"),
    )
    for seed in range(3):
        frame, _ = simulate(five, seed)
        result = self_preference(validate(frame, "simulated"), seed=seed, n_resamples=RESAMPLES)
        for outcome in ("overall", "equivalent"):
            named = [sorted(p["judges"]) for p in result[outcome]["correlated_pairs"]]
            assert named in ([["gemma-12b", "qwen-7b"]], []), (seed, outcome, named)
        assert [sorted(p["judges"]) for p in result["overall"]["correlated_pairs"]] == [["gemma-12b", "qwen-7b"]]
