"""Bias, RMSE and 95% CI coverage of the self-preference estimators, scenario by scenario.

    python benchmarks/stats/self_preference_coverage.py [--datasets 60] [--resamples 200] [--jobs 2]
                                                        [--failures | --beliefs] [--only SUBSTRING] [--out results.csv]

Each scenario (simulator.py, written apart from the estimator) plants known effects; every dataset is
analysed by `dualjudge.analysis.pointwise.self_preference` exactly as `dualjudge analyze` would, and each
identified judge's estimate and interval are compared with the planted truth. Estimators: the
calibrated index (the headline), the answer-matched fixed-effects model (scales fixed at 1) and the
pair-matched difference-in-differences; with --beliefs also the index decomposed (analysis/pointwise/belief.py): the
belief-controlled estimate and its harmful and legitimate parts. Prints a Markdown table; `--out` also writes the raw rows.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from simulator import Scenario, belief_scenarios, failure_scenarios, scenarios, simulate  # noqa: E402

from dualjudge.analysis.pointwise.self_preference import self_preference  # noqa: E402
from dualjudge.analysis.shared.table import validate  # noqa: E402

ESTIMATORS = {"calibrated": None, "answer_matched": "answer_matched", "did": "did"}


def one_dataset(args: tuple[Scenario, int, int, tuple[str, ...]]) -> list[dict[str, object]]:
    sc, seed, resamples, outcomes = args
    frame, truth = simulate(sc, seed)
    result = self_preference(validate(frame, "simulated"), seed=seed, n_resamples=resamples, outcomes=outcomes)
    rows: list[dict[str, object]] = []
    for outcome in outcomes:
        for entry in result[outcome]["judges"]:
            judge = entry["judge"]
            planted = truth[outcome][judge]
            covered = (
                entry["estimate"] is not None
                and planted["estimate"] is not None
                and entry["ci_low"] <= planted["estimate"] <= entry["ci_high"]
            )
            rows.append(
                {
                    "scenario": sc.name,
                    "outcome": outcome,
                    "seed": seed,
                    "judge": judge,
                    "estimator": "handling",
                    "quantity": "affected" if judge in sc.affected else "other",
                    "estimate": np.nan,
                    "low": np.nan,
                    "high": np.nan,
                    "truth": np.nan,
                    "identified": entry["identified"],
                    "warned": bool(entry.get("warnings")),
                    "covered_alone": covered,
                    "null": planted["estimate"] == 0,
                    "significant": entry.get("p_adjusted") is not None and entry["p_adjusted"] < 0.05,
                }
            )
            for name, key in ESTIMATORS.items():
                iv = entry if key is None else (entry.get("sensitivity") or {}).get(key)
                if key is None and entry["estimate"] is None or key is not None and iv is None:
                    continue
                est = iv["estimate"]
                rows.append(
                    {
                        "scenario": sc.name,
                        "outcome": outcome,
                        "seed": seed,
                        "judge": judge,
                        "estimator": name,
                        "quantity": "own family",
                        "estimate": est,
                        "low": iv["ci_low"],
                        "high": iv["ci_high"],
                        "truth": planted["estimate"],
                    }
                )
            for part in ("self", "family_other"):
                if entry.get(part):
                    rows.append(
                        {
                            "scenario": sc.name,
                            "outcome": outcome,
                            "seed": seed,
                            "judge": judge,
                            "estimator": "calibrated",
                            "quantity": part,
                            "estimate": entry[part]["estimate"],
                            "low": entry[part]["ci_low"],
                            "high": entry[part]["ci_high"],
                            "truth": planted[part],
                        }
                    )
            belief = entry.get("belief") or {}
            for part in ("controlled", "harmful", "legitimate") if sc.accuracy else ():
                if belief.get(part) and planted.get(part) is not None:
                    rows.append(
                        {
                            "scenario": sc.name,
                            "outcome": outcome,
                            "seed": seed,
                            "judge": judge,
                            "estimator": "belief-controlled" if part == "controlled" else f"{part} part",
                            "quantity": {"controlled": "own family", "harmful": "own family, own answer wrong"}.get(
                                part, "own family, own answer right"
                            ),
                            "estimate": belief[part]["estimate"],
                            "low": belief[part]["ci_low"],
                            "high": belief[part]["ci_high"],
                            "truth": planted[part],
                        }
                    )
        if sc.favour:
            inter = result[outcome]["interaction"]
            for (judge, fam), _ in sc.favour.items():
                cell = inter["double_centred"][inter["judges"].index(judge)][inter["families"].index(fam)]
                rows.append(
                    {
                        "scenario": sc.name,
                        "outcome": outcome,
                        "seed": seed,
                        "judge": judge,
                        "estimator": "interaction matrix",
                        "quantity": f"favour toward {fam} detected",
                        "estimate": float(cell is not None and cell["ci_low"] > 0),
                        "low": np.nan,
                        "high": np.nan,
                        "truth": 1.0,
                    }
                )
    return rows


def handling(raw: pd.DataFrame) -> pd.DataFrame:
    """Per scenario, outcome and kind of judge (affected by the failure or not): how often a judge is not
    identified, carries a warning, or neither while its interval misses the truth (the silent failures)."""
    h = raw[raw["estimator"] == "handling"].copy()
    if h.empty:
        return h
    h["handled"] = ~h["identified"].astype(bool) | h["warned"].astype(bool) | h["covered_alone"].astype(bool)
    h["silent_miss"] = ~h["handled"]
    h["null_significant"] = h["significant"].astype(bool).where(h["null"].astype(bool))  # false positives
    g = h.groupby(["scenario", "outcome", "quantity"], sort=False)
    return g.agg(
        judges=("judge", "size"),
        not_identified=("identified", lambda x: float((~x.astype(bool)).mean())),
        warned=("warned", "mean"),
        handled=("handled", "mean"),
        silent_miss=("silent_miss", "mean"),
        null_significant=("null_significant", "mean"),
    ).reset_index()


def handling_markdown(table: pd.DataFrame) -> str:
    lines = [
        "| scenario | outcome | judges | n | not identified | warned | handled (not identified, warned or covered) "
        "| null judges with adjusted p < .05 |",
        "|" + "---|" * 8,
    ]
    for r in table.itertuples():
        fp = "-" if r.null_significant != r.null_significant else f"{r.null_significant:.2f}"
        lines.append(
            f"| {r.scenario} | {r.outcome} | {r.quantity} | {r.judges} | {r.not_identified:.2f} | "
            f"{r.warned:.2f} | {r.handled:.2f} | {fp} |"
        )
    return "\n".join(lines)


def summarise(raw: pd.DataFrame) -> pd.DataFrame:
    raw = raw[raw["estimator"] != "handling"]
    raw = raw.assign(error=raw["estimate"] - raw["truth"], covered=(raw["low"] <= raw["truth"]) & (raw["truth"] <= raw["high"]))
    g = raw.groupby(["scenario", "outcome", "estimator", "quantity"], sort=False)
    out = g.agg(
        intervals=("error", "size"),
        bias=("error", "mean"),
        rmse=("error", lambda e: float(np.sqrt(np.mean(e**2)))),
        coverage=("covered", "mean"),
        detection=("estimate", "mean"),
    ).reset_index()
    detect = out["quantity"].str.startswith("favour")
    out.loc[detect, ["bias", "rmse", "coverage"]] = np.nan
    out.loc[~detect, "detection"] = np.nan
    return out


def markdown(summary: pd.DataFrame, notes: dict[str, str]) -> str:
    lines = ["| scenario | outcome | estimator | quantity | intervals | bias | RMSE | 95% coverage |", "|" + "---|" * 8]
    for r in summary.itertuples():
        if r.quantity.startswith("favour"):
            cells = [f"detected in {r.detection:.0%} of datasets", "", ""]
        else:
            cells = [f"{r.bias:+.3f}", f"{r.rmse:.3f}", f"{r.coverage:.2f}"]
        lines.append(f"| {r.scenario} | {r.outcome} | {r.estimator} | {r.quantity} | {r.intervals} | " + " | ".join(cells) + " |")
    for name, note in notes.items():
        lines.append(f"\n{name}: {note}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", type=int, default=60)
    parser.add_argument("--resamples", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", default="")
    parser.add_argument("--equivalent", action="store_true", help="also the equivalent outcome")
    parser.add_argument(
        "--failures", action="store_true", help="the failure modes of real judge data instead (warnings and identification)"
    )
    parser.add_argument(
        "--beliefs",
        action="store_true",
        help="the decomposition's scenarios instead (judges favouring answers that share their own label; issue 54)",
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    outcomes = ("overall", "equivalent") if args.equivalent else ("overall",)
    pool_of = failure_scenarios() if args.failures else belief_scenarios() if args.beliefs else scenarios()
    chosen = [s for s in pool_of if args.only in s.name]
    work = [(sc, seed, args.resamples, outcomes) for sc in chosen for seed in range(args.datasets)]
    t0 = time.time()
    with ProcessPoolExecutor(args.jobs) as pool:
        raw = pd.DataFrame([row for rows in pool.map(one_dataset, work, chunksize=2) for row in rows])
    if args.out:
        raw.to_csv(args.out, index=False)
    notes = {s.name: ("not identified: " if not s.identified else "") + s.note for s in chosen if s.note or not s.identified}
    print(markdown(summarise(raw), notes))
    print("\n" + handling_markdown(handling(raw)))
    print(f"\n{len(work)} datasets, {args.resamples} bootstrap resamples each, {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
