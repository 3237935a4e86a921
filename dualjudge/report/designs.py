"""The report's judge-design sections: the variants side by side, their paired differences, and each
other variant's own tables (the reference variant's are the report's main sections)."""

from __future__ import annotations

from dualjudge.analysis.shared.results import DesignComparison, Paired, Rate, Summary
from dualjudge.analysis.shared.words import words
from dualjudge.report.checks import section as checks_section
from dualjudge.report.paper import section as paper_section
from dualjudge.report.self_preference import section as self_preference_section
from dualjudge.report.systems import section as systems_section
from dualjudge.report.tables import ci, num, rate, table


def _paired(value: Paired | int | None) -> str:
    """A difference entry of alpha_differences (the answers count sits beside them, as an int)."""
    return paired_text(value if isinstance(value, Paired) else None)


def paired_text(p: Paired | None, digits: int = 2) -> str:
    if p is None:
        return "-"
    interval = f" {ci([p.ci_low, p.ci_high], digits)}" if p.ci_low is not None else " (no interval)"
    return f"{num(p.estimate, digits)}{interval}"


def _rate(r: Rate | None) -> str:
    if r is None or r.estimate is None:
        return "-"
    interval = f" [{rate(r.ci[0])}, {rate(r.ci[1])}]" if r.ci else ""
    return f"{rate(r.estimate)}{interval} (n {r.n})"


def section(d: DesignComparison) -> list[str]:
    kinds = sorted({k for row in d.rows for k in row.padding_flip})
    parts = [
        "## Judge designs compared",
        "",
        f"The same judges on the same answers, asked as {len(d.variants)} variants: {', '.join(d.variants)} "
        f"(reference: {d.reference}). Flip rates: {words().unit}-cluster percentile intervals, as in the probe checks. "
        f"Differences: {d.paired}. A lower flip rate means a more consistent judge, not a more accurate one: "
        "the human columns (when labels were imported) and the dual-judge tables say which is closer to the "
        "truth.",
        "",
    ]
    rows = []
    for r in d.rows:
        rows.append(
            [
                r.judge,
                r.variant,
                _rate(r.order_flip),
                *(_rate(r.padding_flip.get(k)) for k in kinds),
                paired_text(r.self_preference),
                num(r.human_r_overall),
                num(r.human_kappa_equivalent),
            ]
        )
    parts += [
        table(
            [
                "judge",
                "variant",
                "order flips",
                *(f"padding flips ({k})" for k in kinds),
                "self-preference (overall) [95% CI]",
                "human r (overall)",
                "human kappa (equivalent)",
            ],
            rows,
        ),
        "",
    ]
    parts += [
        "Agreement between judges (Krippendorff's alpha; interval on overall, nominal on equivalent), each "
        f"variant on the answers it shares with {d.reference}:",
        "",
    ]
    alpha_rows = []
    for v in d.variants:
        a = d.alpha[v]
        diff = d.alpha_differences.get(v, {})
        alpha_rows.append(
            [
                v,
                paired_text(a["overall"].interval) if a["overall"].interval else num(a["overall"].alpha),
                paired_text(a["equivalent"].interval) if a["equivalent"].interval else num(a["equivalent"].alpha),
                _paired(diff.get("overall")) if v != d.reference else "reference",
                _paired(diff.get("equivalent")) if v != d.reference else "reference",
            ]
        )
    parts += [
        table(
            ["variant", "alpha overall", "alpha equivalent", f"overall - {d.reference}", f"equivalent - {d.reference}"], alpha_rows
        ),
        "",
    ]
    if d.differences:
        parts += [f"Paired differences per judge (variant minus {d.reference}, on what both judged):", ""]
        diff_rows, reasons = [], {}
        for x in d.differences:
            sp = x.self_preference
            if sp and sp.reason:
                reasons[x.judge] = sp.reason
            sp_text = paired_text(sp.difference) if sp and sp.difference else ("not estimable" if sp and sp.reason else "-")
            diff_rows.append(
                [
                    x.judge,
                    x.variant,
                    paired_text(x.overall),
                    paired_text(x.equivalent, 3),
                    paired_text(x.order_flip, 3),
                    paired_text(x.padding_flip, 3),
                    sp_text,
                ]
            )
        parts += [
            table(
                [
                    "judge",
                    "variant",
                    "mean overall",
                    "equivalent rate",
                    "order flip rate",
                    "padding flip rate",
                    "self-preference index",
                ],
                diff_rows,
            ),
            "",
        ]
        parts += [f"- {judge}: self-preference not estimable ({reason})." for judge, reason in sorted(reasons.items())]
        parts += [""] if reasons else []
    return parts


def variant_sections(summary: Summary) -> list[str]:
    """Each other variant's dual-judge tables, self-preference and checks, one heading level down."""
    parts: list[str] = []
    for name, s in summary.variants.items():
        parts += [
            f"## Judge variant: {name}",
            "",
            f"Rows: {s.n_rows}. The same analyses as above, on the {name} judges' verdicts.",
            "",
        ]
        for line in systems_section(s.systems) + paper_section(s) + self_preference_section(s.self_preference) + checks_section(s):
            parts.append("#" + line if line.startswith("#") else line)
    return parts
