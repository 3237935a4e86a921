"""The whole analysis of a verdict table, as one summary (what summary.json holds; docs/summary.md).

Top-level `strategies`, `system_models` and `paired_tests` pool the judge models (each cell's mean over
repeats and judges); `systems` is the calibrated leaderboard (leaderboard.py); per-judge results are
under `judges`. Writing it and the report is report/build.py's job.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
from threadpoolctl import threadpool_limits

from dualjudge.analysis.bias_probes.probes import probe_frames, probes_of
from dualjudge.analysis.bias_probes.recognition import correlation, recognition, recognition_frame
from dualjudge.analysis.board import leaderboard
from dualjudge.analysis.board.duplicates import Aliases
from dualjudge.analysis.pointwise import dual_judge
from dualjudge.analysis.pointwise.clarification import clarification_near, experiment
from dualjudge.analysis.pointwise.decision import decision_risk
from dualjudge.analysis.pointwise.designs import compare_designs, variant_order
from dualjudge.analysis.pointwise.identification import identification
from dualjudge.analysis.pointwise.missingness import missingness
from dualjudge.analysis.pointwise.self_preference import self_preference
from dualjudge.analysis.reliability import agreement
from dualjudge.analysis.reliability.annotations import human_check_near
from dualjudge.analysis.reliability.stability import stability_near
from dualjudge.analysis.shared import statistics
from dualjudge.analysis.shared.bootstrap import t_interval_words
from dualjudge.analysis.shared.choices import N_RESAMPLES, Lineage
from dualjudge.analysis.shared.results import Clarification, Cut, DesignComparison, Requests, Summary
from dualjudge.analysis.shared.scale import PAPER_SCALE, Scale
from dualjudge.analysis.shared.table import ANSWER_KEY, read_table
from dualjudge.analysis.shared.words import speaking, words_for
from dualjudge.analysis.simulated.planted import planted_near, task_near
from dualjudge.protocol.kinds import declared
from dualjudge.rundir import RunDir

Progress = Callable[[str], None]  # told the name of each part of the analysis as it starts


def summarize(
    frame: pd.DataFrame,
    lineage: Lineage = "family",
    seed: int = 0,
    n_resamples: int = N_RESAMPLES,
    scale: Scale = PAPER_SCALE,
    progress: Progress | None = None,
    aliases: Aliases = (),
    **extra: Any,
) -> Summary:
    tell = progress or (lambda _: None)
    tell("per-judge statistics")
    judges: dict[str, Any] = {}
    for judge, g in frame.groupby("judge_model", sort=True):
        summary = dual_judge.judge_summary(g, scale, seed, n_resamples)
        summary["within_judge_agreement"] = agreement.within_judge(g, scale)
        summary["joint"] = dual_judge.joint_counts(g)
        judges[str(judge)] = summary
    tell("system means")
    parts: dict[str, Any] = {
        "design": study_design(frame),
        "degradation": dual_judge.degradation(frame),
        "strategies": dual_judge.system_means(frame),
        "system_models": dual_judge.system_means(frame, "system_model"),
    }
    tell(f"self-preference ({n_resamples} resamples)")  # first: the leaderboard takes the judges' fits from it
    parts["self_preference"] = self_preference(frame, lineage, seed, n_resamples)
    probes = extra.get("probes") or {}
    if probes.get("recognition"):  # across judges: does recognising its own answers go with preferring them?
        outcome = next((o for o in ("overall", "equivalent") if parts["self_preference"].get(o, {}).get("judges")), "overall")
        index = {e["judge"]: e["estimate"] for e in parts["self_preference"].get(outcome, {}).get("judges", [])}
        probes["recognition"]["correlation"] = correlation(probes["recognition"], index, outcome)
    tell(f"calibrated leaderboard ({n_resamples} resamples)")
    parts["systems"] = leaderboard.systems(frame, lineage, seed, n_resamples, scale_max=scale.maximum, aliases=aliases)
    parts["paired_tests"] = dual_judge.paired_tests(frame)
    tell("agreement, identification, missingness, decision risk")
    parts.update(
        agreement=agreement.between_judges(frame),
        identification=identification(frame, scale),
        missingness=missingness(frame),
        decision_risk=decision_risk(frame),
        statistics=statistics.computed(frame),
    )
    return Summary.model_validate(
        {
            "notes": frame.attrs.get("notes", []),
            "absent_columns": list(frame.attrs.get("absent", [])),
            "overall_convention": _convention(frame),
            "scale": scale.as_dict(),
            "n_rows": int(len(frame)),
            "runs": sorted(frame["run_id"].dropna().astype(str).unique().tolist()),
            **parts,
            "judges": judges,
            "bootstrap": {
                "resamples": n_resamples,
                "seed": seed,
                "cluster": "sign_code",
                "ci": {"self_preference": t_interval_words(), "other statistics": "percentile 95%"},
            },
            **extra,
        }
    )


def study_design(frame: pd.DataFrame) -> dict[str, Any]:
    """The table's models, strategies, answers, signs and items, and its failed verdicts per judge kind."""

    def families(model: str, family: str) -> dict[str, str]:
        pairs = frame[[model, family]].drop_duplicates(model).sort_values(model)
        return {str(m): str(f) for m, f in zip(pairs[model], pairs[family])}

    return {
        "system_models": families("system_model", "system_family"),
        "judge_models": families("judge_model", "judge_family"),
        "strategies": sorted(frame["system"].astype(str).unique()),
        "answers": int(len(frame.drop_duplicates(ANSWER_KEY))),
        "signs": None if "sign_code" in frame.attrs.get("absent", []) else int(frame["sign_code"].nunique()),
        "items": int(frame["item_id"].nunique()),
        "visibilities": 0 if "visibility" in frame.attrs.get("absent", []) else int(frame["visibility"].nunique()),
        "failed_verdicts": {
            k.name: int(frame[k.status].isin(["parse_failure", "error"]).sum()) for k in declared() if k.status in frame.columns
        },
    }


def _convention(frame: pd.DataFrame) -> str:
    """How the table's overall was made: the column's value, or (for tables without it) the paper's."""
    if "overall_convention" in frame.columns and frame["overall_convention"].notna().any():
        values = sorted(set(frame["overall_convention"].dropna().astype(str)))
        return values[0] if len(values) == 1 else "mixed: " + ", ".join(values)
    return "mean_of_subscores (assumed: the table does not say)"


def summarize_table(
    table: Path,
    lineage: Lineage = "family",
    seed: int = 0,
    n_resamples: int = N_RESAMPLES,
    scale: Scale = PAPER_SCALE,
    progress: Progress | None = None,
    aliases: Aliases = (),
) -> tuple[pd.DataFrame, Summary]:
    """Read a verdict table (and the probe, passes and human tables beside it) and summarise it: one
    summary per judge variant (the reference one on top, the others under `variants`) and, with
    several variants, the designs compared side by side. BLAS runs on one thread: the analysis's matrices are
    small, and a second thread spins more than it computes (Multivac: 66 s of CPU with two, fewer with one)."""
    with threadpool_limits(1, user_api="blas"):
        frame = read_table(table, scale)
        with speaking(words_for(task_near(table), frame.attrs.get("absent", []))):  # the task's words in every sentence
            return _summarize_table(table, frame, lineage, seed, n_resamples, scale, progress, aliases)


def _summarize_table(
    table: Path,
    frame: pd.DataFrame,
    lineage: Lineage,
    seed: int,
    n_resamples: int,
    scale: Scale,
    progress: Progress | None,
    aliases: Aliases,
) -> tuple[pd.DataFrame, Summary]:
    t0 = time.perf_counter()
    order, padding = probe_frames(table)
    recognised = recognition_frame(table)
    human = human_check_near(table, frame)
    variants = variant_order(frame["judge_variant"])
    summaries = {}
    for variant in variants:
        named = (lambda part, v=variant: progress(f"{v}: {part}")) if progress and len(variants) > 1 else progress
        rows = frame[frame["judge_variant"] == variant]
        if len(variants) > 1:
            rows = rows.copy()
            rows.attrs = frame.attrs
        probes = probes_of(order, padding, variant, seed, n_resamples)
        if recognised is not None and variant == variants[0]:  # asked once per judge, whatever its variants
            probes["recognition"] = recognition(recognised, seed, n_resamples)
        summaries[variant] = summarize(
            rows,
            lineage,
            seed,
            n_resamples,
            scale,
            named,
            aliases,
            probes=probes or None,
            table=str(table),
            stability=stability_near(table, scale, variant),
            human=_human_of(human, variant, variants[0]),
            judge_variant=variant,
        )
    main = summaries[variants[0]].model_copy(
        update={
            "requests": _requests_near(table),
            "truncation": _truncation_near(table),
            "simulation": planted_near(table),
            "task": task_near(table),
        }
    )
    if len(variants) > 1:
        if progress:
            progress("judge designs compared")
        designs = compare_designs(frame, order, padding, lineage, seed, n_resamples)
        designs["rows"] = [_design_row(judge, v, s) for judge in sorted(main.judges) for v, s in summaries.items()]
        main = main.model_copy(
            update={"variants": {v: summaries[v] for v in variants[1:]}, "designs": DesignComparison.model_validate(designs)}
        )
    main = _with_pairwise(table, main, seed, n_resamples, progress)
    record = clarification_near(table)
    if record is not None:
        test = frame[frame["sign_code"].astype(str).isin(set(record.split["test"]))]
        result = experiment(frame, record, human_check_near(table, test), lineage, seed, n_resamples)
        main = main.model_copy(update={"clarification": Clarification.model_validate(result)})
    return frame, main.model_copy(update={"analysis_seconds": round(time.perf_counter() - t0, 2)})


def _with_pairwise(table: Path, main: Summary, seed: int, n_resamples: int, progress: Progress | None) -> Summary:
    """The summary with the pairwise judges' analysis where a run's pairwise table is beside its verdict table, and
    the judges that judged both ways set side by side."""
    from dualjudge.analysis.pairwise.estimate import pairwise, side_by_side
    from dualjudge.analysis.pairwise.table import read_pairwise

    near = RunDir(table.parent).pairwise
    if table.name != RunDir.VERDICTS_PARQUET or not near.is_file():
        return main
    if progress:
        progress("pairwise judges")
    result = pairwise(read_pairwise(near), seed, n_resamples, progress, table=str(near))
    return main.model_copy(update={"pairwise": result.model_copy(update={"side_by_side": side_by_side(main, result)})})


def _human_of(human: dict[str, Any] | None, variant: str, reference: str) -> dict[str, Any] | None:
    if human is None:
        return None
    by_variant = human.get("by_variant") or {}
    if not by_variant:
        return human if variant == reference else None
    if variant not in by_variant:
        return None
    return {**human, "judges": by_variant[variant], "by_variant": {}}


def _design_row(judge: str, variant: str, s: Summary) -> dict[str, Any]:
    """One judge under one variant, as its variant's summary has it."""
    row: dict[str, Any] = {"judge": judge, "variant": variant}
    if s.probes and s.probes.order:
        row["order_flip"] = s.probes.order.per_judge.get(judge)
    if s.probes and s.probes.padding:
        row["padding_flip"] = {k: p.per_judge[judge].flip_rate for k, p in s.probes.padding.kinds.items() if judge in p.per_judge}
    sp = next((e for e in (s.self_preference.overall.judges if s.self_preference.overall else []) if e.judge == judge), None)
    if sp is not None and sp.estimate is not None:
        row["self_preference"] = {"estimate": sp.estimate, "se": sp.se, "ci_low": sp.ci_low, "ci_high": sp.ci_high, "p": sp.p}
    h = s.human.judges.get(judge) if s.human else None
    if h is not None:
        row.update(human_r_overall=h.overall.pearson, human_kappa_equivalent=h.equivalence.kappa)
    return row


def _truncation_near(table: Path) -> dict[str, Cut] | None:
    """Per system model, its answers cut at max_tokens, from the run's manifest beside the table (None elsewhere)."""
    try:
        data = json.loads(RunDir(table.parent).manifest.read_text()).get("truncation")
        return {str(m): Cut.model_validate(t) for m, t in data.items()} if data else None
    except (OSError, ValueError, AttributeError):
        return None


def _requests_near(table: Path) -> Requests | None:
    """The requests a run sent, from its manifest beside the table (None for a table from elsewhere)."""
    try:
        data = json.loads(RunDir(table.parent).manifest.read_text()).get("requests")
        return Requests.model_validate(data) if data else None
    except (OSError, ValueError, AttributeError):
        return None
