"""The human check: a stratified, blinded sample for annotation, and its comparison with the judges.

Export (like the paper's 49-row check): one answer per visibility x system cell, then Type II cases
(some judge said "> 7" and "not equivalent"), then answers both judges agree are good, up to n. The
sample carries the gold caption and description, the response and its metadata, and no judge score.
Annotators fill accuracy, completeness, relevance (0-10) and equivalent (0/1), one row per sample and
annotator. Import validates and compares: Pearson and Spearman of human overall with each judge's
overall and sub-scores; Cohen's kappa and raw agreement of human vs equivalence judge; and the
direction of the disagreements.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from dualjudge.analysis.agreement import kappa
from dualjudge.analysis.dual_judge import both_rows
from dualjudge.analysis.table import read_csv, read_table
from dualjudge.errors import DualjudgeError
from dualjudge.files import check_output_file, replacing, write_text
from dualjudge.protocol.seeds import seeded_rank
from dualjudge.protocol.verdicts import GOOD
from dualjudge.testbed.catalogue import default_catalogue

SAMPLE_KEY = "human_sample.json"
ANNOTATION_COLUMNS = ("annotator", "accuracy", "completeness", "relevance", "equivalent")
IDENTITY_COLUMNS = ("item_id", "repeat", "system", "system_model")  # checked against the key on import
RESPONSE = ["item_id", "repeat", "system", "system_model"]


def _rank(seed: int, row: pd.Series) -> str:
    return seeded_rank(seed, *(row[c] for c in RESPONSE))


def select_sample(frame: pd.DataFrame, n: int = 49, seed: int = 0) -> pd.DataFrame:
    responses = frame.drop_duplicates(RESPONSE).copy()
    responses["_rank"] = responses.apply(lambda r: _rank(seed, r), axis=1)
    responses = responses.sort_values("_rank")
    chosen: list[tuple[Any, ...]] = []

    def take(rows: pd.DataFrame, limit: int, stratum: str) -> None:
        for _, r in rows.iterrows():
            key = tuple(r[c] for c in RESPONSE)
            if len(chosen) >= n or limit <= 0:
                return
            if key not in {c[:-1] for c in chosen}:
                chosen.append((*key, stratum))
                limit -= 1

    for (_, _), cell in responses.groupby(["visibility", "system"], sort=True):
        take(cell, 1, "cell")
    both = both_rows(frame)
    remaining = max(0, n - len(chosen))
    type2 = both[(both["overall"] > GOOD) & ~both["equivalent"].astype(bool)].drop_duplicates(RESPONSE)
    type2 = type2.assign(_rank=type2.apply(lambda r: _rank(seed, r), axis=1)).sort_values("_rank")
    take(type2, (remaining + 1) // 2, "type2")
    agreed = both.groupby(RESPONSE).filter(lambda g: bool((g["overall"] > GOOD).all() and g["equivalent"].astype(bool).all()))
    agreed = agreed.drop_duplicates(RESPONSE)
    agreed = agreed.assign(_rank=agreed.apply(lambda r: _rank(seed, r), axis=1)).sort_values("_rank")
    take(agreed, n - len(chosen), "agreed_good")
    take(responses, n - len(chosen), "fill")
    keys = pd.DataFrame(chosen, columns=[*RESPONSE, "stratum"])
    sample = keys.merge(responses.drop(columns="_rank"), on=RESPONSE, how="left")
    return sample


def export_sample(table: Path, out_csv: Path, n: int = 49, seed: int = 0, replace_key: bool = False) -> pd.DataFrame:
    """Write the blinded sample to `out_csv` and its key (which sample is which response) to the run
    directory. A different key already there is never replaced silently: annotations may refer to it."""
    if n < 1:
        raise DualjudgeError(f"--n must be at least 1, got {n}")
    check_output_file(out_csv)
    frame = read_table(table)
    if "response" not in frame.columns:
        raise DualjudgeError(f"{table}: the table has no response column; export from a dualjudge run")
    sample = select_sample(frame, n, seed)
    cat = default_catalogue()
    rows = []
    for i, r in enumerate(sample.itertuples(index=False), start=1):
        sign = cat.sign(str(r.sign_code)) if str(r.sign_code) in cat.codes else None
        rows.append({"sample_id": f"H{i:03d}", "item_id": r.item_id, "sign_code": r.sign_code,
                     "visibility": r.visibility, "mode": r.mode, "repeat": int(r.repeat), "system": r.system,
                     "system_model": r.system_model, "caption": sign.caption if sign else "",
                     "description": sign.description if sign else "", "response": r.response,
                     **{c: "" for c in ANNOTATION_COLUMNS}})
    out = pd.DataFrame(rows)
    key = {row["sample_id"]: {**{c: row[c] for c in ("item_id", "system", "system_model")}, "repeat": row["repeat"],
                              "stratum": s} for row, s in zip(rows, sample["stratum"])}
    key_path = table.parent / SAMPLE_KEY
    new_key = {"table": table.name, "seed": seed, "n": n, "samples": key}
    if key_path.exists() and not replace_key:
        old = _read_key(key_path)
        if old.get("samples") != key:
            raise DualjudgeError(f"{key_path}: a different sample (seed {old.get('seed')}, {len(old.get('samples', {}))} "
                                 f"samples) was exported before and annotations may refer to it; import those first, "
                                 f"or pass --replace-key to replace it")
    out_csv.parent.mkdir(parents=True, exist_ok=True)
    with replacing(out_csv) as tmp:
        out.to_csv(tmp, index=False, lineterminator="\n")
    write_text(key_path, json.dumps(new_key, indent=1))
    return out


def _read_key(path: Path) -> dict[str, Any]:
    try:
        key = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise DualjudgeError(f"{path}: the sample key is damaged ({type(e).__name__}); export the sample again "
                             f"with `dualjudge human export --replace-key`") from None
    samples = key.get("samples") if isinstance(key, dict) else None
    if not isinstance(samples, dict) or not isinstance(key.get("table"), str) or not all(
            isinstance(v, dict) and {"item_id", "repeat", "system", "system_model"} <= set(v) for v in samples.values()):
        raise DualjudgeError(f"{path}: not a dualjudge sample key; export the sample again with "
                             f"`dualjudge human export --replace-key`")
    return key


def _validate(ann: pd.DataFrame, samples: dict[str, dict[str, Any]], where: str) -> pd.DataFrame:
    missing = [c for c in ("sample_id", *IDENTITY_COLUMNS, *ANNOTATION_COLUMNS) if c not in ann.columns]
    if missing:
        raise DualjudgeError(f"{where}: missing columns {', '.join(missing)} (annotate the CSV that "
                             f"`dualjudge human export` wrote, keeping its columns)")
    ann = ann[ann[["accuracy", "completeness", "relevance", "equivalent"]].notna().any(axis=1)].copy()
    blank = ann["sample_id"].isna() | (ann["sample_id"].astype(str).str.strip() == "")
    if blank.any():
        raise DualjudgeError(f"{where}: an annotated row has no sample_id")
    unknown = sorted(set(ann["sample_id"].astype(str)) - set(samples))
    if unknown:
        raise DualjudgeError(f"{where}: unknown sample ids {', '.join(unknown[:5])}; were these annotations made for "
                             f"another export?")
    for row in ann.itertuples(index=False):
        expected = samples[str(row.sample_id)]
        for col in IDENTITY_COLUMNS:
            got, want = getattr(row, col), expected[col]
            if str(got).strip() != str(want) and not (col == "repeat" and _same_number(got, want)):
                raise DualjudgeError(f"{where}: sample {row.sample_id} has {col} {got!r} but the sample key says "
                                     f"{want!r}; these annotations belong to another export, so nothing was imported")
    if ann["annotator"].isna().any():
        raise DualjudgeError(f"{where}: every annotated row needs an annotator")
    dup = ann.duplicated(["sample_id", "annotator"])
    if dup.any():
        r = ann[dup].iloc[0]
        raise DualjudgeError(f"{where}: duplicate row for sample {r['sample_id']} by annotator {r['annotator']}")
    for col in ("accuracy", "completeness", "relevance"):
        values = pd.to_numeric(ann[col], errors="coerce")
        bad = ann[values.isna() | (values < 0) | (values > 10) | (values != values.round())]
        if len(bad):
            raise DualjudgeError(f"{where}: {col} must be an integer 0-10 (sample {bad.iloc[0]['sample_id']}: "
                                 f"{bad.iloc[0][col]!r})")
        ann[col] = values.astype(int)
    eq = ann["equivalent"].astype(str).str.strip().str.lower().map({"1": True, "0": False, "true": True,
                                                                     "false": False, "1.0": True, "0.0": False})
    if eq.isna().any():
        raise DualjudgeError(f"{where}: equivalent must be 0 or 1 (sample {ann[eq.isna()].iloc[0]['sample_id']})")
    ann["equivalent"] = eq.astype(bool)
    return ann


def import_annotations(run_dir: Path, annotations: Path) -> dict[str, Any]:
    key_path = run_dir / SAMPLE_KEY
    if not key_path.is_file():
        raise DualjudgeError(f"{run_dir}: no {SAMPLE_KEY}; run `dualjudge human export` first")
    key = _read_key(key_path)
    ann = read_csv(annotations, {"sample_id": str, "annotator": str, "item_id": str, "system": str,
                                 "system_model": str}, "annotation file")
    ann = _validate(ann, key["samples"], str(annotations))
    if ann.empty:
        raise DualjudgeError(f"{annotations}: no annotated rows")
    table = read_table(run_dir / key["table"])
    ann["human_overall"] = ann[["accuracy", "completeness", "relevance"]].mean(axis=1)
    per_sample = ann.groupby("sample_id").agg(human_overall=("human_overall", "mean"),
                                              human_accuracy=("accuracy", "mean"),
                                              human_completeness=("completeness", "mean"),
                                              human_relevance=("relevance", "mean"),
                                              human_equivalent=("equivalent", "mean")).reset_index()
    per_sample["human_equivalent"] = per_sample["human_equivalent"] >= 0.5  # majority (ties count as equivalent)
    meta = pd.DataFrame([{"sample_id": s, **v} for s, v in key["samples"].items()])
    merged = per_sample.merge(meta, on="sample_id").merge(table, on=["item_id", "repeat", "system", "system_model"])
    result: dict[str, Any] = {"n_samples": int(per_sample.shape[0]), "annotators": sorted(ann["annotator"].unique()),
                              "judges": {}}
    for judge, g in merged.groupby("judge_model", sort=True):
        entry: dict[str, Any] = {}
        q = g[g["quality_status"] == "ok"]
        for human_col, judge_col in (("human_overall", "overall"), ("human_accuracy", "accuracy"),
                                     ("human_completeness", "completeness"), ("human_relevance", "relevance")):
            entry[judge_col] = _correlations(q[human_col], q[judge_col])
        e = g[g["equivalence_status"] == "ok"]
        h, j = e["human_equivalent"].astype(bool).to_numpy(), e["equivalent"].astype(bool).to_numpy()
        entry["equivalence"] = {"kappa": kappa(h, j) if len(e) else None,
                                "raw_agreement": float(np.mean(h == j)) if len(e) else None, "n": int(len(e)),
                                "judge_yes_human_no": int(np.sum(j & ~h)), "judge_no_human_yes": int(np.sum(~j & h))}
        diff = q["overall"] - q["human_overall"]
        entry["overall_disagreement"] = {"judge_higher": int((diff > 1).sum()), "judge_lower": int((diff < -1).sum()),
                                         "mean_judge_minus_human": float(diff.mean()) if len(diff) else None}
        result["judges"][str(judge)] = entry
    write_text(run_dir / "human_check.json", json.dumps(result, indent=2))
    return result


def _same_number(a: object, b: object) -> bool:
    try:
        return float(a) == float(b)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


def _correlations(x: pd.Series, y: pd.Series) -> dict[str, Any]:
    x, y = x.astype(float), y.astype(float)
    if len(x) < 3 or x.nunique() < 2 or y.nunique() < 2:
        return {"pearson": None, "spearman": None, "n": int(len(x))}
    p = stats.pearsonr(x, y)
    s = stats.spearmanr(x, y)
    return {"pearson": float(p.statistic), "pearson_p": float(p.pvalue), "spearman": float(s.statistic),
            "spearman_p": float(s.pvalue), "n": int(len(x))}
