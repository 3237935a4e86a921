"""The report's self-preference section, from summary.json's `self_preference` entry."""

from __future__ import annotations

from typing import Any

from dualjudge.analysis.self_preference import format_p, sentence
from dualjudge.report.tables import ci, num, table

OUTCOME_TITLES = {"overall": "overall score (0-10 points)", "equivalent": "equivalent (probability, linear model)"}


def _interval(entry: dict[str, Any] | None, digits: int = 2) -> str:
    if not entry:
        return "-"
    return f"{num(entry['estimate'], digits)} {ci([entry['ci_low'], entry['ci_high']], digits)}"


def section(sp: dict[str, Any]) -> list[str]:
    parts = [f"## Cross-family self-preference (lineage: {sp['lineage']})", "",
             f"Headline: the calibrated index, {sp['method']}. Intervals: {sp['interval']}, "
             f"{sp['resamples']} resamples. Adjusted p-values: {sp['adjustment']}.", ""]
    for outcome in ("overall", "equivalent"):
        if outcome in sp:
            parts += _outcome(sp[outcome], outcome)
    return parts


def _outcome(e: dict[str, Any], outcome: str) -> list[str]:
    parts = [f"### Self-preference on {OUTCOME_TITLES[outcome]}", ""]
    for warning in e.get("warnings", []):
        parts.append(f"**Warning:** {warning}")
        parts.append("")
    if not e["judges"]:
        return parts + [f"Not estimable: {e['reason']}", ""]
    estimated = [j for j in e["judges"] if j["estimate"] is not None]
    if estimated:
        rows = [[j["judge"], j["family"], _interval({"estimate": j["estimate"], "ci_low": j["ci_low"],
                                                     "ci_high": j["ci_high"]}),
                 format_p(j["p"]), format_p(j["p_adjusted"]), _interval(j.get("self")), _interval(j.get("family_other"))]
                for j in estimated]
        parts += [table(["judge", "family", "own-family effect [95% CI]", "p", "adjusted p", "own model",
                         "same family, other model"], rows), ""]
        parts += [f"- {sentence(j, outcome)}" for j in estimated] + [""]
    missing = [j for j in e["judges"] if j["estimate"] is None]
    if missing:
        parts.append("Not estimable:")
        parts += [f"- {j['judge']} ({j['family']}): {j['reason']}" for j in missing] + [""]
    parts += _sensitivity(e, outcome)
    parts += _interaction(e)
    parts += _missing(e)
    return parts


def _sensitivity(e: dict[str, Any], outcome: str) -> list[str]:
    rows, words = [], []
    labels = {"answer_matched": "the answer-matched model (scales fixed at 1)",
              "did": "the pair-matched difference-in-differences"}
    for j in e["judges"]:
        panel = j["sensitivity"]
        if not any(panel[k] for k in ("calibrated", "answer_matched", "did")):
            continue
        rows.append([j["judge"], _interval(panel["calibrated"]), _interval(panel["answer_matched"]),
                     _interval(panel["did"]) if panel["did"] else f"- ({panel['did_reason'] or 'not estimable'})"])
        for other in panel["disagree"]:
            words.append(f"For {j['judge']}, the calibrated index ({num(panel['calibrated']['estimate'])}) and "
                         f"{labels[other]} ({num(panel[other]['estimate'])}) disagree beyond their intervals: the judges "
                         f"use the scale differently, or verdicts are missing unevenly, and only the calibrated index "
                         f"allows for that.")
    parts = []
    if rows:
        parts = ["Sensitivity panel (same bootstrap; the alternatives assume every judge uses the scale alike):", "",
                 table(["judge", "calibrated", "answer-matched (slope 1)", "difference-in-differences"], rows), ""]
        parts += words + ([""] if words else [])
    pooled = e.get("pooled")
    if pooled:
        line = (f"Pooled `{pooled['formula']}` ({pooled['interval']}): same_family "
                f"{num(pooled['same_family']['estimate'], 3)} {ci(pooled['same_family']['ci'], 3)}")
        if "self" in pooled:
            line += f"; self {num(pooled['self']['estimate'], 3)} {ci(pooled['self']['ci'], 3)}"
        parts += [line + ".", ""]
    elif e.get("pooled_reason"):
        parts += [f"Pooled model not estimable: {e['pooled_reason']}.", ""]
    return parts


def _interaction(e: dict[str, Any]) -> list[str]:
    inter = e.get("interaction")
    if not inter:
        return []
    rows = [[judge] + [_interval(cell) for cell in inter["double_centred"][i]] for i, judge in enumerate(inter["judges"])]
    return ["Judge x generator family after calibration (mean of verdict minus leniency + scale x answer quality, "
            "double-centred; 95% CI). Own-family preference shows on the judge's own family; a cell off it that "
            "stands out is favouritism toward another family, which no per-judge baseline removes:", "",
            table(["judge", *inter["families"]], rows), ""]


def _missing(e: dict[str, Any]) -> list[str]:
    by = e.get("missing", {}).get("by_judge_family", {})
    if not by:
        return []
    families = sorted({f for cells in by.values() for f in cells})
    rows = [[judge] + [f"{cells[f]['rate']:.1%} ({cells[f]['missing']}/{cells[f]['total']})" if f in cells else "-"
                       for f in families] for judge, cells in by.items()]
    return ["Missing verdicts by judge x generator family (rate, count):", "", table(["judge", *families], rows), ""]
