"""How well the calibrated leaderboard ranks systems, against planted truths, beside the rankings users
make today (the naive mean of every verdict, each judge alone, the panel without same-family judges).

    python benchmarks/stats/system_ranking.py [--datasets 60] [--resamples 200] [--jobs 2] [--gap 0.15]
                                              [--only SUBSTRING] [--equivalent] [--out raw.csv]

Each scenario (simulator.py, written apart from the estimator) plants system qualities per model and per
strategy, and judges with different leniency, scale and noise, self-preference and missing verdicts;
`system_truth` gives every system's true score (its expected verdict with every bonus taken out, averaged
over the judges). Each dataset is analysed by `dualjudge.analysis.board.leaderboard` exactly as `dualjudge stats
systems` would. Reported per scenario, outcome and grouping: coverage of the system scores' intervals,
of the pairwise differences' (Bonferroni-adjusted) intervals and of the rank intervals; how often the
calibrated ranking orders every pair whose true gap exceeds --gap correctly; and how often the naive,
self-excluded and single-judge rankings get such a pair wrong.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from simulator import Scenario, simulate, system_scenarios, system_truth  # noqa: E402

from dualjudge.analysis.board.leaderboard import GROUPINGS, leaderboard  # noqa: E402
from dualjudge.analysis.shared.results import Leaderboard  # noqa: E402
from dualjudge.analysis.shared.table import validate  # noqa: E402
from dualjudge.report.systems import top_doubts  # noqa: E402

GAPS = {"overall": 0.15, "equivalent": 0.03}  # a true gap above this is one a ranking should get right


def true_ranks(truth: dict[str, float]) -> dict[str, int]:
    return {g: 1 + sum(w > v for w in truth.values()) for g, v in truth.items()}


def best_named(board: dict[str, Any]) -> str | None:
    """The system the report headlines as best (report/systems.py): none when a refit changes the top."""
    b = Leaderboard.model_validate(board)
    if b.estimable and len(b.rows) > 1:
        return None if top_doubts(b) else b.rows[0].group
    return b.bounds.top if b.bounds is not None and b.bounds.top_holds else None


def refit_changes(board: dict[str, Any], named: str) -> bool:
    """Whether any refit (leave-one-out, or a doubtful effect held) puts another system first."""
    s, b = board["sensitivity"] or {}, board["bounds"] or {}
    tops = [x["top"] for x in (*s.get("leave_one_judge_out", []), *s.get("leave_one_family_out", []), *b.get("refits", []))]
    return any(t is not None and t != named for t in tops)


def one_dataset(args: tuple[Scenario, int, int, tuple[str, ...], dict[str, float]]) -> list[dict[str, Any]]:
    """One row per (outcome, grouping, what was measured): scores, differences, ranks, orders."""
    sc, seed, resamples, outcomes, gaps = args
    frame, _ = simulate(sc, seed)
    truths = system_truth(sc)
    frame = validate(frame, "simulated")
    rows: list[dict[str, Any]] = []
    for outcome in outcomes:
        boards = leaderboard(frame, outcome, n_resamples=resamples, seed=seed)
        for by in GROUPINGS:
            b, truth = boards[by], truths[outcome][by]
            base = {"scenario": sc.name, "outcome": outcome, "by": by, "seed": seed}
            named = best_named(b)
            true_top = max(truth, key=lambda g: truth[g])
            rows.append({**base, "what": "best named", "value": float(named is not None)})
            if named is not None:
                # wrong: another system is truly better by more than the gap (a tie at the top is not an error)
                rows.append({**base, "what": "best named wrong", "value": float(truth[true_top] - truth[named] > gaps[outcome])})
                rows.append({**base, "what": "best named, a refit changes it", "value": float(refit_changes(b, named))})
            if not b["estimable"]:
                rows.append({**base, "what": "not estimable", "value": 1.0})
                continue
            ranks = true_ranks(truth)
            for r in b["rows"]:
                rows.append({**base, "what": "score covered", "value": float(r["ci_low"] <= truth[r["group"]] <= r["ci_high"])})
                rows.append({**base, "what": "score error", "value": r["estimate"] - truth[r["group"]]})
                rows.append({**base, "what": "rank covered", "value": float(r["rank_low"] <= ranks[r["group"]] <= r["rank_high"])})
            for d in b["differences"]:
                true_d = truth[d["higher"]] - truth[d["lower"]]
                rows.append({**base, "what": "difference covered", "value": float(d["ci_low"] <= true_d <= d["ci_high"])})
            clear = [(g, h) for g in truth for h in truth if truth[g] - truth[h] > gaps[outcome]]
            rankings = {
                "calibrated": {r["group"]: r["estimate"] for r in b["rows"]},
                "naive": {r["group"]: r["estimate"] for r in b["naive"]},
                "self-excluded": {r["group"]: r["estimate"] for r in b["self_excluded"]},
                **{f"single judge ({j})": {r["group"]: r["estimate"] for r in rs} for j, rs in b["judges"].items()},
            }
            for name, values in rankings.items():
                wrong = [values[h] >= values[g] for g, h in clear if values.get(g) is not None and values.get(h) is not None]
                if wrong:
                    rows.append({**base, "what": f"pairs wrong: {name}", "value": float(np.mean(wrong))})
                    rows.append({**base, "what": f"order right: {name}", "value": float(not any(wrong))})
            rows.append({**base, "what": "changes listed", "value": float(len(b["changes"]))})
    return rows


def summarise(raw: pd.DataFrame) -> pd.DataFrame:
    raw = raw.assign(
        judge=raw["what"].str.startswith("pairs wrong: single judge") | raw["what"].str.startswith("order right: single judge")
    )
    raw.loc[raw["judge"], "what"] = raw.loc[raw["judge"], "what"].str.replace(r" \(.*\)$", " (each)", regex=True)
    g = raw.groupby(["scenario", "outcome", "by", "what"], sort=False)["value"]
    out = g.agg(["mean", "size"]).reset_index()
    rmse = (
        raw[raw["what"] == "score error"]
        .groupby(["scenario", "outcome", "by"], sort=False)["value"]
        .apply(lambda e: float(np.sqrt(np.mean(e**2))))
        .reset_index()
        .assign(what="score RMSE", size=0)
    )
    return pd.concat([out, rmse.rename(columns={"value": "mean"})], ignore_index=True)


COLUMNS = (
    "score covered",
    "difference covered",
    "rank covered",
    "order right: calibrated",
    "order right: naive",
    "pairs wrong: calibrated",
    "pairs wrong: naive",
    "pairs wrong: self-excluded",
    "pairs wrong: single judge (each)",
    "score RMSE",
    "changes listed",
    "best named",
    "best named wrong",
    "best named, a refit changes it",
)


def markdown(summary: pd.DataFrame, notes: dict[str, str], gaps: dict[str, float]) -> str:
    head = ["scenario", "outcome", "by", *COLUMNS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (scenario, outcome, by), g in summary.groupby(["scenario", "outcome", "by"], sort=False):
        cell = dict(zip(g["what"], g["mean"]))
        values = [("-" if cell.get(c) is None or pd.isna(cell.get(c)) else f"{cell[c]:.2f}") for c in COLUMNS]
        lines.append(f"| {scenario} | {outcome} | {by} | " + " | ".join(values) + " |")
    lines.append(
        f"\nA pair counts when its true gap exceeds {gaps['overall']} points (overall) or "
        f'{gaps["equivalent"]} (equivalent probability). "order right": every such pair in the right order, '
        f'share of datasets; "pairs wrong": share of such pairs in the wrong order.'
    )
    for name, note in notes.items():
        lines.append(f"\n{name}: {note}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", type=int, default=60)
    parser.add_argument("--resamples", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--gap", type=float, default=GAPS["overall"], help="points (overall); equivalent: a fifth")
    parser.add_argument("--only", default="")
    parser.add_argument("--equivalent", action="store_true", help="also the equivalent outcome")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    gaps = {"overall": args.gap, "equivalent": args.gap / 5}
    outcomes = ("overall", "equivalent") if args.equivalent else ("overall",)
    chosen = [s for s in system_scenarios() if args.only in s.name]
    work = [(sc, seed, args.resamples, outcomes, gaps) for sc in chosen for seed in range(args.datasets)]
    t0 = time.time()
    with ProcessPoolExecutor(args.jobs) as pool:
        raw = pd.DataFrame([row for rows in pool.map(one_dataset, work, chunksize=2) for row in rows])
    if args.out:
        raw.to_csv(args.out, index=False)
    print(markdown(summarise(raw), {s.name: s.note for s in chosen if s.note}, gaps))
    print(f"\n{len(work)} datasets, {args.resamples} bootstrap resamples each, {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
