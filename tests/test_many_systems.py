"""Statistics written for thousands of systems agree with the pair-at-a-time definitions they replace: the
leaderboard's ranks on (U, U) arrays (analysis/board/ranks.py) and the difference-in-differences taken family by
family (analysis/pointwise/did.py); a board of many systems lists what a reader compares while counting every change."""

from __future__ import annotations

from itertools import combinations

import numpy as np

from dualjudge.analysis.board.ranks import LIST_ALL, MAX_CHANGES, bonferroni, calibrated_board, pair_se, ranking_changes
from dualjudge.analysis.shared.bootstrap import cluster_se


def _draws(n_groups: int, seed: int = 0, missing: float = 0.03) -> np.ndarray:
    rng = np.random.default_rng(seed)
    draws = rng.normal(6, 0.3, (201, n_groups)) + np.linspace(-2, 2, n_groups)
    draws[1:][rng.random((200, n_groups)) < missing] = np.nan  # a refit without a group's signs
    return draws


def test_every_pairs_standard_error_is_cluster_se_of_its_draws():
    draws = _draws(40)[1:]
    draws[:, 5] = draws[:, 4]  # two groups that always move together: their difference has SE 0
    draws[:30, 7] = np.nan  # too few finite draws for an SE
    se = pair_se(draws, 12)
    for a, b in combinations(range(40), 2):
        ref = cluster_se(draws[:, a] - draws[:, b], 12)
        if ref is None:
            assert np.isnan(se[a, b]) and np.isnan(se[b, a])
        else:
            assert abs(se[a, b] - ref) < 1e-12 and se[a, b] == se[b, a]
    assert se[4, 5] == 0 and np.isnan(se[7]).all()


def test_rank_intervals_and_differences_are_the_pairwise_definitions():
    groups = [f"s{i:03d}" for i in range(LIST_ALL + 20)]
    scores = _draws(len(groups), seed=1)
    board = calibrated_board(scores, groups, 15)
    point, n = scores[0], len(groups)
    crit = bonferroni(15, n - 1)
    for row in board.rows:
        u = groups.index(row["group"])
        pairs = [(k, cluster_se(scores[1:, k] - scores[1:, u], 15)) for k in range(n) if k != u]
        above = sum(point[k] - point[u] - crit * s > 0 for k, s in pairs if s is not None)
        below = sum(point[u] - point[k] - crit * s > 0 for k, s in pairs if s is not None)
        assert (row["rank_low"], row["rank_high"]) == (1 + above, n - below)
    # more groups than LIST_ALL: the differences listed are the neighbours in rank, each higher minus lower
    order = [r["group"] for r in board.rows]
    assert len(board.differences) == n - 1
    assert {frozenset((d["higher"], d["lower"])) for d in board.differences} == {frozenset(p) for p in zip(order, order[1:])}
    assert all(d["difference"] >= 0 and d["ci_low"] < d["difference"] < d["ci_high"] for d in board.differences)


def test_a_large_board_counts_every_change_and_lists_the_largest_per_ranking():
    groups = [f"s{i:03d}" for i in range(200)]
    scores = _draws(len(groups), seed=2, missing=0)
    board = calibrated_board(scores, groups, 30)
    reversed_plain = [{"group": g, "estimate": -float(v)} for g, v in zip(groups, scores[0])]  # every pair turned
    changes, total = ranking_changes(board, {"naive": reversed_plain}, lambda c: "")
    crit = bonferroni(30, 200 * 199 // 2)
    point = scores[0]
    sure = sum(
        point[i] - point[j] - crit * (cluster_se(scores[1:, i] - scores[1:, j], 30) or np.inf) > 0
        for i in range(200)
        for j in range(200)
        if i != j
    )
    assert total == sure > MAX_CHANGES and len(changes) == MAX_CHANGES
    sizes = [c["difference"] for c in changes]
    assert sizes == sorted(sizes, reverse=True) and sizes[0] == max(scores[0]) - min(scores[0])


def test_the_did_taken_family_by_family_is_the_mean_over_generator_pairs():
    from itertools import product

    import pandas as pd

    from dualjudge.analysis.pointwise.did import per_judge_did
    from dualjudge.analysis.pointwise.grid import build_grid
    from dualjudge.analysis.shared.bootstrap import resample_counts
    from dualjudge.analysis.simulated.simulate import simulate

    frame = simulate(seed=4)
    frame["system_model"] = frame["system_model"] + "-v" + (frame["repeat"] % 2).astype(str)  # 10 generators
    frame = frame.drop(frame.sample(frac=0.2, random_state=1).index)  # missing verdicts: empty cells in resamples
    data = build_grid(frame, "overall", "family").long
    got, _ = per_judge_did(data, 50, 3)
    signs = sorted(data["sign"].unique())
    weights = np.vstack([np.ones(len(signs)), resample_counts(len(signs), 50, 3)])
    per_sign = data.groupby(["sign", "judge", "generator"])["y"].agg(["sum", "count"])

    def y(j: str, g: str) -> np.ndarray:  # judge j's mean for generator g, in the full sample and each resample
        cell = per_sign.xs((j, g), level=("judge", "generator")).reindex(signs, fill_value=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.asarray((weights @ cell["sum"].to_numpy()) / (weights @ cell["count"].to_numpy()))

    jfam, gfam = dict(zip(data["judge"], data["jfam"])), dict(zip(data["generator"], data["gfam"]))
    gens = sorted(gfam)
    for j, interval in got.items():
        parts = []
        for g, h in product([g for g in gens if gfam[g] == jfam[j]], [h for h in gens if gfam[h] != jfam[j]]):
            neutral = [k for k in sorted(jfam) if jfam[k] not in (gfam[g], gfam[h])]
            if neutral:
                parts.append((y(j, g) - y(j, h)) - np.mean([y(k, g) - y(k, h) for k in neutral], axis=0))
        values = np.mean(parts, axis=0)
        assert interval is not None and abs(interval.estimate - values[0]) < 1e-12
        assert abs(interval.se - np.std(values[1:], ddof=1) * np.sqrt(len(signs) / (len(signs) - 1))) < 1e-12
    assert len(got) == 4 and isinstance(data, pd.DataFrame)


def test_an_analysis_of_many_systems_tells_its_parts_and_draws_the_best_forty(tmp_path):
    from PIL import Image

    from dualjudge.analysis.simulated.simulate import simulate
    from dualjudge.report.build import analyze
    from dualjudge.report.figures import DPI, FIGURE_ROWS

    frame = simulate(n_signs=8, items_per_sign=7, repeats=3, seed=5)
    answer = frame["item_id"].astype("category").cat.codes * 3 + frame["repeat"].astype(int)
    frame["system_model"] = frame["system_model"] + "-v" + (answer % 16).astype(str)  # 5 x 16 systems
    assert frame["system_model"].nunique() > FIGURE_ROWS + 20
    table = tmp_path / "t.parquet"
    frame.to_parquet(table, index=False)
    parts: list[str] = []
    summary = analyze(table, tmp_path / "a", n_resamples=100, progress=parts.append)
    assert parts[0] == "per-judge statistics" and parts[-1] == "report and figures"
    assert any(p.startswith("calibrated leaderboard") for p in parts) and any(p.startswith("self-preference") for p in parts)
    board = summary.systems.overall["system_model"]
    assert len(board.rows) == frame["system_model"].nunique() and len(board.differences) == len(board.rows) - 1
    height = Image.open(tmp_path / "a" / "figures" / "systems.png").size[1]
    assert height <= (0.9 + 0.42 * FIGURE_ROWS) * DPI * 1.05  # the best forty drawn, not every system


def test_the_pooled_regression_with_generator_effects_absorbed_is_the_one_with_dummies(monkeypatch):
    from dualjudge.analysis.pointwise import pooled
    from dualjudge.analysis.pointwise.grid import build_grid
    from dualjudge.analysis.simulated.simulate import simulate

    frame = simulate(seed=6)
    answer = frame["item_id"].astype("category").cat.codes * 3 + frame["repeat"].astype(int)
    frame["system_model"] = frame["system_model"] + "-v" + (answer % 8).astype(str)  # 40 generators
    data = build_grid(frame, "overall", "family").long
    dummies, _ = pooled.pooled_model(data)
    monkeypatch.setattr(pooled, "ABSORB_ABOVE", 0)
    absorbed, _ = pooled.pooled_model(data)
    assert dummies is not None and absorbed is not None
    for key in ("estimate", "se", "p"):
        assert abs(dummies["same_family"][key] - absorbed["same_family"][key]) < 1e-9 * max(1, abs(dummies["same_family"][key]))
    assert np.allclose(dummies["same_family"]["ci"], absorbed["same_family"]["ci"], atol=1e-9)
