"""Simulated verdict tables with planted effects, for tests and benchmarks.

score = base + judge leniency + generator quality + same-family bonus (per judge) + self bonus
        + sign effect + item effect + noise, clipped to 0-10; equivalence follows the same latent.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dualjudge.analysis.shared.table import table_columns
from dualjudge.protocol.kinds import EQUIVALENCE, QUALITY


@dataclass(frozen=True)
class Planted:
    judges: dict[str, str] = field(
        default_factory=lambda: {"qwen-j": "qwen", "google-j": "google", "meta-j": "meta", "mistral-j": "mistral"}
    )
    generators: dict[str, str] = field(
        default_factory=lambda: {
            "qwen-j": "qwen",
            "qwen-small": "qwen",
            "google-j": "google",
            "meta-j": "meta",
            "mistral-j": "mistral",
        }
    )
    leniency: dict[str, float] = field(default_factory=lambda: {"qwen-j": 0.5, "google-j": -0.3, "meta-j": 0.0, "mistral-j": 0.2})
    quality: dict[str, float] = field(
        default_factory=lambda: {"qwen-j": 0.6, "qwen-small": -0.4, "google-j": 0.3, "meta-j": -0.2, "mistral-j": 0.0}
    )
    family_bonus: dict[str, float] = field(
        default_factory=lambda: {"qwen-j": 0.30, "google-j": 0.30, "meta-j": 0.45, "mistral-j": 0.45}
    )
    self_bonus: float = 0.0


def simulate(
    planted: Planted = Planted(),
    n_signs: int = 30,
    items_per_sign: int = 13,
    repeats: int = 3,
    noise: float = 1.0,
    seed: int = 0,
    labels: bool = False,
) -> pd.DataFrame:
    """The table; with `labels`, each answer's final label is right ("cat") with a probability that rises with its
    quality, else one of two near misses, so the self-preference decomposition has labels to hold fixed."""
    rng = np.random.default_rng(seed)
    sign_effect = rng.normal(0, 0.8, n_signs)
    rows = []
    strategies = ("sa", "cot", "coi", "ma")
    visibilities = (1.0, 0.8, 0.7, 0.5, 0.3, 0.2, 0.1)
    for s in range(n_signs):
        for i in range(items_per_sign):
            item_effect = rng.normal(0, 0.5)
            vis = visibilities[i % len(visibilities)]
            mode = "none" if vis == 1.0 else ("random_block" if i % 2 else "bottom_up")
            for g, gfam in planted.generators.items():
                for r in range(repeats):
                    strategy = strategies[(i + r) % len(strategies)]
                    latent = 6.0 + planted.quality[g] + sign_effect[s] + item_effect + 2.0 * (vis - 0.6)
                    answer_noise = rng.normal(0, 0.5)
                    label = "cat"
                    if labels and rng.random() > 1.0 / (1.0 + np.exp(-(latent + answer_noise - 5.5))):
                        label = "near-miss-a" if rng.random() < 0.5 else "near-miss-b"
                    for j, jfam in planted.judges.items():
                        bonus = (planted.family_bonus[j] if jfam == gfam else 0.0) + (planted.self_bonus if j == g else 0)
                        y = latent + answer_noise + planted.leniency[j] + bonus + rng.normal(0, noise)
                        subs = np.clip(np.rint(y + rng.normal(0, 0.5, 3)), 0, 10).astype(int)
                        rows.append(
                            (
                                f"s{s}_i{i}",
                                f"S{s:02d}",
                                "cat",
                                vis,
                                mode,
                                r,
                                strategy,
                                g,
                                gfam,
                                g,
                                label,
                                True,
                                j,
                                jfam,
                                int(subs[0]),
                                int(subs[1]),
                                int(subs[2]),
                                float(subs.mean()),
                                bool(y + rng.normal(0, 1) > 6.5),
                                "ok",
                                "ok",
                            )
                        )
    cols = [
        "item_id",
        "sign_code",
        "category",
        "visibility",
        "mode",
        "repeat",
        "system",
        "system_model",
        "system_family",
        "system_base_llm",
        "predicted_category",
        "format_ok",
        "judge_model",
        "judge_family",
        "accuracy",
        "completeness",
        "relevance",
        "overall",
        "equivalent",
        QUALITY.status,
        EQUIVALENCE.status,
    ]
    frame = pd.DataFrame(rows, columns=cols)
    frame.insert(0, "run_id", "simulated")
    frame["judge_base_llm"] = frame["judge_family"]
    return frame[[c for c in table_columns() if c in frame.columns]]
