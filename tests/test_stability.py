"""Stability across repeated judge passes: ICC(1), exact agreement, flips; and the runner's passes."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dualjudge.analysis.reliability.stability import icc1, stability
from dualjudge.studies.job import run_job
from tests.helpers.runs import CONFIG, Recorder, config


def test_icc1_reproduces_shrout_and_fleiss():
    # Shrout & Fleiss (1979), Table 2: 6 targets x 4 judges; their ICC(1,1) = .17
    data = np.array([[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]], float)
    assert icc1(data) == pytest.approx(0.1657, abs=5e-4)
    assert icc1(np.array([[1.0, 1.0], [5.0, 5.0], [9.0, 9.0]])) == pytest.approx(1.0)


def _passes(rows: list[tuple[str, str, int, float]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "variant_id": v,
                "repeat": 0,
                "system_model": "m",
                "strategy": "sa",
                "judge_model": "j",
                "kind": kind,
                "pass_index": k,
                "status": "ok",
                "overall": value if kind == "quality" else None,
                "equivalent": value if kind == "equivalence" else None,
            }
            for v, kind, k, value in rows
        ]
    )


def test_exact_agreement_and_flips_by_hand():
    rows = [
        ("a", "quality", 1, 8.0),
        ("a", "quality", 2, 8.0),  # same: agree, no flip
        ("b", "quality", 1, 7.0),
        ("b", "quality", 2, 7.33),  # differ, and 7.33 > 7 flips good
        ("c", "quality", 1, 3.0),
        ("c", "quality", 2, 4.0),  # differ, no flip (both poor)
        ("a", "equivalence", 1, 1),
        ("a", "equivalence", 2, 0),  # a flip
        ("b", "equivalence", 1, 1),
        ("b", "equivalence", 2, 1),
    ]
    res = stability(_passes(rows))["j"]
    assert res["quality"]["exact_agreement"] == pytest.approx(1 / 3) and res["quality"]["flip_rate"] == pytest.approx(1 / 3)
    assert res["equivalence"]["exact_agreement"] == pytest.approx(1 / 2) and res["equivalence"]["flip_rate"] == 0.5
    assert res["quality"]["passes"] == 2 and res["quality"]["answers"] == 3 and res["equivalence"]["icc1"] is None


def test_a_run_with_passes_judges_every_answer_again_under_seeds_and_reports_stability(tmp_path):
    no_probes = CONFIG.replace("order = true", "order = false").replace("padding = true", "padding = false")
    text = no_probes.replace("[probes]", "passes = 3\npass_temperature = 0.9\n[probes]", 1)
    rec = Recorder()
    result = run_job(config(tmp_path, text), tmp_path / "run", engines=rec)
    assert result.counts["judge_passes"] == {"ok": 48 * 2 * 2 * 3}  # answers x judges x kinds x passes
    pass_requests = [r for e in rec.opened for r in e.requests if r.sampling.temperature == 0.9]
    assert {r.sampling.seed for r in pass_requests} and len({r.sampling.seed for r in pass_requests}) == 3
    passes = pd.read_csv(tmp_path / "run" / "judge_passes.csv", dtype={"sign_code": str})
    assert len(passes) == 48 * 2 * 2 * 3 and passes["sign_code"].notna().all()
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    entry = summary["stability"]["smollm2-135m-instruct"]["quality"]
    assert entry["passes"] == 3 and entry["answers"] == 48
    assert entry["exact_agreement"] == 1.0 and entry["flip_rate"] == 0.0  # the scripted judge ignores the seed
    assert "Stability across repeated judge passes" in (tmp_path / "run" / "report.md").read_text()
    again = run_job(config(tmp_path, text), tmp_path / "run", engines=rec)  # nothing redone
    assert again.report.sessions_requests == 0
