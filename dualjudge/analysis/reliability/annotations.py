"""The human check's annotations: read and validated against the sample key, then compared with the
judges, as the paper does (r = .81 with the judge's overall, .80 with its accuracy): Pearson, Spearman
and Kendall of the human overall with each judge's overall and with each of its sub-scores; Cohen's
kappa and raw agreement of human vs equivalence judge beside the always-majority baseline; and the
direction of the disagreements. The human overall is the annotator's one 0-10 score; a file that has
only the three sub-scores gets their mean.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from dualjudge.analysis.pointwise.designs import variant_order
from dualjudge.analysis.reliability.agreement import kappa
from dualjudge.analysis.reliability.human import IDENTITY_COLUMNS, OPTIONAL_ANNOTATIONS, SAMPLE_KEY, read_key
from dualjudge.analysis.shared.table import ANSWER_IN_RUN, read_csv, read_table
from dualjudge.errors import DualjudgeError
from dualjudge.files import write_text
from dualjudge.protocol.kinds import EQUIVALENCE, QUALITY

HUMAN_CHECK = "human_check.json"
HUMAN_LABELS = "human_labels.csv"  # the imported labels, one row per sample


def _validate(ann: pd.DataFrame, samples: dict[str, dict[str, Any]], where: str) -> pd.DataFrame:
    wanted = ("sample_id", *IDENTITY_COLUMNS, "annotator", "equivalent")
    missing = [c for c in wanted if c not in ann.columns]
    if "human_overall" not in ann.columns:
        missing += [c for c in OPTIONAL_ANNOTATIONS if c not in ann.columns]
    if missing:
        raise DualjudgeError(
            f"{where}: missing columns {', '.join(missing)} (annotate the CSV that "
            f"`dualjudge human export` wrote: human_overall, or all of accuracy, completeness and "
            f"relevance, and equivalent)"
        )
    absent = [col for col in OPTIONAL_ANNOTATIONS if col not in ann.columns]
    for col in ("human_overall", *OPTIONAL_ANNOTATIONS):
        if col not in ann.columns:
            ann[col] = np.nan
    scores = ["human_overall", *OPTIONAL_ANNOTATIONS, "equivalent"]
    ann = ann[ann[scores].notna().any(axis=1)].copy()
    blank = ann["sample_id"].isna() | (ann["sample_id"].astype(str).str.strip() == "")
    if blank.any():
        raise DualjudgeError(f"{where}: an annotated row has no sample_id")
    unknown = sorted(set(ann["sample_id"].astype(str)) - set(samples))
    if unknown:
        raise DualjudgeError(
            f"{where}: unknown sample ids {', '.join(unknown[:5])}; were these annotations made for another export?"
        )
    for row in ann.itertuples(index=False):
        expected = samples[str(row.sample_id)]
        for col in IDENTITY_COLUMNS:
            got, want = getattr(row, col), expected[col]
            if str(got).strip() != str(want) and not (col == "repeat" and _same_number(got, want)):
                raise DualjudgeError(
                    f"{where}: sample {row.sample_id} has {col} {got!r} but the sample key says "
                    f"{want!r}; these annotations belong to another export, so nothing was imported"
                )
    if ann["annotator"].isna().any():
        raise DualjudgeError(f"{where}: every annotated row needs an annotator")
    dup = ann.duplicated(["sample_id", "annotator"])
    if dup.any():
        r = ann[dup].iloc[0]
        raise DualjudgeError(f"{where}: duplicate row for sample {r['sample_id']} by annotator {r['annotator']}")
    for col in OPTIONAL_ANNOTATIONS:
        values = pd.to_numeric(ann[col], errors="coerce")
        given = ann[col].notna()
        bad = ann[given & (values.isna() | (values < 0) | (values > 10) | (values != values.round()))]
        if len(bad):
            raise DualjudgeError(
                f"{where}: {col} must be an integer 0-10 (sample {bad.iloc[0]['sample_id']}: {bad.iloc[0][col]!r})"
            )
        ann[col] = values
    overall = pd.to_numeric(ann["human_overall"], errors="coerce")
    bad = ann[ann["human_overall"].notna() & (overall.isna() | (overall < 0) | (overall > 10))]
    if len(bad):
        raise DualjudgeError(
            f"{where}: human_overall must be a score 0-10 (sample {bad.iloc[0]['sample_id']}: {bad.iloc[0]['human_overall']!r})"
        )
    subscores = ann[list(OPTIONAL_ANNOTATIONS)]
    ann["human_overall"] = overall.where(overall.notna(), subscores.mean(axis=1).where(subscores.notna().all(axis=1)))
    if ann["human_overall"].isna().any():
        raise DualjudgeError(
            f"{where}: sample {ann[ann['human_overall'].isna()].iloc[0]['sample_id']} has no overall "
            f"score (fill human_overall, or all three sub-scores" + (f"; missing columns {', '.join(absent)})" if absent else ")")
        )
    eq = (
        ann["equivalent"]
        .astype(str)
        .str.strip()
        .str.lower()
        .map({"1": True, "0": False, "true": True, "false": False, "1.0": True, "0.0": False})
    )
    if eq.isna().any():
        raise DualjudgeError(f"{where}: equivalent must be 0 or 1 (sample {ann[eq.isna()].iloc[0]['sample_id']})")
    ann["equivalent"] = eq.astype(bool)
    return ann


def import_annotations(run_dir: Path, annotations: Path) -> dict[str, Any]:
    key_path = run_dir / SAMPLE_KEY
    if not key_path.is_file():
        raise DualjudgeError(f"{run_dir}: no {SAMPLE_KEY}; run `dualjudge human export` first")
    key = read_key(key_path)
    ann = read_csv(
        annotations, {"sample_id": str, "annotator": str, "item_id": str, "system": str, "system_model": str}, "annotation file"
    )
    ann = _validate(ann, key["samples"], str(annotations))
    if ann.empty:
        raise DualjudgeError(f"{annotations}: no annotated rows")
    table = read_table(run_dir / key["table"])
    per_sample = (
        ann.groupby("sample_id")
        .agg(
            human_overall=("human_overall", "mean"),
            human_accuracy=("accuracy", "mean"),
            human_completeness=("completeness", "mean"),
            human_relevance=("relevance", "mean"),
            human_equivalent=("equivalent", "mean"),
        )
        .reset_index()
    )
    per_sample["human_equivalent"] = per_sample["human_equivalent"] >= 0.5  # majority (ties count as equivalent)
    meta = pd.DataFrame([{"sample_id": s, **v} for s, v in key["samples"].items()])
    labels = per_sample.merge(meta, on="sample_id")
    write_text(run_dir / HUMAN_LABELS, labels.to_csv(index=False))
    result = human_check(labels, table, sorted(ann["annotator"].unique()))
    write_text(run_dir / HUMAN_CHECK, json.dumps(result, indent=2))
    return result


def human_check(labels: pd.DataFrame, table: pd.DataFrame, annotators: list[str]) -> dict[str, Any]:
    """The judges against the human labels (one row per sample: human scores and the answer's identity),
    per judge of the reference variant under `judges`, and per judge variant under `by_variant`."""
    merged = labels.merge(table, on=ANSWER_IN_RUN)
    by_variant: dict[str, dict[str, Any]] = {}
    for variant in variant_order(merged["judge_variant"]) if len(merged) else []:
        rows = merged[merged["judge_variant"] == variant]
        by_variant[variant] = {str(judge): _judge_entry(g) for judge, g in rows.groupby("judge_model", sort=True)}
    reference = next(iter(by_variant.values()), {})
    return {
        "n_samples": int(labels["sample_id"].nunique()),
        "annotators": annotators,
        "judges": reference,
        "by_variant": by_variant if len(by_variant) > 1 else {},
    }


def _judge_entry(g: pd.DataFrame) -> dict[str, Any]:
    entry: dict[str, Any] = {}
    q = g[g[QUALITY.status] == "ok"]
    for judge_col in ("overall", "accuracy", "completeness", "relevance"):  # the human overall against each
        entry[judge_col] = _correlations(q["human_overall"], q[judge_col])
    e = g[g[EQUIVALENCE.status] == "ok"]
    h, j = e["human_equivalent"].astype(bool).to_numpy(), e["equivalent"].astype(bool).to_numpy()
    entry["equivalence"] = {
        "kappa": kappa(h, j) if len(e) else None,
        "raw_agreement": float(np.mean(h == j)) if len(e) else None,
        "n": int(len(e)),
        "majority_baseline_agreement": float(max(h.mean(), 1 - h.mean())) if len(e) else None,
        "judge_yes_human_no": int(np.sum(j & ~h)),
        "judge_no_human_yes": int(np.sum(~j & h)),
    }
    diff = q["overall"] - q["human_overall"]
    entry["overall_disagreement"] = {
        "judge_higher": int((diff > 1).sum()),
        "judge_lower": int((diff < -1).sum()),
        "mean_judge_minus_human": float(diff.mean()) if len(diff) else None,
    }
    return entry


def human_check_near(table: Path, frame: pd.DataFrame | None = None) -> dict[str, Any] | None:
    """The human check of this run: recomputed from the imported labels (human_labels.csv beside the
    table) against the table as it is now (judge variants added since the import included), else the
    last `dualjudge human import`'s human_check.json, if any."""
    labels_path, path = table.parent / HUMAN_LABELS, table.parent / HUMAN_CHECK
    try:
        if labels_path.is_file() and frame is not None and path.is_file():
            labels = pd.read_csv(labels_path, dtype={"sample_id": str, "item_id": str, "system": str, "system_model": str})
            return human_check(labels, frame, json.loads(path.read_text())["annotators"])
        if path.is_file():
            found: dict[str, Any] | None = json.loads(path.read_text())
            return found
    except (OSError, ValueError, KeyError):
        return None  # a damaged file: the report says no human check, `human import` rewrites it
    return None


def _same_number(a: object, b: object) -> bool:
    try:
        return float(a) == float(b)  # type: ignore[arg-type]  # any label: float() decides
    except (TypeError, ValueError):
        return False


def _correlations(x: pd.Series, y: pd.Series) -> dict[str, Any]:
    x, y = x.astype(float), y.astype(float)
    if len(x) < 3 or x.nunique() < 2 or y.nunique() < 2:
        return {"pearson": None, "spearman": None, "kendall": None, "n": int(len(x))}
    p, s, k = stats.pearsonr(x, y), stats.spearmanr(x, y), stats.kendalltau(x, y)
    return {
        "pearson": float(p.statistic),
        "pearson_p": float(p.pvalue),
        "spearman": float(s.statistic),
        "spearman_p": float(s.pvalue),
        "kendall": float(k.statistic),
        "kendall_p": float(k.pvalue),
        "n": int(len(x)),
    }
