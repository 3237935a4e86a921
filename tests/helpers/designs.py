"""A constructed verdict table: three judges of three families score three systems' answers."""

from __future__ import annotations

import numpy as np
import pandas as pd

JUDGES = (("j_a", "fa"), ("j_b", "fb"), ("j_c", "fc"))


SYSTEMS = (("s_a", "fa"), ("s_b", "fb"), ("s_c", "fc"))


def table(noise: dict[str, float], n_signs: int = 12, items: int = 6, seed: int = 0, missing: float = 0.0) -> pd.DataFrame:
    """Three judges of three families score three systems' answers; each variant's judges add noise of
    its own size to the answer's true quality, so a smaller noise plants a higher agreement."""
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(n_signs):
        for i in range(items):
            for system, sfam in SYSTEMS:
                quality = rng.normal()
                for variant, sd in noise.items():
                    for judge, jfam in JUDGES:
                        if rng.random() < missing:
                            continue
                        score = float(np.clip(np.round(5 + 2 * quality + rng.normal(0, sd)), 0, 10))
                        eq = bool(quality + rng.normal(0, sd) > 0)
                        row = verdict_row(f"{s}_{i}", f"{600 + s}", system, sfam, judge, jfam, score, eq)
                        rows.append({**row, "judge_variant": variant})
    return pd.DataFrame(rows)


def verdict_row(
    item: str, sign: str, system: str, system_family: str, judge: str, judge_family: str, score: float, equivalent: bool
) -> dict[str, object]:
    """One verdict-table row of strategy SA with every sub-score equal to `score` and both verdicts ok."""
    return {
        "run_id": "r",
        "item_id": item,
        "sign_code": sign,
        "category": "c",
        "visibility": 1.0,
        "mode": "none",
        "repeat": 0,
        "system": "sa",
        "system_model": system,
        "system_family": system_family,
        "judge_model": judge,
        "judge_family": judge_family,
        "predicted_category": "c",
        "format_ok": True,
        "accuracy": score,
        "completeness": score,
        "relevance": score,
        "overall": score,
        "equivalent": equivalent,
        "quality_status": "ok",
        "equivalence_status": "ok",
    }
