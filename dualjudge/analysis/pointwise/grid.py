"""A verdict table's outcome as a judge x answer grid: what the calibrated index (self_preference.py), its
decomposition (belief.py), its diagnostics (diagnostics.py), its bounds and the leaderboard all fit. Each answer
two judges or more rated is a column; each judge a row; the own-model and same-family-other-model indicators are
the grid's terms."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dualjudge.analysis.shared import calibration
from dualjudge.analysis.shared.choices import Lineage, Outcome
from dualjudge.analysis.shared.table import ANSWER_KEY
from dualjudge.errors import DualjudgeError
from dualjudge.protocol.kinds import EQUIVALENCE, QUALITY

OUTCOMES: dict[str, tuple[str, str]] = {"overall": ("overall", QUALITY.status), "equivalent": ("equivalent", EQUIVALENCE.status)}
ANSWER = ANSWER_KEY


@dataclass(frozen=True)
class Grid:
    """One outcome of a verdict table as a judge x answer grid, with the labels the report needs."""

    design: calibration.Design
    judges: list[str]
    judge_family: dict[str, str]
    families: list[str]  # generator families
    answer_family: np.ndarray  # (A,) index into families
    signs: list[str]
    long: pd.DataFrame  # y, judge, generator, jfam, gfam, sign: the rows the alternatives use
    answers: list[str]  # (A,) each answer's key: its ANSWER columns joined by \x1f

    def without(self, gone: set[str], with_long: bool = True) -> Grid:
        """The grid of the other judges' verdicts (as build_grid would make it from their rows, without
        going back to the table): answers fewer than two of them rated are dropped. `with_long=False`
        leaves the long rows empty (a refit of the calibration alone does not read them)."""
        keep_j = np.array([j not in gone for j in self.judges])
        d = self.design
        present = d.present[keep_j]
        keep_a = present.sum(axis=0) >= 2
        judges = [j for j in self.judges if j not in gone]
        signs_used, cluster = np.unique(d.cluster[keep_a], return_inverse=True)
        design = calibration.Design(
            d.y[keep_j][:, keep_a],
            present[:, keep_a],
            d.terms[:, keep_j][:, :, keep_a],
            cluster.reshape(-1).astype(int),
            len(signs_used),
            d.group[keep_a],
            None if d.unit is None else d.unit[keep_a],
        )
        return Grid(
            design,
            judges,
            {j: self.judge_family[j] for j in judges},
            self.families,
            self.answer_family[keep_a],
            [self.signs[i] for i in signs_used],
            self.long[~self.long["judge"].isin(gone).to_numpy()] if with_long else self.long.iloc[:0],
            np.asarray(self.answers, dtype=object)[keep_a].tolist(),
        )


def lineage_columns(frame: pd.DataFrame, lineage: Lineage) -> tuple[pd.Series, pd.Series]:
    if lineage == "family":
        return frame["judge_family"].astype(str), frame["system_family"].astype(str)
    absent = set(frame.attrs.get("absent", []))
    if (
        "judge_base_llm" not in frame.columns
        or "system_base_llm" not in frame.columns
        or absent & {"judge_base_llm", "system_base_llm"}
    ):
        raise DualjudgeError("the table has no judge_base_llm / system_base_llm columns; use --lineage family")
    return frame["judge_base_llm"].astype(str), frame["system_base_llm"].astype(str)


def _one_label(frame: pd.DataFrame, model: str, family: pd.Series, what: str) -> dict[str, str]:
    labels = pd.DataFrame({"m": frame[model].astype(str), "f": family}).drop_duplicates()
    clash = labels[labels["m"].duplicated(keep=False)]
    if len(clash):
        m = clash["m"].iloc[0]
        raise DualjudgeError(f"{what} {m} has several families in the table ({', '.join(sorted(clash[clash['m'] == m]['f']))})")
    return dict(zip(labels["m"], labels["f"]))


def answer_keys(rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Each row's answer as a code, and each code's key: the ANSWER columns as text joined by \\x1f. The
    columns are hashed once each and the text is made for the distinct answers only (a million verdicts
    are a quarter of a million answers)."""
    code = np.zeros(len(rows), dtype=np.int64)
    names: list[np.ndarray] = []
    parts: list[np.ndarray] = []
    for col in ANSWER:
        c, uniques = pd.factorize(rows[col], use_na_sentinel=False)
        names.append(np.array([str(u) for u in uniques], dtype=object))
        parts.append(c)
        code, _ = pd.factorize(code * max(len(uniques), 1) + c)
        code = code.astype(np.int64)
    n = int(code.max()) + 1 if len(code) else 0
    first = np.full(n, -1, dtype=np.int64)
    first[code[::-1]] = np.arange(len(code) - 1, -1, -1)  # each answer's first row
    columns = [names[i][parts[i][first]] for i in range(len(ANSWER))]  # each column's text, per answer
    keys = np.array(["\x1f".join(t) for t in zip(*columns)], dtype=object)
    return code, keys


def sorted_codes(code: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Codes renumbered to the sorted order of the keys of the answers present (as pd.factorize(sort=True)
    on the keys would), and those keys."""
    present = np.unique(code)
    order = np.argsort(keys[present].astype(str), kind="stable")
    rank = np.empty(len(keys), dtype=np.int64)
    rank[present[order]] = np.arange(len(present))
    return rank[code], keys[present[order]]


def _mapped(column: pd.Series, mapping: dict[str, str]) -> np.ndarray:
    """column.map(mapping), through the column's distinct values (a mapped string column is slow row by row)."""
    codes, uniques = pd.factorize(column)
    return np.array([mapping.get(str(u)) for u in uniques], dtype=object)[codes] if len(codes) else np.array([], dtype=object)


def build_grid(frame: pd.DataFrame, outcome: Outcome, lineage: Lineage) -> Grid:
    value, status = OUTCOMES[outcome]
    jf, gf = lineage_columns(frame, lineage)
    judge_family = _one_label(frame, "judge_model", jf, "judge")
    gen_family = _one_label(frame, "system_model", gf, "system model")
    read = list(dict.fromkeys([*ANSWER, "judge_model", "sign_code", value]))
    rows = frame.loc[(frame[status] == "ok").to_numpy(), read]  # the columns it reads: a filter moves no more
    answer_code, keys = answer_keys(rows)
    judge_code, judge_names = pd.factorize(rows["judge_model"])
    rated_by = pd.DataFrame({"a": answer_code, "j": judge_code}).drop_duplicates().groupby("a").size()
    keep = (rated_by.reindex(answer_code).to_numpy() >= 2) if len(rows) else np.zeros(0, dtype=bool)
    rows = rows[keep]  # an answer one judge rated says nothing about any judge
    judges = sorted(judge_family)
    a_codes, answers = sorted_codes(answer_code[keep], keys)
    names = [str(n) for n in judge_names]
    j_codes = np.array([judges.index(n) for n in names], dtype=np.int64)[judge_code[keep]]
    y = np.zeros((len(judges), len(answers)))
    present = np.zeros_like(y, dtype=bool)
    values = rows[value].astype("float64").to_numpy()
    y[j_codes, a_codes] = values
    present[j_codes, a_codes] = True
    first = np.full(len(answers), -1, dtype=np.int64)
    first[a_codes[::-1]] = np.arange(len(a_codes) - 1, -1, -1)  # each answer's first row
    per_answer = rows.iloc[first]
    generators = per_answer["system_model"].astype(str).to_numpy()
    families = sorted(set(gen_family.values()))
    answer_family = np.array([families.index(gen_family[g]) for g in generators], dtype=int)
    signs, cluster = np.unique(per_answer["sign_code"].astype(str).to_numpy(), return_inverse=True)
    jfam = np.array([judge_family[j] for j in judges])
    afam = np.array([gen_family[g] for g in generators])
    own_model = np.array(judges)[:, None] == generators[None, :]
    same_family = jfam[:, None] == afam[None, :]
    terms = np.stack([own_model, same_family & ~own_model]).astype(np.float64)
    design = calibration.Design(y, present, terms, cluster.astype(int), len(signs), answer_family)
    judge_col = rows["judge_model"].astype(str).reset_index(drop=True)
    gen_col = rows["system_model"].astype(str).reset_index(drop=True)
    long = pd.DataFrame(
        {
            "y": values,
            "judge": judge_col,
            "generator": gen_col,
            "jfam": _mapped(judge_col, judge_family),
            "gfam": _mapped(gen_col, gen_family),
            "sign": rows["sign_code"].astype(str).reset_index(drop=True),
        }
    )
    return Grid(design, judges, judge_family, families, answer_family, list(signs), long, list(answers))


def identification(grid: Grid) -> dict[str, str]:
    d = grid.design  # every answer in the grid is rated by two judges or more
    cells = {
        (grid.judges[j], grid.families[f])
        for j in range(d.n_judges)
        for f in range(len(grid.families))
        if (d.present[j] & (grid.answer_family == f)).any()
    }
    own_rows = {grid.judges[j]: int((d.terms[:, j].sum(axis=0) * d.present[j]).sum()) for j in range(d.n_judges)}
    return calibration.unidentified(grid.judges, grid.judge_family, cells, own_rows)
