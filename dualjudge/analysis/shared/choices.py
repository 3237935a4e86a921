"""The analysis options' choices, declared once (light to import: the command line types its options
with them, and the analysis modules take them as arguments)."""

from __future__ import annotations

from typing import Literal

Lineage = Literal["family", "base_llm"]  # own family by vendor, or by text backbone
Outcome = Literal["overall", "equivalent"]  # the quality judge's 0-10 overall, the equivalence judge's 0/1
Grouping = Literal["system_model", "system", "both"]  # what the leaderboard ranks: models, strategies, or each pair
Level = Literal["nominal", "ordinal", "interval", "ratio"]  # Krippendorff's alpha level of measurement
Metric = Literal["accuracy", "neg_rmse"]  # the alternative annotator test's alignment score
AltTestKind = Literal["t", "wilcoxon"]  # its per-annotator test: the authors' t-test, or signed-rank for few items

N_RESAMPLES = 2000  # sign-cluster bootstrap resamples, unless the user asks otherwise
MIN_RESAMPLES, MAX_RESAMPLES = 100, 100_000  # fewer give no usable interval
