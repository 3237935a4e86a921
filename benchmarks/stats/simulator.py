"""A verdict-table simulator with planted self-preference, written apart from the estimator's code.

Each answer (sign x variant x generator x repeat) has a true quality Q. Judge j's verdict on it is

    latent = leniency[j] + base + slope[j] * (Q - base) + bonus[j](answer) + N(0, noise[j]^2)
    accuracy, completeness, relevance = clip(round(latent + N(0, 0.5^2)), 0, 10); overall = their mean
    equivalent = [latent + N(0, 1) > threshold[j]]

A slope other than 1 stretches or compresses the judge's scale around the middle of the quality
range (base, 6 unless the scenario says otherwise). bonus is the planted self-preference:
`self_effect[j]` on the judge's own model's answers, `family_effect[j]` on other models of its
family, and `favour[(j, family)]` toward another family.
Verdicts go missing by the scenario's mechanism (at random, on weak answers, on chosen signs).
Q = base + quality[generator] + strategy[strategy] + sign effect + item effect + visibility term + noise.

The truth an estimator must recover is the planted effect on the observed scale: for each of the
judge's own-family answers, the expected verdict with the bonus minus without it (exact, through
the normal CDF, so clipping at 0 and 10 and the rounding are accounted for), averaged over the
answers the judge actually rated. Without clipping this equals the planted bonus.

For the system leaderboard the truth is each system's expected verdict from the panel's judges with every
bonus taken out, averaged over the judges, over the population of signs and items (Q's sign, item and
answer noise integrated out exactly, clipping and rounding included): `system_truth`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
from scipy.stats import norm

SUB_NOISE = 0.5
SIGN_SD, ITEM_SD, ANSWER_SD = 0.8, 0.5, 0.5  # the random parts of an answer's quality
VIS_SLOPE = 1.5  # quality per unit of visibility
VISIBILITIES = (1.0, 0.8, 0.7, 0.5, 0.3, 0.2, 0.1)


@dataclass(frozen=True)
class Scenario:
    name: str
    judges: dict[str, str]  # judge model -> family
    generators: dict[str, str]  # generator model -> family
    quality: dict[str, float]  # generator mean quality (added to a base of 6)
    leniency: dict[str, float] = field(default_factory=dict)
    slope: dict[str, float] = field(default_factory=dict)
    noise: dict[str, float] = field(default_factory=dict)
    self_effect: dict[str, float] = field(default_factory=dict)
    family_effect: dict[str, float] = field(default_factory=dict)
    favour: dict[tuple[str, str], float] = field(default_factory=dict)  # (judge, other family) -> bonus
    base: float = 6.0
    family_by_sign: float = 0.0  # sd of a generator-family x sign quality interaction
    missing: str = "none"  # none | random | weak_own | weak_signs | own_score
    # failure modes of real judge data (issue 22)
    shared_noise: tuple[str, str, float] | None = None  # two judges whose noise shares this fraction of its variance
    copies: dict[str, str] = field(default_factory=dict)  # judge -> the judge whose verdicts it repeats exactly
    constant: dict[str, float] = field(default_factory=dict)  # judge -> the latent score it always gives
    taste: dict[str, float] = field(default_factory=dict)  # judge -> its weight on a second quality dimension
    quality2: dict[str, float] = field(default_factory=dict)  # generator -> its mean on the second dimension
    missing_rate: float = 0.0
    missing_judges: tuple[str, ...] = ()  # own_score: the judges that fail this way (empty: every judge)
    n_signs: int = 30
    items_per_sign: int = 13
    repeats: int = 1
    identified: bool = True  # False: the model's assumptions fail here, so bias is expected and shown
    affected: tuple[str, ...] = ()  # failure modes: the judges whose estimate the failure can bias
    strategies: dict[str, float] = field(default_factory=lambda: {"sa": 0.0, "cot": 0.0})  # strategy -> quality shift
    # labels (issue 54): each answer ends in a label, right with probability accuracy[generator] (no labels when empty)
    accuracy: dict[str, float] = field(default_factory=dict)
    confusions: int = 2  # the wrong labels an item's answers choose from
    right_quality: float = 1.0  # quality a right label adds
    belief_effect: dict[str, float] = field(default_factory=dict)  # judge -> bonus on answers sharing its own label
    harmful_effect: dict[str, float] = field(default_factory=dict)  # judge -> own-family bonus where its own label is wrong
    note: str = ""

    def with_signs(self, n: int) -> Scenario:
        return replace(self, name=f"{self.name}, {n} signs", n_signs=n)


def _expected_score(mu: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """E[clip(round(mu + N(0, sd^2)), 0, 10)], exactly."""
    edges = np.arange(0.5, 10.0, 1.0)  # 0.5 .. 9.5
    above = norm.sf((edges[None, :] - mu[:, None]) / sd[:, None])  # P(X >= k + 0.5), k = 0..9
    return above.sum(axis=1)  # sum over k of P(score > k) = E[score] for a score in 0..10


def _expected_equivalent(mu: np.ndarray, threshold: np.ndarray, sd: np.ndarray) -> np.ndarray:
    return norm.sf((threshold - mu) / sd)


def simulate(sc: Scenario, seed: int) -> tuple[pd.DataFrame, dict[str, dict[str, dict[str, float | None]]]]:
    """A verdict table and, per outcome and judge, the truth: own-family effect, self, family_other."""
    long = _simulate_long(sc, seed)
    return _table(long, sc), _truth(long, list(sc.judges))


def sample_system_truth(sc: Scenario, seed: int) -> dict[str, dict[str, dict[str, float]]]:
    """Like system_truth, but for the answers this seed drew: each system's mean, over its answers and the
    judges, of the expected verdict given the answer's simulated quality with every bonus taken out (what
    the table's estimates should come close to; system_truth is what their intervals cover)."""
    long = _simulate_long(sc, seed)
    long = long.assign(both=long["g"] + " / " + long["strategy"])
    out: dict[str, dict[str, dict[str, float]]] = {}
    for outcome, column in (("overall", "e_overall_clean"), ("equivalent", "e_eq_clean")):
        per_answer = long.groupby(["g", "strategy", "both", "s", "i", "r"], sort=False)[column].mean().reset_index()
        out[outcome] = {
            by: {str(k): float(v) for k, v in per_answer.groupby(col)[column].mean().items()}
            for by, col in (("system_model", "g"), ("system", "strategy"), ("both", "both"))
        }
    return out


def _simulate_long(sc: Scenario, seed: int) -> pd.DataFrame:
    """Every (answer, judge) verdict with its parts, before the table is formed."""
    rng = np.random.default_rng(seed)
    judges = list(sc.judges)
    gens = list(sc.generators)
    families = sorted(set(sc.generators.values()))
    sign_effect = rng.normal(0, SIGN_SD, sc.n_signs)
    fam_sign = (
        rng.normal(0, sc.family_by_sign, (len(families), sc.n_signs))
        if sc.family_by_sign
        else np.zeros((len(families), sc.n_signs))
    )
    threshold = {j: sc.leniency.get(j, 0.0) + sc.base for j in judges}
    rows = []
    for s in range(sc.n_signs):
        for i in range(sc.items_per_sign):
            item_effect = rng.normal(0, ITEM_SD)
            vis = VISIBILITIES[i % len(VISIBILITIES)]
            for g in gens:
                fam_index = families.index(sc.generators[g])
                for strategy, shift in sc.strategies.items():
                    for r in range(sc.repeats):
                        q = (
                            sc.base
                            + sc.quality[g]
                            + shift
                            + sign_effect[s]
                            + fam_sign[fam_index, s]
                            + item_effect
                            + VIS_SLOPE * (vis - 0.6)
                            + rng.normal(0, ANSWER_SD)
                        )
                        q2 = sc.quality2.get(g, 0.0) + rng.normal(0, 0.8)  # a second dimension, independent of q
                        label = "cat"
                        if sc.accuracy:
                            right = rng.random() < sc.accuracy[g]
                            label = "right" if right else f"wrong-{rng.integers(sc.confusions)}"
                            q += sc.right_quality * right
                        rows.append((s, i, vis, g, strategy, r, q, q2, label))
    answers = pd.DataFrame(rows, columns=["s", "i", "vis", "g", "strategy", "r", "q", "q2", "label"])
    shared = rng.normal(0, 1, len(answers))  # the noise two judges share (shared_noise)
    out = []
    for j in judges:
        jf = sc.judges[j]
        lam, slope, sd = sc.leniency.get(j, 0.0), sc.slope.get(j, 1.0), sc.noise.get(j, 1.0)
        gfam = answers["g"].map(sc.generators)
        own_model = (answers["g"] == j).to_numpy()
        own_family = (gfam == jf).to_numpy() & ~own_model
        own_label = _own_labels(sc, j, answers)
        agree = (answers["label"].to_numpy() == own_label) & (own_label != None)  # noqa: E711
        judge_wrong = (own_label != None) & (own_label != "right")  # noqa: E711
        # what the judge's belief adds (any answer sharing its own label) is no own-family effect: it stays in the
        # verdict with or without the bonus, and the off-diagonal favour with it
        favour = gfam.map(lambda f: sc.favour.get((j, f), 0.0)).to_numpy() + np.where(agree, sc.belief_effect.get(j, 0.0), 0.0)
        bonus = (
            np.where(own_model, sc.self_effect.get(j, 0.0), 0.0)
            + np.where(own_family, sc.family_effect.get(j, 0.0), 0.0)
            + np.where((own_model | own_family) & judge_wrong, sc.harmful_effect.get(j, 0.0), 0.0)
            + favour
        )
        w2 = sc.taste.get(j, 0.0)
        mu0 = lam + sc.base + slope * ((1 - w2) * (answers["q"].to_numpy() - sc.base) + w2 * answers["q2"].to_numpy())
        noise = rng.normal(0, 1, len(answers))
        if sc.shared_noise and j in sc.shared_noise[:2]:
            rho = sc.shared_noise[2]
            noise = np.sqrt(1 - rho) * noise + np.sqrt(rho) * shared
        latent = mu0 + bonus + sd * noise
        if j in sc.constant:
            mu0 = np.full(len(answers), sc.constant[j])
            bonus = np.zeros(len(answers))
            latent = mu0.copy()
        sub_noise = 0.0 if j in sc.constant else SUB_NOISE
        subs = np.clip(np.rint(latent[:, None] + rng.normal(0, sub_noise, (len(answers), 3))), 0, 10)
        equivalent = latent + (0.0 if j in sc.constant else rng.normal(0, 1.0, len(answers))) > threshold[j]
        present = _present(sc, j, answers, own_model | own_family, rng, latent)
        frame = answers.assign(
            judge=j,
            judge_family=jf,
            acc=subs[:, 0],
            comp=subs[:, 1],
            rel=subs[:, 2],
            overall=subs.mean(axis=1),
            equivalent=equivalent,
            present=present,
            own_model=own_model,
            own_family=own_family,
            judge_wrong=judge_wrong,
            e_overall_with=_expected_score(mu0 + bonus, np.full(len(mu0), np.hypot(sd, SUB_NOISE))),
            e_overall_without=_expected_score(mu0 + favour, np.full(len(mu0), np.hypot(sd, SUB_NOISE))),
            e_overall_clean=_expected_score(mu0, np.full(len(mu0), np.hypot(sd, SUB_NOISE))),
            e_eq_clean=_expected_equivalent(mu0, threshold[j], np.hypot(sd, 1.0)),
            e_eq_with=_expected_equivalent(mu0 + bonus, threshold[j], np.hypot(sd, 1.0)),
            e_eq_without=_expected_equivalent(mu0 + favour, threshold[j], np.hypot(sd, 1.0)),
        )
        out.append(frame)
    for copy, source in sc.copies.items():  # the same model entered twice: identical verdicts under two names
        original = out[judges.index(source)]
        out[judges.index(copy)] = original.assign(
            judge=copy,
            judge_family=sc.judges[copy],
            own_model=(original["g"] == copy).to_numpy(),
            own_family=((original["g"].map(sc.generators) == sc.judges[copy]) & (original["g"] != copy)).to_numpy(),
        )
    return pd.concat(out, ignore_index=True)


def _own_labels(sc: Scenario, judge: str, answers: pd.DataFrame) -> np.ndarray:
    """(answers,) the judge's own label on each answer's item: its model's answer there (the first strategy,
    repeat 0), or its family's first generator's where the judge is no generator; None without labels."""
    if not sc.accuracy:
        return np.full(len(answers), None, dtype=object)
    source = judge if judge in sc.generators else next((g for g, f in sc.generators.items() if f == sc.judges[judge]), None)
    if source is None:
        return np.full(len(answers), None, dtype=object)
    first = next(iter(sc.strategies))
    mine = answers[(answers["g"] == source) & (answers["strategy"] == first) & (answers["r"] == 0)]
    label = dict(zip(zip(mine["s"], mine["i"]), mine["label"]))
    return np.array([label.get(k) for k in zip(answers["s"], answers["i"])], dtype=object)


def system_truth(sc: Scenario) -> dict[str, dict[str, dict[str, float]]]:
    """Per outcome and grouping (system_model, system, both), each group's true score: the judges' mean
    expected verdict without any bonus, over the population of signs and items (superpopulation: the
    bootstrap over signs makes intervals for it). Each group weighs its generators, strategies and
    visibilities as the design does (equally). A verdict's sub-score is clip(round(X)) with X normal (the
    quality's random parts, the judge's noise and the sub-score noise added), so its expectation is exact."""
    var_q = SIGN_SD**2 + ITEM_SD**2 + ANSWER_SD**2 + sc.family_by_sign**2
    vis = np.array([VISIBILITIES[i % len(VISIBILITIES)] for i in range(sc.items_per_sign)])
    cells: dict[tuple[str, str], dict[str, float]] = {}
    for g in sc.generators:
        for strategy, shift in sc.strategies.items():
            q_mean = sc.base + sc.quality[g] + shift + VIS_SLOPE * (vis - 0.6)  # per item position
            score, eq = [], []
            for j in sc.judges:
                lam, slope, sd = sc.leniency.get(j, 0.0), sc.slope.get(j, 1.0), sc.noise.get(j, 1.0)
                if j in sc.constant:
                    score.append(float(_expected_score(np.full(len(vis), sc.constant[j]), np.full(len(vis), 1e-9)).mean()))
                    eq.append(float((sc.constant[j] > lam + sc.base)))
                    continue
                w2 = sc.taste.get(j, 0.0)  # a judge's weight on the second quality dimension (sd 0.8 around its mean)
                mu = lam + sc.base + slope * ((1 - w2) * (q_mean - sc.base) + w2 * sc.quality2.get(g, 0.0))
                spread = np.sqrt(slope**2 * ((1 - w2) ** 2 * var_q + w2**2 * 0.8**2) + sd**2)
                score.append(float(_expected_score(mu, np.full(len(vis), np.hypot(spread, SUB_NOISE))).mean()))
                eq.append(float(_expected_equivalent(mu, np.full(len(vis), lam + sc.base), np.hypot(spread, 1.0)).mean()))
            cells[(g, strategy)] = {"overall": float(np.mean(score)), "equivalent": float(np.mean(eq))}
    out: dict[str, dict[str, dict[str, float]]] = {}
    for outcome in ("overall", "equivalent"):
        out[outcome] = {
            "system_model": {g: float(np.mean([cells[(g, s)][outcome] for s in sc.strategies])) for g in sc.generators},
            "system": {s: float(np.mean([cells[(g, s)][outcome] for g in sc.generators])) for s in sc.strategies},
            "both": {f"{g} / {s}": cells[(g, s)][outcome] for g in sc.generators for s in sc.strategies},
        }
    return out


def _present(
    sc: Scenario, judge: str, answers: pd.DataFrame, own: np.ndarray, rng: np.random.Generator, latent: np.ndarray
) -> np.ndarray:
    n = len(answers)
    if sc.missing == "own_score":  # no verdict when the judge's own would-be score on its family is low
        if sc.missing_judges and judge not in sc.missing_judges:
            return np.ones(n, dtype=bool)
        low = latent < np.median(latent[own]) if own.any() else np.zeros(n, dtype=bool)
        return ~(own & low & (rng.random(n) < sc.missing_rate))
    if sc.missing == "random":
        return rng.random(n) >= sc.missing_rate
    if sc.missing == "weak_own":  # fails on its own family's weaker answers
        weak = answers["q"].to_numpy() < np.median(answers["q"])
        return ~(own & weak & (rng.random(n) < sc.missing_rate))
    if sc.missing == "weak_signs":  # fails on its own family's answers in the signs where that family is weakest
        q_by_sign = answers[own].groupby("s")["q"].mean()
        worst = set(q_by_sign.nsmallest(max(1, len(q_by_sign) // 3)).index)
        in_worst = answers["s"].isin(worst).to_numpy()
        return ~(own & in_worst & (rng.random(n) < sc.missing_rate))
    return np.ones(n, dtype=bool)


def _truth(long: pd.DataFrame, judges: list[str]) -> dict[str, dict[str, dict[str, float | None]]]:
    truth: dict[str, dict[str, dict[str, float | None]]] = {"overall": {}, "equivalent": {}}
    rated = long[long["present"]]
    for outcome, (w, wo) in {
        "overall": ("e_overall_with", "e_overall_without"),
        "equivalent": ("e_eq_with", "e_eq_without"),
    }.items():
        for j in judges:
            g = rated[rated["judge"] == j]
            delta = g[w] - g[wo]
            own = g["own_model"] | g["own_family"]
            wrong = own & g["judge_wrong"]
            right = own & ~g["judge_wrong"]
            truth[outcome][j] = {
                "estimate": float(delta[own].mean()) if own.any() else None,
                "self": float(delta[g["own_model"]].mean()) if g["own_model"].any() else None,
                "family_other": float(delta[g["own_family"]].mean()) if g["own_family"].any() else None,
                # the decomposition's (issue 54): the own-family effect with the judge's belief held fixed is the
                # planted own-family effect itself; its parts where the judge's own label is wrong and right
                "controlled": float(delta[own].mean()) if own.any() else None,
                "harmful": float(delta[wrong].mean()) if wrong.any() else None,
                "legitimate": float(delta[right].mean()) if right.any() else None,
            }
    return truth


def _table(long: pd.DataFrame, sc: Scenario) -> pd.DataFrame:
    """The verdict-table contract (DESIGN.md); missing verdicts have status parse_failure."""
    status = np.where(long["present"], "ok", "parse_failure")
    present = long["present"].to_numpy()
    frame = pd.DataFrame(
        {
            "run_id": "sim",
            "item_id": [f"S{s:02d}_i{i}" for s, i in zip(long["s"], long["i"])],
            "sign_code": [f"S{s:02d}" for s in long["s"]],
            "category": "right" if sc.accuracy else "cat",
            "visibility": long["vis"],
            "mode": np.where(long["vis"] == 1.0, "none", "bottom_up"),
            "repeat": long["r"],
            "system": long["strategy"],
            "system_model": long["g"],
            "system_family": long["g"].map(sc.generators),
            "predicted_category": long["label"],
            "format_ok": True,
            "judge_model": long["judge"],
            "judge_family": long["judge_family"],
            "accuracy": np.where(present, long["acc"], np.nan),
            "completeness": np.where(present, long["comp"], np.nan),
            "relevance": np.where(present, long["rel"], np.nan),
            "overall": np.where(present, long["overall"], np.nan),
            "equivalent": pd.array(np.where(present, long["equivalent"], None), dtype="boolean"),
            "quality_status": status,
            "equivalence_status": status,
        }
    )
    frame["system_base_llm"] = frame["system_family"]
    frame["judge_base_llm"] = frame["judge_family"]
    return frame


# -- scenarios -------------------------------------------------------------------------------------
FOUR = {"qwen-7b": "qwen", "gemma-12b": "google", "llama-11b": "meta", "pixtral-12b": "mistral"}
FOUR_GENS = {**FOUR}
FOUR_Q = {"qwen-7b": 0.4, "gemma-12b": 0.1, "llama-11b": -0.3, "pixtral-12b": 0.0}


def _families(n: int) -> tuple[dict[str, str], dict[str, float]]:
    names = ["qwen", "google", "meta", "mistral", "microsoft", "openbmb"][:n]
    models = {f"{f}-m": f for f in names}
    return models, {m: 0.6 - 0.3 * k for k, m in enumerate(models)}


def scenarios() -> list[Scenario]:
    planted = {"qwen-7b": 0.3, "gemma-12b": 0.0, "llama-11b": 0.5, "pixtral-12b": 0.2}
    base = Scenario(
        "leniency only",
        FOUR,
        FOUR_GENS,
        FOUR_Q,
        leniency={"qwen-7b": 0.6, "gemma-12b": -0.4, "llama-11b": 0.2, "pixtral-12b": 0.0},
        self_effect=planted,
    )
    out = [
        base,
        replace(
            base,
            name="quality by family and sign",
            family_by_sign=0.5,
            quality={"qwen-7b": 0.8, "gemma-12b": 0.1, "llama-11b": -0.7, "pixtral-12b": 0.0},
        ),
        replace(base, name="unequal noise", noise={"qwen-7b": 0.5, "gemma-12b": 1.0, "llama-11b": 1.5, "pixtral-12b": 0.8}),
        replace(base, name="missing at random", missing="random", missing_rate=0.3),
        replace(
            base,
            name="missing on weak own answers",
            missing="weak_own",
            missing_rate=0.7,
            quality={"qwen-7b": 0.4, "gemma-12b": 0.1, "llama-11b": -0.6, "pixtral-12b": 0.0},
        ),
        replace(base, name="missing on own family's weakest signs", missing="weak_signs", missing_rate=0.8, family_by_sign=0.6),
        replace(
            base,
            name="compressed slope, weaker own family",
            slope={"llama-11b": 0.6},
            quality={"qwen-7b": 0.6, "gemma-12b": 0.3, "llama-11b": -0.9, "pixtral-12b": 0.0},
            self_effect={**planted, "llama-11b": 0.0},
        ),
        replace(
            base,
            name="varied slopes 1.3/1.0/0.8/0.6",
            slope={"qwen-7b": 1.3, "gemma-12b": 1.0, "llama-11b": 0.8, "pixtral-12b": 0.6},
            quality={"qwen-7b": 0.9, "gemma-12b": 0.3, "llama-11b": -0.4, "pixtral-12b": -1.0},
            self_effect={"qwen-7b": 0.0, "gemma-12b": 0.2, "llama-11b": 0.0, "pixtral-12b": 0.6},
        ),
        replace(base, name="near the ceiling", base=8.8, note="truth is the effect on the clipped 0-10 scale"),
        replace(base, name="near the floor", base=1.2, note="truth is the effect on the clipped 0-10 scale"),
    ]
    for n in (3, 4, 6):
        models, quality = _families(n)
        out.append(
            Scenario(
                f"{n} families",
                models,
                models,
                quality,
                leniency={m: 0.2 * (k - 1) for k, m in enumerate(models)},
                self_effect={m: 0.1 * k for k, m in enumerate(models)},
            )
        )
    qwen3 = {"qwen-7b": "qwen", "qwen-3b": "qwen", "qwen-72b": "qwen", "gemma-12b": "google", "llama-11b": "meta"}
    out.append(
        Scenario(
            "two judges share a family, three generators in it (self vs family)",
            {"qwen-7b": "qwen", "qwen-72b": "qwen", "gemma-12b": "google", "llama-11b": "meta"},
            qwen3,
            {"qwen-7b": 0.3, "qwen-3b": -0.4, "qwen-72b": 0.8, "gemma-12b": 0.1, "llama-11b": -0.2},
            leniency={"qwen-7b": 0.3, "qwen-72b": -0.2, "gemma-12b": 0.0, "llama-11b": 0.4},
            self_effect={"qwen-7b": 0.5, "qwen-72b": 0.4, "gemma-12b": 0.2, "llama-11b": 0.3},
            family_effect={"qwen-7b": 0.2, "qwen-72b": 0.1},
        )
    )
    out.append(
        replace(
            base,
            name="steep judge saturating at 10",
            base=7.0,
            slope={"qwen-7b": 1.4},
            quality={"qwen-7b": 0.9, "gemma-12b": 0.3, "llama-11b": -0.4, "pixtral-12b": -1.0},
            note="about 17% of the steep judge's sub-scores are 10, so its response bends at the ceiling "
            "(truth on the clipped scale); the linear calibration follows it closely",
        )
    )
    out.append(
        replace(
            base,
            name="off-diagonal favouritism (meta judge prefers mistral)",
            favour={("llama-11b", "mistral"): 0.5},
            identified=False,
            note="not removable: it moves mistral answers' quality and every judge's baseline",
        )
    )
    for n in (3, 5, 10):
        out.append(base.with_signs(n))
    return out


# -- failure modes of real judge data (issue 22): each either estimated within coverage or warned about --
PAPER3 = {"gpt-4": "openai", "gpt-3.5": "openai", "llama-2": "meta"}  # three judges, two of one vendor
SOURCES5 = {"human": "human", "claude-2": "anthropic", "gpt-3.5": "openai", "gpt-4": "openai", "llama-2": "meta"}
SOURCES5_Q = {"human": 0.4, "claude-2": 0.3, "gpt-3.5": -0.1, "gpt-4": 0.5, "llama-2": -0.6}


def paper_shape() -> Scenario:
    """The real public table's shape: three judges, two of one vendor, the third almost uncorrelated."""
    return Scenario(
        "three judges, two of one vendor, one almost uncorrelated",
        PAPER3,
        SOURCES5,
        SOURCES5_Q,
        noise={"gpt-4": 0.4, "gpt-3.5": 0.6, "llama-2": 6.0},
        self_effect={"gpt-4": 0.3},
        n_signs=30,
        items_per_sign=10,
        affected=("gpt-4", "gpt-3.5", "llama-2"),
        note="the openai answers are rated by one neutral judge that hardly tracks quality",
    )


def realistic_null() -> Scenario:
    """Nothing wrong: four judges of four families, different leniency, slope and noise, no bias,
    a few verdicts missing at random. No warning should fire here."""
    return Scenario(
        "realistic null",
        FOUR,
        FOUR_GENS,
        FOUR_Q,
        leniency={"qwen-7b": 0.5, "gemma-12b": -0.3, "llama-11b": 0.2, "pixtral-12b": -0.1},
        slope={"qwen-7b": 1.1, "gemma-12b": 0.9, "llama-11b": 0.8, "pixtral-12b": 1.0},
        noise={"qwen-7b": 0.8, "gemma-12b": 1.0, "llama-11b": 1.2, "pixtral-12b": 0.9},
        missing="random",
        missing_rate=0.03,
    )


def failure_scenarios() -> list[Scenario]:
    base = Scenario(
        "leniency only",
        FOUR,
        FOUR_GENS,
        FOUR_Q,
        leniency={"qwen-7b": 0.6, "gemma-12b": -0.4, "llama-11b": 0.2, "pixtral-12b": 0.0},
        self_effect={"qwen-7b": 0.3, "gemma-12b": 0.0, "llama-11b": 0.5, "pixtral-12b": 0.2},
    )
    return [
        realistic_null(),
        paper_shape(),
        Scenario(
            "two judges only",
            {"gpt-4": "openai", "llama-2": "meta"},
            SOURCES5,
            SOURCES5_Q,
            noise={"gpt-4": 0.6, "llama-2": 1.0},
            self_effect={"gpt-4": 0.3},
            n_signs=30,
            items_per_sign=10,
            affected=("gpt-4", "llama-2"),
        ),
        replace(
            base, name="correlated judges (60% shared noise)", shared_noise=("qwen-7b", "gemma-12b", 0.6), affected=tuple(FOUR)
        ),
        replace(
            base,
            name="a judge entered twice (copied)",
            judges={**FOUR, "qwen-7b-copy": "microsoft"},
            copies={"qwen-7b-copy": "qwen-7b"},
            affected=(*FOUR, "qwen-7b-copy"),
        ),
        replace(
            base,
            name="missing on the judge's own low scores",
            missing="own_score",
            missing_rate=0.5,
            missing_judges=("gemma-12b", "llama-11b"),
            affected=("gemma-12b", "llama-11b"),
        ),
        replace(
            base,
            name="shared taste (two quality dimensions)",
            self_effect={},
            taste={"qwen-7b": 0.6, "gemma-12b": 0.0, "llama-11b": 0.6, "pixtral-12b": 0.0},
            quality2={"qwen-7b": 1.2, "gemma-12b": -0.6, "llama-11b": 1.2, "pixtral-12b": -0.6},
            affected=tuple(FOUR),
        ),
        replace(base, name="a constant judge (always 10)", constant={"gemma-12b": 10.4}, affected=("gemma-12b",)),
    ]


# -- the system leaderboard (issue 25): planted system qualities, biased judges, missing verdicts ------
FOUR_STRATEGIES = {"sa": 0.0, "cot": 0.25, "coi": 0.1, "ma": -0.2}


def system_scenarios() -> list[Scenario]:
    """Four system models of four families, each a judge; quality differs by model and by strategy."""
    quality = {"qwen-7b": 0.0, "gemma-12b": 0.3, "llama-11b": -0.3, "pixtral-12b": 0.15}
    base = Scenario("agreeing judges, no bias", FOUR, FOUR_GENS, quality, strategies=FOUR_STRATEGIES, items_per_sign=6)
    return [
        base,
        replace(
            base,
            name="leniency, scales and self-preference",
            leniency={"qwen-7b": 0.6, "gemma-12b": -0.4, "llama-11b": 0.2, "pixtral-12b": 0.0},
            slope={"qwen-7b": 1.3, "gemma-12b": 1.0, "llama-11b": 0.8, "pixtral-12b": 0.6},
            noise={"qwen-7b": 0.8, "gemma-12b": 1.0, "llama-11b": 1.2, "pixtral-12b": 0.9},
            self_effect={"qwen-7b": 0.3, "gemma-12b": 0.2, "llama-11b": 0.5, "pixtral-12b": 0.4},
        ),
        replace(
            base,
            name="one strong self-preferring judge",
            self_effect={"qwen-7b": 1.6},
            leniency={"qwen-7b": 0.3, "gemma-12b": -0.2, "llama-11b": 0.0, "pixtral-12b": 0.1},
            note="qwen-7b scores its own answers 1.6 points higher: the naive mean lifts qwen-7b by about 0.4, "
            "above gemma-12b and pixtral-12b",
        ),
        replace(
            base,
            name="self-preference and verdicts missing on weak own answers",
            missing="weak_own",
            missing_rate=0.5,
            self_effect={"qwen-7b": 0.6, "gemma-12b": 0.0, "llama-11b": 0.8, "pixtral-12b": 0.3},
            slope={"qwen-7b": 1.2, "gemma-12b": 1.0, "llama-11b": 0.8, "pixtral-12b": 1.0},
        ),
        replace(
            paper_shape(),
            name="three judges of two families, one hardly tracking quality",
            items_per_sign=6,
            affected=(),
            note="the real public table's shape (issue 32): the openai judges are measured against a neutral judge "
            "that hardly tracks quality, so their own-family effects are bounded, not estimated",
        ),
    ]


# -- the index decomposed (issue 54): judges that favour answers sharing their own label -------------------
FIVE = {"qwen-7b": "qwen", "gemma-12b": "google", "llama-11b": "meta", "pixtral-12b": "mistral", "phi-4": "microsoft"}
FIVE_ACCURACY = {"qwen-7b": 0.75, "gemma-12b": 0.65, "llama-11b": 0.55, "pixtral-12b": 0.6, "phi-4": 0.7}


def belief_scenarios() -> list[Scenario]:
    """Five judges of five families, each also a system answering every item once; every answer ends in a label,
    right with the model's accuracy (a right label adds a point of quality). Each judge's own label on an item is
    its own answer's. Planted: (a) agreement only, a judge scores every answer that shares its own label higher
    and has no own-family term (the index's confident false finding); (b) an own-family term beyond agreement;
    (c) an own-family term only where the judge's own answer is wrong (harmful only); and a null."""
    base = Scenario(
        "labels, nothing planted",
        FIVE,
        FIVE,
        {"qwen-7b": 0.2, "gemma-12b": 0.0, "llama-11b": -0.3, "pixtral-12b": -0.1, "phi-4": 0.1},
        leniency={"qwen-7b": 0.4, "gemma-12b": -0.3, "llama-11b": 0.1, "pixtral-12b": 0.0, "phi-4": -0.2},
        accuracy=FIVE_ACCURACY,
        strategies={"sa": 0.0},
        items_per_sign=10,
    )
    belief = {"qwen-7b": 1.2, "gemma-12b": 1.0, "llama-11b": 1.5, "pixtral-12b": 1.2, "phi-4": 0.9}
    return [
        base,
        replace(base, name="agreement with the judge's own answer only", belief_effect=belief),
        replace(
            base,
            name="an own-family term beyond agreement",
            belief_effect=belief,
            self_effect={"qwen-7b": 0.5, "gemma-12b": 0.0, "llama-11b": 0.3, "pixtral-12b": 0.6, "phi-4": 0.0},
        ),
        replace(
            base,
            name="an own-family term only where the judge's own answer is wrong",
            belief_effect={k: v / 2 for k, v in belief.items()},
            harmful_effect={"qwen-7b": 0.8, "gemma-12b": 0.0, "llama-11b": 0.6, "pixtral-12b": 0.9, "phi-4": 0.0},
        ),
    ]
