"""Coverage of the pairwise estimates on planted tables: quality only, position only, own term only, all three (with
decisiveness and ties), and all three with item-level answer noise the model does not have.

    python benchmarks/stats/pairwise_coverage.py [--tables 200] [--resamples 200] [--items 60] [--jobs 2]

For each scenario, `--tables` tables are simulated (analysis/pairwise/simulate.py: 4 systems of 4 families, 4 judges,
every pair in both orders) and analysed (analysis/pairwise/estimate.py); per judge and term (own-family, first slot,
decisiveness) the share of tables whose 95% interval holds the planted value, and the mean estimate minus it. The
planted own term is also the truth on the rate scale: the own-choice points it adds, computed from the planted
parameters on each table's own comparisons. With answer noise the logit terms are attenuated by design (a
marginal Bradley-Terry fit of a mixed model); the rate scale is reported beside them.
"""

from __future__ import annotations

import argparse
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace

import numpy as np
from threadpoolctl import threadpool_limits

from dualjudge.analysis.pairwise.cells import coded, comparisons
from dualjudge.analysis.pairwise.estimate import OWN, own_rates, pairwise
from dualjudge.analysis.pairwise.model import Params
from dualjudge.analysis.pairwise.simulate import PlantedPairs, simulate_pairs
from dualjudge.analysis.pairwise.table import validate_pairwise

JUDGES = ("google-j", "meta-j", "mistral-j", "qwen-j")
BASE = PlantedPairs(answer_sd=0.0)
SCENARIOS: dict[str, PlantedPairs] = {
    "quality only": BASE,
    "position only": replace(BASE, strength=dict.fromkeys(BASE.strength, 0.0), position={"qwen-j": 0.8, "meta-j": -0.5}),
    "own term only": replace(BASE, strength=dict.fromkeys(BASE.strength, 0.0), own={"qwen-j": 0.6, "google-j": -0.4}),
    "all three": replace(
        BASE,
        position={"qwen-j": 0.8, "mistral-j": -0.5},
        own={"qwen-j": 0.6, "google-j": -0.4},
        decisiveness={"meta-j": 2.0, "mistral-j": 0.5},
        tie={"google-j": 0.5, "meta-j": 0.3},
    ),
    "all three, answer noise": replace(
        BASE, answer_sd=0.5, position={"qwen-j": 0.8}, own={"qwen-j": 0.6, "google-j": -0.4}, decisiveness={"meta-j": 2.0}
    ),
}


@dataclass(frozen=True)
class Row:
    own: dict[str, tuple[float, float, float]]  # judge -> (estimate, low, high), logit
    points: dict[str, tuple[float, float, float, float]]  # judge -> (estimate, low, high, planted points)
    position: dict[str, tuple[float, float, float]]
    decisiveness: dict[str, tuple[float, float, float]]


def planted_points(frame, planted: PlantedPairs) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """The own-choice points the planted own term adds on this table's comparisons (answer noise left out)."""
    comps = comparisons(frame)
    x = np.column_stack([np.ones(len(comps.judge)), comps.own_first.astype(float) - comps.own_second.astype(float)])
    cells = coded(comps, x).cells
    d = np.log([planted.decisiveness.get(j, 1.0) for j in comps.judges])
    beta = np.array([[planted.position.get(j, 0.0), planted.own.get(j, 0.0)] for j in comps.judges])
    tau = np.array([np.log(planted.tie[j]) if planted.tie.get(j) else -np.inf for j in comps.judges])
    p = Params(np.array([planted.strength.get(s, 0.0) for s in comps.systems]), d, beta, tau)
    full, off = own_rates(cells, p, cells.counts, ()), own_rates(cells, p, cells.counts, (OWN,))
    return {j: float(full[i] - off[i]) for i, j in enumerate(comps.judges)}


def one(args: tuple[str, int, int, int]) -> Row:
    name, seed, resamples, items = args
    planted = replace(SCENARIOS[name], n_items=items)
    frame = validate_pairwise(simulate_pairs(planted, seed))
    with threadpool_limits(1, user_api="blas"):
        result = pairwise(frame, seed=seed, n_resamples=resamples)
    truth = planted_points(frame, planted)

    def iv(e):  # type: ignore[no-untyped-def]
        return (e.estimate, e.ci_low, e.ci_high)

    return Row(
        own={j.judge: iv(j.own_logit) for j in result.judges if j.own_logit},
        points={j.judge: (*iv(j.own_points), truth[j.judge]) for j in result.judges if j.own_points},
        position={j.judge: iv(j.position) for j in result.judges if j.position},
        decisiveness={j.judge: iv(j.decisiveness) for j in result.judges if j.decisiveness},
    )


def summary(name: str, rows: list[Row]) -> list[str]:
    planted = SCENARIOS[name]
    geo = np.exp(np.mean([np.log(planted.decisiveness.get(j, 1.0)) for j in JUDGES]))
    lines = []
    alike = len({planted.strength.get(s, 0.0) for s in planted.systems}) == 1  # no strength gap: no decisiveness
    for term, truth_of in (
        ("own term (logit)", lambda j: planted.own.get(j, 0.0)),
        ("first slot (logit)", lambda j: planted.position.get(j, 0.0)),
        *(() if alike else (("decisiveness", lambda j: planted.decisiveness.get(j, 1.0) / geo),)),
    ):
        field = {"own term (logit)": "own", "first slot (logit)": "position", "decisiveness": "decisiveness"}[term]
        cover, bias = [], []
        for judge in JUDGES:
            got = [getattr(r, field)[judge] for r in rows if judge in getattr(r, field)]
            if not got:
                continue
            t = truth_of(judge)
            cover.append(np.mean([lo <= t <= hi for _, lo, hi in got]))
            bias.append(np.mean([e for e, _, _ in got]) - t)
        if cover:
            lines.append(
                f"| {name} | {term} | {min(cover):.3f}-{max(cover):.3f} | {min(bias):+.3f} to {max(bias):+.3f} | {len(rows)} |"
            )
    cover, bias = [], []
    for judge in JUDGES:
        got = [r.points[judge] for r in rows if judge in r.points]
        cover.append(np.mean([lo <= t <= hi for _, lo, hi, t in got]))
        bias.append(np.mean([e - t for e, _, _, t in got]))
    lines.append(
        f"| {name} | own term (rate) | {min(cover):.3f}-{max(cover):.3f} | {min(bias):+.4f} to {max(bias):+.4f} | {len(rows)} |"
    )
    return lines


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tables", type=int, default=200)
    ap.add_argument("--resamples", type=int, default=200)
    ap.add_argument("--items", type=int, default=60)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    print(
        f"Pairwise coverage: {args.tables} tables per scenario, {args.items} items, 4 systems of 4 families, 4 judges, "
        f"every pair in both orders; {args.resamples} item-cluster resamples per table; 95% t intervals"
    )
    print("| scenario | term | coverage (per judge, min-max) | mean bias (per judge, min to max) | tables |")
    print("|---|---|---|---|---|")
    with ProcessPoolExecutor(args.jobs) as pool:
        for name in (n for n in SCENARIOS if args.only in n):
            rows = list(pool.map(one, [(name, seed, args.resamples, args.items) for seed in range(args.tables)]))
            for line in summary(name, rows):
                print(line, flush=True)


if __name__ == "__main__":
    main()
