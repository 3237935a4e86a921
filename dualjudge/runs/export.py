"""Export the verdict table (the contract in DESIGN.md) from a run's store.

One row per response x judge model: the variant's metadata, the system, its answer's parsed
category and format compliance, and both judges' verdicts with their outcome states. A system call
that produced no answer keeps its rows (system_status error, verdicts skipped), so every denominator
can count it. Families come from the model cards (vendor lineage in *_family, text-backbone lineage
in *_base_llm).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from dualjudge.analysis.table import COLUMNS
from dualjudge.files import replacing
from dualjudge.inference.cards import ModelCard, all_cards
from dualjudge.protocol.variants import HOLISTIC
from dualjudge.runs.rows import AnswerRow, JudgePassRow, OrderProbeRow, PaddingProbeRow, VerdictRow
from dualjudge.runs.store import Store

RUN_FILES = ("verdicts.parquet", "verdicts.csv", "probes_order.csv", "probes_padding.csv", "judge_passes.csv",
             "manifest.json")


def verdict_table(store: Store, variants: dict[str, dict[str, Any]], run_id: str, judge_models: tuple[str, ...],
                  kinds: tuple[str, ...], overall_convention: str = "mean_of_subscores",
                  cards: dict[str, ModelCard] | None = None,
                  judge_variants: tuple[str, ...] = (HOLISTIC,)) -> pd.DataFrame:
    """One row per answer x judge model x judge variant. Variants found in the store beyond the
    configured ones (a rubric clarification's) follow them."""
    cards = cards if cards is not None else all_cards()
    verdicts = {v.key(): v for v in store.read(VerdictRow)}
    extra = {v.judge_variant for v in verdicts.values()} - set(judge_variants)
    judge_variants = (*judge_variants, *sorted(extra))
    rows = []
    answers = sorted(store.read(AnswerRow), key=lambda a: (a.system_model, a.strategy, a.variant_id, a.repeat))
    for a in answers:
        v = variants.get(a.variant_id)
        if v is None:
            continue
        system = cards[a.system_model]
        unjudged = "skipped" if a.text is None else None  # a system call without an answer: nothing to judge
        for judge, jv in ((j, v) for v in judge_variants for j in judge_models):
            q = verdicts.get((*a.key(), judge, jv, "quality"))
            e = verdicts.get((*a.key(), judge, jv, "equivalence"))
            if jv in extra and q is None and e is None:
                continue  # a variant added to the run later (a rubric clarification) judged only its test split
            rows.append({
                "run_id": run_id, "item_id": a.variant_id, "sign_code": str(v["sign_code"]), "category": v["category"],
                "visibility": float(v["visibility"]), "mode": v["mode"], "repeat": a.repeat, "system": a.strategy,
                "system_model": a.system_model, "system_family": system.family, "system_base_llm": system.base_llm,
                "predicted_category": a.predicted_category, "format_ok": bool(a.format_ok), "judge_model": judge,
                "judge_family": cards[judge].family, "judge_base_llm": cards[judge].base_llm,
                "accuracy": q.accuracy if q else None, "completeness": q.completeness if q else None,
                "relevance": q.relevance if q else None, "overall": q.overall if q else None,
                "equivalent": None if not e or e.equivalent is None else bool(e.equivalent),
                "quality_status": q.status if q else unjudged or ("not_run" if "quality" in kinds else "skipped"),
                "equivalence_status": e.status if e else unjudged or ("not_run" if "equivalence" in kinds else "skipped"),
                "response": a.text, "system_status": a.status, "overall_convention": overall_convention,
                "judge_variant": jv,
            })
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    for col in ("accuracy", "completeness", "relevance"):
        frame[col] = frame[col].astype("Int64")
    frame["overall"] = frame["overall"].astype("Float64")
    frame["equivalent"] = frame["equivalent"].astype("boolean")
    return frame


def write_table(frame: pd.DataFrame, out: Path) -> tuple[Path, Path]:
    pq, csv = out / "verdicts.parquet", out / "verdicts.csv"
    with replacing(pq) as tmp:
        frame.to_parquet(tmp, index=False)
    with replacing(csv) as tmp:
        frame.to_csv(tmp, index=False, lineterminator="\n")
    return pq, csv


def write_probe_tables(store: Store, variants: dict[str, dict[str, Any]], out: Path) -> None:
    """probes_order.csv, probes_padding.csv and judge_passes.csv, with the sign code of each variant."""
    for table, name in ((OrderProbeRow.TABLE, "probes_order.csv"), (PaddingProbeRow.TABLE, "probes_padding.csv"),
                        (JudgePassRow.TABLE, "judge_passes.csv")):
        frame = pd.DataFrame([dict(r) for r in store.rows(table)])
        if frame.empty:
            continue
        frame.insert(1, "sign_code", [str(variants[v]["sign_code"]) if v in variants else None
                                      for v in frame["variant_id"]])
        with replacing(out / name) as tmp:
            frame.to_csv(tmp, index=False, lineterminator="\n")
