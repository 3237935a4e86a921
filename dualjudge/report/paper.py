"""The report's sections for the paper's own statistics (Tables 1-3, Sections 3-4), per judge model."""

from __future__ import annotations

from dualjudge.analysis.shared.results import Summary
from dualjudge.analysis.shared.words import words
from dualjudge.report.links import linked, visibility_key
from dualjudge.report.tables import ci, count_rate, num, pvalue, rate, table


def section(summary: Summary, links: bool = False) -> list[str]:
    """The paper's tables; with `links`, the Type I and Type II counts open the explorer on their rows."""
    s = summary
    variant = s.judge_variant
    parts = ["## Strategies (raw means, all judges pooled, biases included)", ""]
    parts.append(
        table(
            ["strategy", "n", "mean overall", "equivalence rate", "format compliance"],
            [
                [k, str(v.n), num(v.mean_overall), num(v.equivalence_rate), num(v.format_compliance)]
                for k, v in s.strategies.items()
            ],
        )
    )
    w = words()
    parts += ["", f"## Paired t-tests against SA (per-cell means; and on per-{w.unit} means)", ""]
    if s.paired_tests:
        parts.append(
            table(
                ["system", "delta overall", "t", "p", "cells", f"delta ({w.units})", f"t ({w.units})", f"p ({w.units})"],
                [
                    [
                        k,
                        num(v.delta_overall),
                        num(v.t),
                        pvalue(v.p),
                        str(v.n_cells),
                        num(v.sign_clustered.delta_overall),
                        num(v.sign_clustered.t),
                        pvalue(v.sign_clustered.p),
                    ]
                    for k, v in s.paired_tests.items()
                ],
            )
        )
    else:
        parts.append("No paired tests: the table has no SA answers beside another strategy on the same cells.")
    good, poor = s.scale.good, s.scale.poor
    parts += [
        "",
        "## Per judge model",
        "",
        f"{_convention(s.overall_convention, good)} Type I: equivalent and {poor}; Type II: not equivalent "
        f"and {good}; rates with 95% {w.unit}-cluster bootstrap intervals.",
        "",
    ]
    if all(js.point_biserial_n == 0 for js in s.judges.values()):
        return (
            parts
            + [
                "The point-biserial r and the Type I/II rates need both judges' verdicts on the same rows; this table has none.",
                "",
            ]
            + _identification(summary)
        )
    rows = []
    for j, js in s.judges.items():
        given = js.overall_given_equivalent
        rows.append(
            [
                j,
                str(js.n_rows),
                num(js.point_biserial_r),
                ci(js.point_biserial_ci),
                _mean_sd(given.get("1")),
                _mean_sd(given.get("0")),
                _linked(count_rate(js.type1.count, js.type1.rate, js.type1.ci), links, judge=j, type="type1", variant=variant),
                _linked(count_rate(js.type2.count, js.type2.rate, js.type2.ci), links, judge=j, type="type2", variant=variant),
                rate(js.agreement_share),
                num(js.within_judge_agreement.kappa),
            ]
        )
    parts.append(
        table(
            [
                "judge",
                "rows",
                "point-biserial r",
                "95% CI",
                "overall if equivalent (SD)",
                "overall if not (SD)",
                "Type I",
                "Type II",
                "neither",
                f"kappa({good}, equiv.)",
            ],
            rows,
        )
    )
    for j, js in s.judges.items() if s.by_visibility else ():  # a design of one level has no rates by it
        parts += ["", f"### Type II by visibility: {j}", ""]
        parts.append(
            table(
                ["visibility", "answers", good, "Type II", "marginal [95% CI]", "conditional [95% CI]"],
                [
                    [
                        v,
                        str(x.n),
                        str(x.n_high),
                        _linked(str(x.count), links, judge=j, type="type2", visibility=visibility_key(v), variant=variant),
                        _rate_ci(x.marginal_rate, x.marginal_ci),
                        _rate_ci(x.conditional_rate, x.conditional_ci),
                    ]
                    for v, x in js.type2_by_visibility.items()
                ],
            )
        )
    return parts + [""] + _identification(summary)


def _linked(text: str, links: bool, **state: object) -> str:
    """The text with its first number linked to the explorer's rows behind it."""
    head, _, rest = text.partition(" ")
    return linked(head, links, **state) + (f" {rest}" if rest else "")


def _convention(convention: str, good: str) -> str:
    if convention.startswith("judge_given"):
        return "Overall is the judge's own integer grade (the judge_given convention)."
    text = (
        f"Overall is the mean of the three integer sub-scores (accuracy, completeness, relevance), so a "
        f'"good" answer ({good}) includes 7.33; the judge_given convention (a run option) uses the judge\'s own '
        f"integer grade instead."
    )
    return text if convention == "mean_of_subscores" else f"{text} ({convention})"


def _mean_sd(m: object) -> str:
    if m is None or getattr(m, "mean", None) is None:
        return "-"
    return f"{num(m.mean)} ({num(m.sd)}), n = {m.n}"  # type: ignore[attr-defined]  # any summary with mean, sd, n


def _rate_ci(value: float | None, interval: list[float] | None) -> str:
    return rate(value) + (f" [{rate(interval[0])}, {rate(interval[1])}]" if interval else "")


def _identification(summary: Summary) -> list[str]:
    ident = summary.identification
    w = words()
    scored = "Exact match" if w.exact else "Identification"  # a value (a number) is matched; a label identified
    parts = [f"## {scored} ({w.label})" + (" and the Section 3 audit" if w.paper else ""), ""]
    if ident is None:
        gold = "category" if w.paper else "label"
        return parts + [f"No gold or predicted {gold} in the table: no identification accuracy.", ""]
    parts.append(
        table(
            ["system", f"{scored.lower()} accuracy", "correct", "answers"],
            [[k, rate(v.accuracy), str(v.correct), str(v.n)] for k, v in ident.by_system.items()],
        )
    )
    parts += [
        "",
        table(
            ["system model", f"{scored.lower()} accuracy", "correct", "answers"],
            [[k, rate(v.accuracy), str(v.correct), str(v.n)] for k, v in ident.by_system_model.items()],
        ),
        "",
    ]
    a = ident.audit
    parts.append(
        f"Answers scored {a.cut} whose {w.label} is wrong, per judge: "
        + "; ".join(f"{j}: {x.good_but_wrong} of {x.good}" for j, x in a.per_judge.items())
        + "."
    )
    parts.append(
        f"Systems ranked by judge score: {', '.join(a.ranking_by_score) or '-'}; by {scored.lower()}: "
        f"{', '.join(a.ranking_by_identification) or '-'} (Kendall's tau {num(a.kendall_tau)})."
    )
    return parts + [""]
