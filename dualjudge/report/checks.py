"""The report's reliability sections: agreement between judges, missing verdicts, decision risk, probes."""

from __future__ import annotations

from dualjudge.analysis.shared.results import Alpha, RecognitionProbe, Summary
from dualjudge.analysis.shared.words import words
from dualjudge.report.tables import ci, num, rate, table


def section(summary: Summary) -> list[str]:
    return (
        _human(summary)
        + _agreement(summary)
        + _missingness(summary)
        + _decision_risk(summary)
        + _stability(summary)
        + _probes(summary)
    )


def _human(summary: Summary) -> list[str]:
    parts = ["## Human check", ""]
    h = summary.human
    if h is None:
        return parts + [
            "No human annotations yet: `dualjudge human export RUN` writes a blinded, stratified sample "
            "(the paper's 49), `dualjudge human import RUN FILE` compares it with the judges.",
            "",
        ]
    parts.append(
        f"{h.n_samples} samples, annotators {', '.join(h.annotators)}: the human overall score against each "
        f"judge's overall and sub-scores (Pearson r; Spearman, Kendall), and the human equivalence "
        f"decision against the equivalence judge (Cohen's kappa, beside the agreement of always saying the "
        f"majority answer)."
    )
    rows = []
    for judge, j in h.judges.items():
        rows.append(
            [
                judge,
                num(j.overall.pearson),
                num(j.overall.spearman),
                num(j.overall.kendall),
                num(j.accuracy.pearson),
                num(j.completeness.pearson),
                num(j.relevance.pearson),
                num(j.equivalence.kappa),
                rate(j.equivalence.raw_agreement),
                rate(j.equivalence.majority_baseline_agreement),
            ]
        )
    parts += [
        "",
        table(
            [
                "judge",
                "r overall",
                "Spearman",
                "Kendall",
                "r accuracy",
                "r completeness",
                "r relevance",
                "kappa (equiv.)",
                "agreement",
                "majority baseline",
            ],
            rows,
        ),
    ]
    return parts + [""]


def _stability(summary: Summary) -> list[str]:
    if not summary.stability:
        return []
    rows = [
        [judge, kind, str(s.passes), str(s.answers), rate(s.exact_agreement), rate(s.flip_rate), num(s.icc1)]
        for judge, kinds in summary.stability.items()
        for kind, s in kinds.items()
    ]
    return [
        "## Stability across repeated judge passes",
        "",
        f"Every verdict judged again in k passes at a sampling temperature, each with its own seed; a flip is a "
        f"change of the pass/fail verdict (quality: {summary.scale.good}) between passes.",
        "",
        table(["judge", "kind", "passes", "answers", "exact agreement", "flip rate", "ICC(1)"], rows),
        "",
    ]


def _agreement(summary: Summary) -> list[str]:
    ag = summary.agreement
    parts = ["## Agreement between judge models", ""]
    if ag.reason:
        return parts + [ag.reason, ""]
    if ag.alpha_overall and ag.alpha_equivalent:
        parts.append(
            f"Krippendorff's alpha, overall ({ag.alpha_overall.level}): {_alpha(ag.alpha_overall)}; "
            f"equivalent ({ag.alpha_equivalent.level}): {_alpha(ag.alpha_equivalent)}"
        )
    parts += [
        "",
        table(
            ["judges", "kappa (equivalent)", "raw agreement", "n"],
            [[k, num(v.kappa_equivalent), num(v.raw_agreement), str(v.n)] for k, v in ag.pairwise.items()],
        ),
    ]
    return parts + [""]


def _alpha(a: Alpha) -> str:
    """alpha, or why there is none (never a bare dash)."""
    return num(a.alpha) if a.alpha is not None else f"not computed ({a.reason or 'no reason recorded'})"


def _missingness(summary: Summary) -> list[str]:
    varied = summary.by_visibility  # missing rates by visibility where the design has levels
    m = summary.missingness
    parts = [
        "## Missing verdicts and answers",
        "",
        f"{m.answers} answers; {m.never_scored} scored by no judge"
        + (f"; {m.failed_system_calls} system calls produced no answer" if m.failed_system_calls is not None else "")
        + ".",
        "",
    ]
    rows = []
    for judge, j in m.per_judge.items():
        rows.append(
            [
                judge,
                f"{rate(j.quality.overall.rate)} ({j.quality.overall.missing}/{j.quality.overall.asked})",
                f"{rate(j.equivalence.overall.rate)} ({j.equivalence.overall.missing}/{j.equivalence.overall.asked})",
                str(j.one_judge_failed),
                *(["; ".join(f"{v}: {rate(x.rate)}" for v, x in j.quality.by_visibility.items()) or "-"] if varied else []),
                "; ".join(f"{f}: {rate(x.rate)}" for f, x in j.quality.by_system_family.items()) or "-",
            ]
        )
    parts.append(
        table(
            [
                "judge",
                "quality missing",
                "equivalence missing",
                "one judge failed",
                *(["quality missing by visibility"] if varied else []),
                "quality missing by system family",
            ],
            rows,
        )
    )
    return parts + [""]


def _decision_risk(summary: Summary) -> list[str]:
    d = summary.decision_risk
    parts = ["## Decision risk between systems", ""]
    if not d.pairs:
        return parts + [f"Not computed: {d.reason or f'too few systems or {words().units}'}.", ""]
    w = words()
    parts.append(
        f"For each pair of strategies: the winner by mean overall (all judges), the mean difference of the per-{w.unit} "
        f"means (the paired test's delta on per-{w.unit} means above), the probability that the run names the wrong "
        f"winner (that test's one-sided p-value: a t on {w.units} - 1 degrees of freedom), and about how many "
        f"{w.units} would name the right one 90% of the time."
    )
    parts += [
        "",
        table(
            ["pair", "winner", "mean difference", w.units, "P(wrong winner)", f"{w.units} for 90%"],
            [
                [
                    k,
                    v.winner or "tie",
                    num(v.mean_difference, 2),
                    str(v.signs),
                    rate(v.p_wrong_winner),
                    str(v.signs_for_90pct) if v.signs_for_90pct is not None else "-",
                ]
                for k, v in d.pairs.items()
            ],
        ),
    ]
    return parts + [""]


PROBES = {
    "order": "the presentation-order probe ([probes] order)",
    "padding": "the padding probe ([probes] padding)",
    "recognition": "the self-recognition probe ([probes] recognition)",
}


def _probes(summary: Summary) -> list[str]:
    probes = summary.probes
    parts = ["## Judge probes", ""]
    absent = [words for name, words in PROBES.items() if probes is None or getattr(probes, name) is None]
    if absent:
        parts += [f"Not run (no probe table beside the verdicts): {', '.join(absent)}.", ""]
    if not probes:
        return parts
    if probes.order:
        o = probes.order.overall
        parts.append(f"Order probe: flip rate {num(o.estimate)} (95% CI {ci(o.ci)}, {o.n} pairs).")
    for kind, p in (probes.padding.kinds if probes.padding else {}).items():
        parts.append(
            f"Padding probe ({kind}): mean shift {num(p.shift.estimate)} "
            f"(95% CI {ci(p.shift.ci)}); flip rate {num(p.flip_rate.estimate)} "
            f"(95% CI {ci(p.flip_rate.ci)}), n = {p.shift.n}."
        )
    if probes.recognition:
        parts += ["", *recognition_section(probes.recognition)]
    return parts + [""]


def _share(estimate: float | None, interval: list[float] | None) -> str:
    """A share and its interval, both as percentages."""
    return f"{rate(estimate)}" + (f" [{rate(interval[0])}, {rate(interval[1])}]" if interval else "")


def recognition_section(r: RecognitionProbe) -> list[str]:
    """The self-recognition probe: per judge the share of pairs in which it names its own answer, position-corrected,
    and across judges its correlation with self-preference."""
    parts = [f"Self-recognition (Panickssery et al. 2024): {r.definition}.", ""]
    rows = []
    for judge, e in r.per_judge.items():
        acc = e.accuracy
        note = "named one position every time: no recognition" if e.one_position else ""
        if not e.one_position and acc.ci and acc.ci[0] > 0.5:
            note = "above chance"
        rows.append(
            [
                judge,
                str(e.pairs),
                _share(acc.estimate, acc.ci),
                f"{rate(e.first_position.estimate)}",
                "-" if e.single is None else _share(e.single.estimate, e.single.ci),
                note,
            ]
        )
    parts += [
        table(
            [
                "judge",
                "pairs",
                "recognises its own answer [95% CI]",
                "names the answer shown first",
                "single: did you write this?",
                "",
            ],
            rows,
        ),
        "",
    ]
    if r.not_ok:
        parts.append(f"{r.not_ok} pairs gave no verdict in both orders and are left out.")
    c = r.correlation
    if c is not None:
        if c.spearman is None:
            parts.append(f"Recognition and self-preference ({c.outcome}) across judges: not given ({c.reason}).")
        else:
            parts.append(
                f"Recognition and self-preference ({c.outcome}) across {len(c.judges)} judges: Spearman rho "
                f"{num(c.spearman)}, Pearson r {num(c.pearson)} (a description of these judges, not a test)."
            )
    return parts
