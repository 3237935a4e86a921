"""report.md and a self-contained report.html (figures embedded as data URLs), from summary.json."""

from __future__ import annotations

import base64
from pathlib import Path

import pandas as pd

from dualjudge.analysis.choices import Lineage
from dualjudge.analysis.results import Summary
from dualjudge.files import write_text
from dualjudge.report import figures as fig
from dualjudge.report.self_preference import section as self_preference_section
from dualjudge.report.tables import ci, num, table


def _figures(frame: pd.DataFrame, summary: Summary, out: Path, lineage: Lineage) -> list[tuple[str, Path]]:
    made = []
    d = out / "figures"
    made.append(("Mean overall by visibility (all judges)", fig.degradation_figure(
        frame, d / "degradation.png", "Degradation with occlusion (all judges)")))
    for judge, s in summary.judges.items():
        safe = judge.replace("/", "_")
        sub = frame[frame["judge_model"] == judge]
        made.append((f"Joint distribution of the two judges: {judge}",
                     fig.joint_figure(sub, d / f"joint_{safe}.png", f"Quality vs equivalence ({judge})")))
        if s.type2_by_visibility:
            made.append((f"Type II rate by visibility: {judge}",
                         fig.type2_figure(s.type2_by_visibility, d / f"type2_{safe}.png", f"Type II ({judge})")))
    matrices = {name: o.interaction for name, o in summary.self_preference.outcomes().items() if o.interaction}
    if matrices:
        made.append(("Judge x generator family after calibration: mean of (verdict - leniency - scale x answer quality), "
                     "own-family effects included; not raw means", fig.heatmap_figure(
                         matrices, d / "family_heatmap.png", f"Calibrated residuals, judge x generator family ({lineage})")))
    return made


def markdown(summary: Summary, images: list[tuple[str, str]]) -> str:
    parts = ["# dualjudge report", "",
             f"Rows: {summary.n_rows}; runs: {', '.join(summary.runs) or '-'}. "
             f"CIs: sign-level cluster bootstrap, {summary.bootstrap.resamples} resamples: percentile intervals, "
             f"except self-preference (its section says how its intervals are made).", "",
             "## Systems (all judges pooled)", ""]
    parts.append(table(["system", "n", "mean overall", "equivalence rate", "format compliance"],
                        [[k, str(v.n), num(v.mean_overall), num(v.equivalence_rate), num(v.format_compliance)]
                         for k, v in summary.systems.items()]))
    parts += ["", "## Paired t-tests against SA (per-cell means; and on per-sign means)", ""]
    parts.append(table(["system", "delta overall", "t", "p", "cells", "delta (signs)", "t (signs)", "p (signs)"],
                        [[k, num(v.delta_overall), num(v.t), num(v.p, 4), str(v.n_cells),
                          num(v.sign_clustered.delta_overall), num(v.sign_clustered.t),
                          num(v.sign_clustered.p, 4)] for k, v in summary.paired_tests.items()]))
    parts += ["", "## Per judge model", ""]
    rows = []
    for j, s in summary.judges.items():
        rows.append([j, str(s.n_rows), num(s.point_biserial_r), ci(s.point_biserial_ci),
                     f"{s.type1.count} ({num(s.type1.rate)})", f"{s.type2.count} ({num(s.type2.rate)})",
                     num(s.within_judge_agreement.kappa)])
    parts.append(table(["judge", "rows", "point-biserial r", "95% CI", "Type I", "Type II", "kappa(>7, equiv.)"], rows))
    for j, s in summary.judges.items():
        parts += ["", f"### Type II by visibility: {j}", ""]
        parts.append(table(["visibility", "answers", "> 7", "Type II", "marginal", "conditional"],
                            [[v, str(x.n), str(x.n_high), str(x.count), num(x.marginal_rate),
                              num(x.conditional_rate)] for v, x in s.type2_by_visibility.items()]))
    parts += [""] + self_preference_section(summary.self_preference)
    ag = summary.agreement
    parts += ["## Agreement between judge models", ""]
    if ag.reason:
        parts.append(ag.reason)
    elif ag.alpha_overall and ag.alpha_equivalent:
        parts.append(f"Krippendorff's alpha, overall ({ag.alpha_overall.level}): {num(ag.alpha_overall.alpha)}; "
                     f"equivalent ({ag.alpha_equivalent.level}): {num(ag.alpha_equivalent.alpha)}")
        parts += ["", table(["judges", "kappa (equivalent)", "raw agreement", "n"],
                             [[k, num(v.kappa_equivalent), num(v.raw_agreement), str(v.n)]
                              for k, v in ag.pairwise.items()])]
    probes = summary.probes
    if probes:
        parts += ["", "## Judge probes", ""]
        if probes.order:
            o = probes.order.overall
            parts.append(f"Order probe: flip rate {num(o.estimate)} (95% CI {ci(o.ci)}, {o.n} pairs).")
        for kind, p in (probes.padding.kinds if probes.padding else {}).items():
            parts.append(f"Padding probe ({kind}): mean shift {num(p.shift.estimate)} "
                         f"(95% CI {ci(p.shift.ci)}); flip rate {num(p.flip_rate.estimate)} "
                         f"(95% CI {ci(p.flip_rate.ci)}), n = {p.shift.n}.")
    parts += ["", "## Figures", ""]
    for caption, src in images:
        parts += [f"![{caption}]({src})", ""]
    return "\n".join(parts) + "\n"


def render_report(frame: pd.DataFrame, summary: Summary, out: Path, lineage: Lineage,
                  figures: bool = True) -> None:
    made = _figures(frame, summary, out, lineage) if figures else []
    md = markdown(summary, [(c, str(p.relative_to(out))) for c, p in made])
    write_text(out / "report.md", md)
    embedded = markdown(summary, [(c, "data:image/png;base64," + base64.b64encode(p.read_bytes()).decode())
                                  for c, p in made])
    write_text(out / "report.html", _html(embedded))


def _html(md: str) -> str:
    """A small Markdown-to-HTML rendering for the report's own constructs (headings, tables, images)."""
    from markdown_it import MarkdownIt

    body = MarkdownIt("commonmark").enable("table").render(md)
    return ("<!doctype html><html><head><meta charset='utf-8'><title>dualjudge report</title><style>"
            "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}"
            "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}"
            "td:first-child,th:first-child{text-align:left}img{max-width:100%}</style></head><body>"
            + body + "</body></html>")

