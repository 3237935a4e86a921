"""The human check's sample: a stratified, blinded sample for annotation, and its key.

Export (like the paper's 49-row check): one answer per visibility x system cell (28 in the paper's
design), then `type2` Type II cases (some judge scored it > 7 and not equivalent; the paper: 12), then
answers both judges agree are good (overall >= 7 and equivalent, as the paper defines them; the paper:
9), up to n. The sample carries the gold caption and description, the response and its metadata, and
no judge score. Annotators fill one overall score, `human_overall` (0-10; the sub-scores accuracy,
completeness and relevance are optional), and equivalent (0/1), one row per sample and annotator;
annotations.py reads them back and compares them with the judges. The key (which sample is which
response) is never replaced silently: annotations may refer to it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from dualjudge.analysis.pointwise.designs import variant_order
from dualjudge.analysis.pointwise.dual_judge import both_rows
from dualjudge.analysis.shared.table import ANSWER_IN_RUN, read_table
from dualjudge.analysis.simulated.planted import references_near
from dualjudge.errors import DualjudgeError
from dualjudge.files import check_output_file, replacing, write_text
from dualjudge.protocol.seeds import seeded_rank
from dualjudge.protocol.verdicts import GOOD
from dualjudge.tasks.signs import uk_signs

SAMPLE_KEY = "human_sample.json"
ANNOTATION_COLUMNS = ("annotator", "human_overall", "equivalent")  # to fill
OPTIONAL_ANNOTATIONS = ("accuracy", "completeness", "relevance")  # may stay empty
PAPER_TYPE2 = 12  # the paper's 49: 28 cells, 12 Type II cases, 9 agreed-good answers
IDENTITY_COLUMNS = tuple(ANSWER_IN_RUN)  # checked against the key on import
RESPONSE = ANSWER_IN_RUN


def _rank(seed: int, row: pd.Series) -> str:
    return seeded_rank(seed, *(row[c] for c in RESPONSE))


def select_sample(frame: pd.DataFrame, n: int = 49, seed: int = 0, type2: int = PAPER_TYPE2) -> pd.DataFrame:
    """The paper's stratified sample of responses, its strata read from the reference judge variant's
    verdicts (human labels then evaluate every variant on the same responses)."""
    if "judge_variant" in frame.columns and frame["judge_variant"].nunique() > 1:
        frame = frame[frame["judge_variant"] == variant_order(frame["judge_variant"])[0]]
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
    cases = both[(both["overall"] > GOOD) & ~both["equivalent"].astype(bool)].drop_duplicates(RESPONSE)
    cases = cases.assign(_rank=cases.apply(lambda r: _rank(seed, r), axis=1)).sort_values("_rank")
    take(cases, type2, "type2")
    agreed = both.groupby(RESPONSE).filter(lambda g: bool((g["overall"] >= GOOD).all() and g["equivalent"].astype(bool).all()))
    agreed = agreed.drop_duplicates(RESPONSE)
    agreed = agreed.assign(_rank=agreed.apply(lambda r: _rank(seed, r), axis=1)).sort_values("_rank")
    take(agreed, n - len(chosen), "agreed_good")
    take(responses, n - len(chosen), "fill")
    keys = pd.DataFrame(chosen, columns=[*RESPONSE, "stratum"])
    sample = keys.merge(responses.drop(columns="_rank"), on=RESPONSE, how="left")
    return sample


def export_sample(
    table: Path, out_csv: Path, n: int = 49, seed: int = 0, replace_key: bool = False, type2: int = PAPER_TYPE2
) -> pd.DataFrame:
    """Write the blinded sample to `out_csv` and its key (which sample is which response) to the run
    directory. A different key already there is never replaced silently: annotations may refer to it."""
    if n < 1:
        raise DualjudgeError(f"--n must be at least 1, got {n}")
    check_output_file(out_csv)
    frame = read_table(table)
    if "response" not in frame.columns:
        raise DualjudgeError(f"{table}: the table has no response column; export from a dualjudge run")
    if type2 < 0:
        raise DualjudgeError(f"--type2 must be 0 or more, got {type2}")
    sample = select_sample(frame[frame["response"].notna()], n, seed, type2)
    signs = {i.id: i for i in uk_signs().items}
    task_gold = references_near(table)  # a task's items; uk-signs: the catalogue
    rows = []
    for i, r in enumerate(sample.itertuples(index=False), start=1):
        if task_gold is not None:
            caption, description = task_gold.get(str(getattr(r, "task_item", "")), ("", ""))
        else:
            sign = signs.get(str(r.sign_code))
            caption, description = (sign.caption, sign.reference) if sign else ("", "")
        rows.append(
            {
                "sample_id": f"H{i:03d}",
                "item_id": r.item_id,
                "sign_code": r.sign_code,
                "visibility": r.visibility,
                "mode": r.mode,
                "repeat": int(r.repeat),
                "system": r.system,
                "system_model": r.system_model,
                "caption": caption,
                "description": description,
                "response": r.response,
                **{c: "" for c in (*ANNOTATION_COLUMNS, *OPTIONAL_ANNOTATIONS)},
            }
        )
    out = pd.DataFrame(rows)
    key = {
        row["sample_id"]: {**{c: row[c] for c in ("item_id", "system", "system_model")}, "repeat": row["repeat"], "stratum": s}
        for row, s in zip(rows, sample["stratum"])
    }
    key_path = table.parent / SAMPLE_KEY
    new_key = {"table": table.name, "seed": seed, "n": n, "samples": key}
    if key_path.exists() and not replace_key:
        old = read_key(key_path)
        if old.get("samples") != key:
            raise DualjudgeError(
                f"{key_path}: a different sample (seed {old.get('seed')}, {len(old.get('samples', {}))} "
                f"samples) was exported before and annotations may refer to it; import those first, "
                f"or pass --replace-key to replace it"
            )
    out_csv.parent.mkdir(parents=True, exist_ok=True)
    with replacing(out_csv) as tmp:
        out.to_csv(tmp, index=False, lineterminator="\n")
    write_text(key_path, json.dumps(new_key, indent=1))
    return out


def read_key(path: Path) -> dict[str, Any]:
    try:
        key = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise DualjudgeError(
            f"{path}: the sample key is damaged ({type(e).__name__}); export the sample again "
            f"with `dualjudge human export --replace-key`"
        ) from None
    samples = key.get("samples") if isinstance(key, dict) else None
    if (
        not isinstance(samples, dict)
        or not isinstance(key.get("table"), str)
        or not all(isinstance(v, dict) and set(ANSWER_IN_RUN) <= set(v) for v in samples.values())
    ):
        raise DualjudgeError(
            f"{path}: not a dualjudge sample key; export the sample again with `dualjudge human export --replace-key`"
        )
    return dict(key)
