"""The report's rubric clarification section (analysis/pointwise/clarification.py, studies/clarify.py)."""

from __future__ import annotations

from dualjudge.analysis.shared.bootstrap import MIN_RELIABLE_SIGNS
from dualjudge.analysis.shared.results import Clarification, Paired
from dualjudge.analysis.shared.words import words
from dualjudge.report.designs import paired_text
from dualjudge.report.tables import num, table


def section(c: Clarification) -> list[str]:
    r = c.record
    s = r.settings
    parts = [
        "## Rubric clarification (label-free, with its control)",
        "",
        f"{words().Units} split by a seeded draw (seed {s['seed']}) stratified by {r.split['stratified_by']}: development "
        f"{', '.join(r.split['dev'])}; test {', '.join(r.split['test'])}. Clauses ranked on the development split "
        f"by the {r.statistic}. The {s['k']} most contested were rewritten by {r.editor.model} (clarified); "
        f"the control had {s['k']} other clauses drawn at random rewritten by the same editor with the same "
        "instruction. Human labels took no part in choosing or editing clauses.",
        "",
    ]
    if r.status != "done":
        parts += [
            "**Warning:** the experiment did not finish; run the same `dualjudge rubric clarify` command again to resume it.",
            "",
        ]
    arm_of = {cid: "clarified" for cid in r.selected} | {cid: "control" for cid in r.control}
    parts += [
        table(
            ["rank", "clause", "disagreement", "alpha", "rewritten in"],
            [[str(x.rank), x.clause, num(x.disagreement, 3), num(x.alpha), arm_of.get(x.clause, "-")] for x in r.ranking],
        ),
        "",
    ]
    for arm in ("clarified", "control"):
        tries = [a for a in r.editor.attempts if a.arm == arm]
        if arm in r.rubrics:
            parts.append(
                f"- {arm}: rewritten on try {len(tries)} of {r.editor.tries}; rubric `{r.rubrics[arm]}` "
                f"(diff beside it: `{arm}.diff`)."
            )
        else:
            why = "; ".join(p for a in tries for p in a.problems) or "no reply"
            parts.append(
                f"- {arm}: **not made**: every try of the editor broke the rubric's structure ({why}); the arm was not judged."
            )
    parts.append("")
    if not c.differences:
        return parts + ["No contrast could be formed on the test split (an arm has no verdicts).", ""]
    signs = len(r.split["test"])
    if signs < MIN_RELIABLE_SIGNS:
        parts += [
            f"**Warning:** only {signs} test {words().units}: the intervals are unreliable below {MIN_RELIABLE_SIGNS} "
            f"{words().units} (and degenerate with two or three).",
            "",
        ]
    parts += [
        "Agreement between judges on the test split (Krippendorff's alpha; interval on overall, nominal on "
        f"equivalent), and the paired differences ({words().unit}-cluster bootstrap, one draw of {words().units} for both "
        f"rubrics, 95% t interval on {words().units} - 1 degrees of freedom):",
        "",
    ]
    parts += [
        table(
            ["rubric", "alpha overall", "alpha equivalent"],
            [[arm, _alpha(c, arm, "overall"), _alpha(c, arm, "equivalent")] for arm in c.arms],
        ),
        "",
    ]
    rows = []
    for name, d in c.differences.items():
        overall, equivalent = d.get("overall"), d.get("equivalent")
        rows.append(
            [
                name,
                paired_text(overall if isinstance(overall, Paired) else None, 3),
                paired_text(equivalent if isinstance(equivalent, Paired) else None, 3),
                num(d.get("answers")),
                num(d.get("signs")),
            ]
        )
    parts += [table(["contrast", "alpha overall", "alpha equivalent", "answers", words().units], rows), ""]
    parts += [
        "Does clarification change self-preference? The calibrated index (overall, points) per judge under "
        "each rubric, on the test split:",
        "",
    ]
    sp_rows = [
        [judge, name, num(e.ref), num(e.other), paired_text(e.difference)]
        for name, judges in c.self_preference.items()
        for judge, e in judges.items()
        if e.difference
    ]
    if sp_rows:
        parts += [table(["judge", "contrast (a - b)", "index under b", "index under a", "a - b [95% CI]"], sp_rows), ""]
    reasons = {
        judge: e.reason or "no interval" for judges in c.self_preference.values() for judge, e in judges.items() if not e.difference
    }
    parts += [f"- {judge}: not estimable on the test split ({reason})." for judge, reason in sorted(reasons.items())]
    parts += [""] if reasons else (["No judge's self-preference is estimable on the test split.", ""] if not sp_rows else [])
    if c.human:
        h_rows = [
            [arm, judge, num(v.get("r_overall")), num(v.get("kappa_equivalent")), num(v.get("n"))]
            for arm, judges in c.human.items()
            for judge, v in judges.items()
        ]
        parts += [
            "Agreement with the human labels on the test split (evaluation only):",
            "",
            table(["rubric", "judge", "r (overall)", "kappa (equivalent)", "n"], h_rows),
            "",
        ]
    else:
        parts += [
            "No human labels were imported, so agreement with humans is not measured (`dualjudge human export` "
            "and `human import`).",
            "",
        ]
    return parts


def _alpha(c: Clarification, arm: str, value: str) -> str:
    a = c.alpha.get(arm, {}).get(value)
    if a is None:
        return "-"
    return paired_text(a.interval) if a.interval else num(a.alpha)
