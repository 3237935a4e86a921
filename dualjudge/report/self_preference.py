"""The report's self-preference section, from the summary's typed `self_preference` results."""

from __future__ import annotations

from dualjudge.analysis.choices import Outcome
from dualjudge.analysis.results import Estimate, JudgeSelfPreference, OutcomeSelfPreference, SelfPreference
from dualjudge.report.tables import ci, num, pvalue, table

OUTCOME_TITLES = {"overall": "overall score (0-10 points)", "equivalent": "equivalent (probability, linear model)"}
ALTERNATIVES = {
    "answer_matched": "the answer-matched model (scales fixed at 1)",
    "did": "the pair-matched difference-in-differences",
}


def _interval(e: Estimate | None, digits: int = 2) -> str:
    return "-" if e is None else f"{num(e.estimate, digits)} {ci([e.ci_low, e.ci_high], digits)}"


def _headline(j: JudgeSelfPreference) -> str:
    if j.estimate is None:
        return "-"
    return f"{num(j.estimate)} {ci([j.ci_low, j.ci_high])}" + (" widened (warned)" if j.warned else "")


def _adjusted(j: JudgeSelfPreference) -> str:
    return "none (warned)" if j.warned else pvalue(j.p_adjusted)


def section(sp: SelfPreference, planted: dict[str, dict[str, float | None]] | None = None) -> list[str]:
    """The section; with `planted` (a simulated table: outcome -> judge -> planted effect), a column of the
    planted effects beside the estimates."""
    parts = [
        f"## Cross-family self-preference (lineage: {sp.lineage})",
        "",
        f"Headline: the calibrated index, {sp.method}. Intervals: {sp.interval}, "
        f"{sp.resamples} resamples. Adjusted p-values: {sp.adjustment}.",
        "",
    ]
    for name, outcome in sp.outcomes().items():
        parts += _outcome(outcome, name, (planted or {}).get(name))
    return parts


def _outcome(e: OutcomeSelfPreference, outcome: Outcome, planted: dict[str, float | None] | None = None) -> list[str]:
    parts = [f"### Self-preference on {OUTCOME_TITLES[outcome]}", ""]
    for warning in e.warnings:
        parts += [f"**Warning:** {warning}", ""]
    if not e.judges:
        return parts + [f"Not estimable: {e.reason}", ""]
    estimated = [j for j in e.judges if j.estimate is not None]
    if estimated:
        rows = [
            [j.judge, j.family, _headline(j), pvalue(j.p), _adjusted(j), _interval(j.self), _interval(j.family_other)]
            for j in estimated
        ]
        header = ["judge", "family", "own-family effect [95% CI]", "p", "adjusted p", "own model", "same family, other model"]
        if planted is not None:
            header.insert(3, "planted")
            for row, j in zip(rows, estimated):
                row.insert(3, num(planted.get(j.judge)))
        parts += [table(header, rows), ""]
        if any(j.warned for j in estimated):
            parts += [
                'A judge marked "warned" carries a warning below that may bias its estimate by more than its '
                "interval holds: it gets no adjusted p-value, and its interval is widened to cover its estimates "
                "under the warning (a correlated or copied judge left out, its missing verdicts filled in low).",
                "",
            ]
        parts += [f"- {sentence(j, outcome)}" for j in estimated] + [""]
        warned = [(j.judge, w) for j in estimated for w in j.warnings]
        if warned:
            parts.append("What may bias these estimates (per judge):")
            parts += [f"- **{judge}:** {w}" for judge, w in warned] + [""]
    missing = [j for j in e.judges if j.estimate is None]
    if missing:
        parts.append("Not estimable:")
        parts += [f"- {j.judge} ({j.family}): {j.reason}" for j in missing] + [""]
    return parts + _sensitivity(e) + _interaction(e) + _missing(e)


def _sensitivity(e: OutcomeSelfPreference) -> list[str]:
    rows, words = [], []
    for j in e.judges:
        panel = j.sensitivity
        if panel is None or not (panel.calibrated or panel.answer_matched or panel.did):
            continue
        rows.append(
            [
                j.judge,
                _interval(panel.calibrated),
                _interval(panel.answer_matched),
                _interval(panel.did) if panel.did else f"- ({panel.did_reason or 'not estimable'})",
            ]
        )
        calibrated = panel.calibrated
        if calibrated is None:
            continue
        for other in panel.disagree:
            alternative = getattr(panel, other)
            words.append(
                f"For {j.judge}, the calibrated index ({num(calibrated.estimate)}) and "
                f"{ALTERNATIVES[other]} ({num(alternative.estimate)}) disagree beyond their intervals: the "
                f"calibrated index allows for judges that use the scale differently and for verdicts missing "
                f"on weak answers, the alternative does not" + ("; see also the warnings above" if j.warnings else "") + "."
            )
    parts: list[str] = []
    if rows:
        parts = [
            "Sensitivity panel (same bootstrap; the alternatives assume every judge uses the scale alike):",
            "",
            table(["judge", "calibrated", "answer-matched (slope 1)", "difference-in-differences"], rows),
            "",
        ]
        parts += words + ([""] if words else [])
    if e.pooled:
        p = e.pooled
        line = f"Pooled `{p.formula}` ({p.interval}): same_family {num(p.same_family.estimate, 3)} {ci(p.same_family.ci, 3)}"
        if p.self:
            line += f"; self {num(p.self.estimate, 3)} {ci(p.self.ci, 3)}"
        parts += [line + ".", ""]
    elif e.pooled_reason:
        parts += [f"Pooled model not estimable: {e.pooled_reason}.", ""]
    return parts


def _interaction(e: OutcomeSelfPreference) -> list[str]:
    inter = e.interaction
    if not inter:
        return []
    rows = [[judge] + [_interval(cell) for cell in inter.double_centred[i]] for i, judge in enumerate(inter.judges)]
    return [
        "Judge x generator family after calibration (mean of verdict minus leniency + scale x answer quality, "
        "double-centred; 95% CI). Own-family preference shows on the judge's own family; a cell off it that "
        "stands out is favouritism toward another family, which no per-judge baseline removes:",
        "",
        table(["judge", *inter.families], rows),
        "",
    ]


def _missing(e: OutcomeSelfPreference) -> list[str]:
    by = e.missing.by_judge_family if e.missing else {}
    if not by:
        return []
    families = sorted({f for cells in by.values() for f in cells})
    rows = [
        [judge] + [f"{cells[f].rate:.1%} ({cells[f].missing}/{cells[f].total})" if f in cells else "-" for f in families]
        for judge, cells in by.items()
    ]
    return ["Missing verdicts by judge x generator family (rate, count):", "", table(["judge", *families], rows), ""]


def sentence(entry: JudgeSelfPreference, outcome: Outcome) -> str:
    """One plain sentence per judge for the report."""
    judge = entry.judge
    if entry.estimate is None or entry.ci_low is None or entry.ci_high is None:
        return f"{judge}: not estimable ({entry.reason})."
    est, lo, hi = entry.estimate, entry.ci_low, entry.ci_high
    if outcome == "overall":
        size = f"{abs(est):.2f} points"

        def unit(v: float) -> str:
            return f"{v:.2f}"

        verb = "scores"
    else:
        size = f"{abs(est) * 100:.1f} percentage points"

        def unit(v: float) -> str:
            return f"{v * 100:.1f}"

        verb = "rates"
    if outcome == "overall":
        claim = f"{verb} its own family's answers {size} {'higher' if est >= 0 else 'lower'}"
    else:
        claim = f"{verb} its own family's answers equivalent {size} {'more' if est >= 0 else 'less'} often"
    text = (
        f"{judge} {claim} than their quality warrants (95% CI {unit(lo)} to {unit(hi)}; "
        f"p = {pvalue(entry.p)}, adjusted {_adjusted(entry)})"
    )
    if lo <= 0 <= hi:
        text += "; the interval includes zero"
    if entry.warnings:
        text += f" ({len(entry.warnings)} warning{'s' if len(entry.warnings) > 1 else ''} below)"
    return text + "."
