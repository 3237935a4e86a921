"""Export the verdict table (the contract in DESIGN.md) from a run's store.

One row per response x judge model: the variant's metadata, the system, its answer's parsed
category and format compliance, and every declared judge kind's scores with its outcome state
(protocol/kinds.py: the quality judge's sub-scores and overall, the equivalence judge's decision). A system call
that produced no answer keeps its rows (system_status error, verdicts skipped), so every denominator
can count it. Families come from the model cards (vendor lineage in *_family, text-backbone lineage
in *_base_llm).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from dualjudge.analysis.shared.table import table_columns
from dualjudge.files import replacing
from dualjudge.inference.cards import ModelCard, all_cards
from dualjudge.protocol.kinds import declared, judge_kind
from dualjudge.protocol.variants import HOLISTIC
from dualjudge.rundir import RunDir
from dualjudge.storage.rows import (
    AnswerRow,
    ComparisonRow,
    JudgePassRow,
    OrderProbeRow,
    PaddingProbeRow,
    RecognitionProbeRow,
    VerdictRow,
)
from dualjudge.storage.store import Store
from dualjudge.tasks.task import Task
from dualjudge.variants.manifest import Variant

DTYPES = {"integer": "Int64", "number": "Float64", "boolean": "boolean"}  # a score field's column, nullable
RUN_FILES = RunDir.RUN_FILES


def verdict_table(
    store: Store,
    variants: dict[str, Variant],
    run_id: str,
    judge_models: tuple[str, ...],
    kinds: tuple[str, ...],
    overall_convention: str = "mean_of_subscores",
    cards: dict[str, ModelCard] | None = None,
    judge_variants: tuple[str, ...] = (HOLISTIC,),
) -> pd.DataFrame:
    """One row per answer x judge model x judge variant. Variants found in the store beyond the
    configured ones (a rubric clarification's) follow them."""
    cards = cards if cards is not None else all_cards()
    verdicts = {v.key(): v for v in store.read(VerdictRow)}
    extra = {v.judge_variant for v in verdicts.values()} - set(judge_variants)
    judge_variants = (*judge_variants, *sorted(extra))
    rows = []
    answers = sorted(store.read(AnswerRow), key=lambda a: (a.system_model, a.strategy, a.variant_id, a.repeat))
    for a in answers:
        variant = variants.get(a.variant_id)
        if variant is None:
            continue
        system = cards[a.system_model]
        unjudged = "skipped" if a.text is None else None  # a system call without an answer: nothing to judge
        for judge, jv in ((j, v) for v in judge_variants for j in judge_models):
            found = {k.name: verdicts.get((*a.key(), judge, jv, k.name)) for k in declared()}
            if jv in extra and not any(found.values()):
                continue  # a variant added to the run later (a rubric clarification) judged only its test split
            judged: dict[str, Any] = {}
            for k in declared():
                row = found[k.name]
                values = row.score_values() if row else {}  # one parse per verdict, not one per column
                judged.update({name: values.get(name) for name in k.columns})
                judged[k.status] = row.status if row else unjudged or ("not_run" if k.name in kinds else "skipped")
            rows.append(
                {
                    "run_id": run_id,
                    "item_id": a.variant_id,
                    "sign_code": variant.sign_code,
                    "category": variant.category,
                    "visibility": variant.visibility,
                    "mode": variant.mode,
                    "repeat": a.repeat,
                    "system": a.strategy,
                    "system_model": a.system_model,
                    "system_family": system.family,
                    "system_base_llm": system.base_llm,
                    "predicted_category": a.predicted_category,
                    "format_ok": bool(a.format_ok),
                    "judge_model": judge,
                    "judge_family": cards[judge].family,
                    "judge_base_llm": cards[judge].base_llm,
                    **judged,
                    "response": a.text,
                    "system_status": a.status,
                    "overall_convention": overall_convention,
                    "judge_variant": jv,
                }
            )
    frame = pd.DataFrame(rows, columns=list(table_columns()))
    for k in declared():
        for f in k.scores:
            frame[f.name] = frame[f.name].astype(DTYPES[f.type])
    return frame


PAIRWISE_COLUMNS = (
    "run_id",
    "item_id",
    "group",
    "repeat",
    "strategy",
    "judge_model",
    "judge_family",
    "system_a",
    "system_b",
    "family_a",
    "family_b",
    "shown_first",
    "winner",
    "pairwise_status",
    "label_a",
    "label_b",
    "label",
    "error",
)


def pairwise_table(store: Store, variants: dict[str, Variant], run_id: str, cards: dict[str, ModelCard]) -> pd.DataFrame:
    """The pairwise judge's table (docs/verdict-table.md): one row per pair and order, with the two answers' final
    labels and the item's gold label (the decomposition's), each item's cluster under `group`."""
    labels = {a.key(): a.predicted_category for a in store.read(AnswerRow)}
    rows = []
    for r in sorted(store.read(ComparisonRow), key=lambda r: r.key()):
        variant = variants.get(r.variant_id)
        if variant is None:
            continue
        rows.append(
            {
                "run_id": run_id,
                "item_id": r.variant_id,
                "group": variant.sign_code,
                "repeat": r.repeat,
                "strategy": r.strategy,
                "judge_model": r.judge_model,
                "judge_family": cards[r.judge_model].family,
                "system_a": r.system_a,
                "system_b": r.system_b,
                "family_a": cards[r.system_a].family,
                "family_b": cards[r.system_b].family,
                "shown_first": r.shown_first,
                "winner": r.winner,
                "pairwise_status": r.status,
                "label_a": labels.get((r.variant_id, r.repeat, r.system_a, r.strategy)),
                "label_b": labels.get((r.variant_id, r.repeat, r.system_b, r.strategy)),
                "label": variant.category,
                "error": r.error,
            }
        )
    return pd.DataFrame(rows, columns=list(PAIRWISE_COLUMNS))


def write_pairwise(frame: pd.DataFrame, out: Path) -> None:
    with replacing(RunDir(out).pairwise) as tmp:
        frame.to_parquet(tmp, index=False)
    with replacing(out / RunDir.PAIRWISE_CSV) as tmp:
        frame.to_csv(tmp, index=False, lineterminator="\n")


META_PREFIX = "meta_"  # a task item's metadata column in the verdict table


def with_task_columns(frame: pd.DataFrame, task: Task, variants: dict[str, Variant]) -> pd.DataFrame:
    """A task's table: its name, each row's task item, and the item's metadata (meta_NAME), after the contract's columns."""
    item_of = {vid: v.sign_code for vid, v in variants.items()}
    ids = frame["item_id"].map(item_of)
    out = frame.assign(task=task.name, task_item=ids)
    names = list(dict.fromkeys(name for i in task.items for name, _ in i.metadata))
    meta = {i.id: dict(i.metadata) for i in task.items}
    for name in names:
        out[META_PREFIX + name] = _typed(ids.map(lambda item, n=name: meta.get(item, {}).get(n)))
    return out


TASK_NAMES = {"sign_code": "group", "category": "label", "predicted_category": "predicted_label"}  # a task folder's
OCCLUSION = ("visibility", "mode")  # columns of occluded variants, left out where each item is its one variant


def in_task_words(frame: pd.DataFrame, task: Task, modality: str) -> pd.DataFrame:
    """A task folder's table in its own words: the bootstrap's cluster is `group`, the gold and predicted final
    line `label` and `predicted_label`; a text task's items have no occluded variants, so no visibility or mode.
    analysis/shared/table.py reads it back to the contract's names."""
    if task.builtin:
        return frame
    out = frame.rename(columns=TASK_NAMES)
    return out.drop(columns=list(OCCLUSION)) if modality == "text" else out


def _typed(column: pd.Series) -> pd.Series:
    """A metadata column as its values' one type (numbers, booleans or text, nullable), text where they mix."""
    values = column.dropna()
    if values.map(lambda v: isinstance(v, bool)).all() and len(values):
        return column.astype("boolean")
    if values.map(lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)).all() and len(values):
        return pd.to_numeric(column)
    return column.map(lambda v: None if v is None or (isinstance(v, float) and pd.isna(v)) else str(v)).astype("string")


def write_table(frame: pd.DataFrame, out: Path) -> tuple[Path, Path]:
    pq, csv = RunDir(out).verdicts, RunDir(out).verdicts_csv
    with replacing(pq) as tmp:
        frame.to_parquet(tmp, index=False)
    with replacing(csv) as tmp:
        frame.to_csv(tmp, index=False, lineterminator="\n")
    return pq, csv


def write_probe_tables(store: Store, variants: dict[str, Variant], out: Path, cluster: str = "sign_code") -> None:
    """probes_order.csv, probes_padding.csv, judge_passes.csv and probes_recognition.csv, with each variant's
    bootstrap cluster under `cluster` (a task folder's: `group`, as its verdict table names it)."""
    for table, name in (
        (OrderProbeRow.TABLE, RunDir.ORDER_PROBES),
        (PaddingProbeRow.TABLE, RunDir.PADDING_PROBES),
        (JudgePassRow.TABLE, RunDir.JUDGE_PASSES),
        (RecognitionProbeRow.TABLE, RunDir.RECOGNITION_PROBES),
    ):
        frame = pd.DataFrame([dict(r) for r in store.rows(table)])
        if frame.empty:
            continue
        frame.insert(1, cluster, [variants[v].sign_code if v in variants else None for v in frame["variant_id"]])
        if table == JudgePassRow.TABLE:  # each kind's value under its own column (overall, equivalent)
            value_of = frame["kind"].map(lambda k: judge_kind(k).value)
            for column in dict.fromkeys(value_of):
                frame[column] = frame["value"].where(value_of == column)
            frame = frame.drop(columns="value")
        with replacing(out / name) as tmp:
            frame.to_csv(tmp, index=False, lineterminator="\n")
