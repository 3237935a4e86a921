"""The report's self-preference section, from the summary's typed `self_preference` results."""

from __future__ import annotations

from dualjudge.analysis.shared.choices import Outcome
from dualjudge.analysis.shared.results import Estimate, JudgeSelfPreference, OutcomeSelfPreference, SelfPreference, TestedEstimate
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
    return f"{num(j.estimate)} {ci([j.ci_low, j.ci_high])}" + (
        " widened (warned)" if j.widened else " (warned)" if j.warned else ""
    )


def _adjusted(j: JudgeSelfPreference) -> str:
    return "none (warned)" if j.warned else pvalue(j.p_adjusted)


def _p(j: JudgeSelfPreference) -> str:
    """The p-value of the interval printed beside it: none for a widened one (the bootstrap's is the narrower one's)."""
    return "none (widened)" if j.widened else pvalue(j.p)


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
            [j.judge, j.family, _headline(j), _p(j), _adjusted(j), _interval(j.self), _interval(j.family_other)] for j in estimated
        ]
        header = ["judge", "family", "own-family effect [95% CI]", "p", "adjusted p", "own model", "same family, other model"]
        if not e.belief_reason:
            header.insert(5, "agreement with its own answer held fixed [95% CI]")
            for row, j in zip(rows, estimated):
                row.insert(5, _interval(j.belief.controlled) if j.belief and j.belief.controlled else "-")
        if planted is not None:
            header.insert(3, "planted")
            for row, j in zip(rows, estimated):
                row.insert(3, num(planted.get(j.judge)))
        parts += [table(header, rows), ""]
        if any(j.warned for j in estimated):
            parts += [
                'A judge marked "warned" carries a warning below that may bias its estimate by more than its '
                "interval holds: it gets no adjusted p-value, and its interval is widened to cover its estimates "
                "under the warning (a correlated or copied judge left out, its missing verdicts filled in low); a "
                "widened interval has no p-value (the bootstrap's belongs to the narrower interval).",
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
    return parts + _belief(e, outcome) + _sensitivity(e) + _interaction(e) + _missing(e)


def _belief(e: OutcomeSelfPreference, outcome: Outcome) -> list[str]:
    """The index decomposed: agreement with the judge's own answer held fixed, and the harmful and legitimate parts."""
    parts = ["#### Self-preference or agreement with the judge's own answer?", ""]
    if e.belief_reason:
        return parts + [f"The control cannot be made: {e.belief_reason}.", ""]
    if not any(j.estimate is not None and j.belief is not None for j in e.judges):
        return parts + ["Not given: the index is estimated for no judge here (above), so there is nothing to decompose.", ""]
    parts += [
        "Every judge model also answered the items as a system. A judge that believes an item's answer is X scores "
        "every answer that says X higher, and its own family's answers say what it believes more often than the "
        "others: that raises the index without any favour for the family. The belief-controlled estimate refits the "
        "calibration with a term, per judge, for an answer that shares the judge's own label on the item (the label "
        "most of its own answers there end in, each of them on a tie), so the own-family effect is measured among "
        "answers that agree with the judge and among those that do not. "
        + (
            "It is split by whether the judge's own answer on the item is wrong against the gold label (the harmful "
            "part: the favour that lifts wrong answers, the bias that changes conclusions) or right (the legitimate "
            "part)."
            if e.belief_gold
            else "The table has no gold labels, so the harmful and legitimate parts cannot be told apart."
        ),
        "",
    ]
    if e.never_answered:
        parts += [
            f"Never answered as a system (nor did a model of their family), so their own answers are unknown and they "
            f"are left out of the decomposition: {', '.join(e.never_answered)}.",
            "",
        ]
    rows, words, out = [], [], []
    for j in e.judges:
        b = j.belief
        if b is None or j.estimate is None:
            continue
        rows.append(
            [
                j.judge,
                _headline(j),
                _tested(b.controlled) if b.controlled else f"- ({b.reason})",
                _explained(j, outcome) or "-",
                _interval(b.agreement),
                _tested(b.harmful) if b.harmful else f"- ({b.harmful_reason})",
                _tested(b.legitimate) if b.legitimate else f"- ({b.legitimate_reason})",
            ]
        )
        line = belief_sentence(j, outcome)
        if line:
            words.append(f"- {line}")
        if b.items_split:
            out.append(
                f"{j.judge}: on {b.items_split} items its own answers split evenly between labels; each of the tied "
                f"labels counts as its own there"
            )
    if rows:
        header = [
            "judge",
            "index [95% CI]",
            "agreement held fixed [95% CI] (adjusted p)",
            "explained by agreement",
            "shift for sharing its label",
            "harmful: own answer wrong",
            "legitimate: own answer right",
        ]
        parts += [table(header, rows), ""] + words + [""]
        parts += [f"- {line}." for line in out] + ([""] if out else [])
    return parts


def _tested(e: TestedEstimate) -> str:
    return f"{_interval(e)} ({pvalue(e.p_adjusted) if e.p_adjusted is not None else 'none (warned)'})"


def _amount(v: float, outcome: Outcome) -> str:
    return f"{v:+.2f} points" if outcome == "overall" else f"{v * 100:+.1f} percentage points"


def _explained(j: JudgeSelfPreference, outcome: Outcome) -> str | None:
    """How much of the index agreement explains: index minus the controlled estimate, with its interval."""
    b = j.belief
    if b is None or b.explained is None or j.estimate is None:
        return None
    x = b.explained
    text = f"{_amount(x.estimate, outcome)} {ci([x.ci_low, x.ci_high])}"
    if j.ci_low is not None and j.ci_high is not None and not j.ci_low <= 0 <= j.ci_high and j.estimate != 0:
        text += f", {x.estimate / j.estimate:.0%} of the index"
    return text


def belief_clause(entry: JudgeSelfPreference, outcome: Outcome) -> str | None:
    """The index beside its belief-controlled estimate, in words: what agreement with the judge's own answers
    explains (None where the table has no labels)."""
    b = entry.belief
    if b is None or entry.estimate is None:
        return None
    if b.controlled is None:
        return f"it cannot be told apart from agreement with its own answers ({b.reason})"
    c = b.controlled
    text = (
        f"with agreement with its own answers held fixed it is {_amount(c.estimate, outcome)} (95% CI "
        f"{ci([c.ci_low, c.ci_high])}"
        + (f", adjusted p = {pvalue(c.p_adjusted)}" if c.p_adjusted is not None else ", warned: no adjusted p")
        + ")"
    )
    explained = _explained(entry, outcome)
    if explained:
        text += f": agreement explains {explained}"
    if _only_agreement(entry):
        text += ", so what looks like self-preference is agreement with its own answers"
    return text


def _only_agreement(entry: JudgeSelfPreference) -> bool:
    """The index excludes 0, agreement explains a part whose interval excludes 0, and neither the controlled estimate
    nor its harmful and legitimate parts exclude 0: what the index found is agreement with the judge's own answers."""
    b = entry.belief
    if b is None or b.controlled is None or b.explained is None or entry.ci_low is None or entry.ci_high is None:
        return False

    def zero_in(e: Estimate | None) -> bool:
        return e is None or e.ci_low <= 0 <= e.ci_high

    found = not entry.ci_low <= 0 <= entry.ci_high
    return found and not zero_in(b.explained) and zero_in(b.controlled) and zero_in(b.harmful) and zero_in(b.legitimate)


def belief_sentence(entry: JudgeSelfPreference, outcome: Outcome) -> str | None:
    """The harmful and legitimate parts of one judge's own-family effect in a sentence (None without them)."""
    b = entry.belief
    if b is None or entry.estimate is None or b.controlled is None or (b.harmful is None and b.legitimate is None):
        return None
    parts = []
    if b.harmful is not None:
        h = b.harmful
        parts.append(
            f"where its own answer is wrong (the harmful part, the bias that changes conclusions) "
            f"{_amount(h.estimate, outcome)} {ci([h.ci_low, h.ci_high])}"
        )
    else:
        parts.append(f"the harmful part is not given ({b.harmful_reason})")
    if b.legitimate is not None:
        lg = b.legitimate
        parts.append(f"where it is right (legitimate) {_amount(lg.estimate, outcome)} {ci([lg.ci_low, lg.ci_high])}")
    else:
        parts.append(f"the legitimate part is not given ({b.legitimate_reason})")
    return f"{entry.judge}, agreement held fixed: " + "; ".join(parts) + "."


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
        line = (
            "Not a per-judge estimate: the pooled model, every judge together with one same-family term for all of them "
            f"(it assumes every judge uses the scale alike), `{p.formula}` ({p.interval}): same_family "
            f"{num(p.same_family.estimate, 3)} {ci(p.same_family.ci, 3)}"
        )
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
    tested = (
        "no p-value: the interval is widened to cover the estimates its warnings show"
        if entry.widened
        else f"p = {pvalue(entry.p)}, adjusted {_adjusted(entry)}"
    )
    widened = " widened" if entry.widened else ""
    text = f"{judge} {claim} than their quality warrants (95% CI {unit(lo)} to {unit(hi)}{widened}; {tested})"
    if lo <= 0 <= hi:
        text += "; the interval includes zero"
    clause = belief_clause(entry, outcome)
    if clause:
        text += f"; {clause}"
    if entry.warnings:
        text += f" ({len(entry.warnings)} warning{'s' if len(entry.warnings) > 1 else ''} below)"
    return text + "."
