"""The pairwise table: one row per comparison a judge made (an item, two systems' answers, which was shown first,
which won). A run writes it beside its verdict table (pairwise.parquet, .csv); a table made elsewhere is read the
same way (docs/verdict-table.md). A table is pairwise by its columns: `system_a`, `system_b` and `winner`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dualjudge.analysis.shared.table import read_csv
from dualjudge.errors import DualjudgeError

REQUIRED = ("item_id", "judge_model", "system_a", "system_b", "winner", "shown_first")
OPTIONAL = (
    "run_id",
    "group",
    "judge_family",
    "family_a",
    "family_b",
    "pairwise_status",
    "prob_a",
    "strategy",
    "repeat",
    "label_a",
    "label_b",
    "label",
)
WINNERS = ("a", "b", "tie")
SHOWN = ("a", "b")


def is_pairwise(columns: list[str] | pd.Index) -> bool:
    """Whether a table's columns make it a pairwise table (a verdict table has none of these)."""
    return {"system_a", "system_b", "winner"} <= set(map(str, columns))


def is_pairwise_file(path: Path) -> bool:
    """Whether the table at `path` is pairwise, by its header (False where it cannot be read: the verdict table's
    reader then says why)."""
    try:
        if path.suffix.lower() == ".csv":
            columns = pd.read_csv(path, nrows=0).columns
        elif path.suffix.lower() in (".parquet", ".pq"):
            import pyarrow.parquet as pq

            columns = pd.Index(pq.read_schema(path).names)
        else:
            return False
    except Exception:  # unreadable: not this reader's to report
        return False
    return is_pairwise(columns)


def read_pairwise(path: Path) -> pd.DataFrame:
    """A pairwise table from CSV or Parquet, checked (validate_pairwise); one line where it cannot be read."""
    suffix = path.suffix.lower()
    if suffix == ".csv":
        frame = read_csv(path, {c: str for c in (*REQUIRED, *OPTIONAL) if c != "winner"}, "pairwise table", labels_as_text=True)
    elif suffix in (".parquet", ".pq"):
        if not path.is_file():
            raise DualjudgeError(f"{path}: pairwise table not found")
        try:
            frame = pd.read_parquet(path)
        except Exception as e:  # pyarrow's own error types for a damaged file
            raise DualjudgeError(f"{path}: unreadable pairwise table ({type(e).__name__})") from None
    else:
        raise DualjudgeError(f"{path}: unsupported table format (use .csv or .parquet)")
    return validate_pairwise(frame, str(path))


def validate_pairwise(frame: pd.DataFrame, where: str = "pairwise table") -> pd.DataFrame:
    """The pairwise table checked and with its optional columns' fallbacks: a missing required column, a row
    comparing a system with itself, an unknown winner or first-shown value is one line. A blank winner is a
    missing verdict (`pairwise_status` not ok): it counts for nothing. Families default to the models' names."""
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        raise DualjudgeError(
            f"{where}: missing columns {', '.join(missing)} (a pairwise table has item_id, judge_model, system_a, system_b, "
            f"winner and shown_first)"
        )
    if len(frame) == 0:
        raise DualjudgeError(f"{where}: the table has no rows (a header only?)")
    out = frame.copy()
    for name in ("item_id", "judge_model", "system_a", "system_b"):
        blank = out[name].isna() | (out[name].astype(str).str.strip() == "")
        if blank.any():
            raise DualjudgeError(f"{where}: column {name} is blank in row {int(np.argmax(blank.to_numpy())) + 1}")
        out[name] = out[name].astype(str)
    same = out["system_a"] == out["system_b"]
    if same.any():
        row = int(np.argmax(same.to_numpy()))
        raise DualjudgeError(
            f"{where}: row {row + 1} compares {out['system_a'].iloc[row]} with itself (system_a and system_b must differ)"
        )
    winner = out["winner"].astype("string").str.strip().str.lower()
    bad = winner.notna() & ~winner.isin(WINNERS)
    if bad.any():
        row = int(np.argmax(bad.to_numpy()))
        raise DualjudgeError(f"{where}: row {row + 1} has winner {out['winner'].iloc[row]!r}; use a, b or tie (blank: missing)")
    out["winner"] = winner
    shown = out["shown_first"].astype("string").str.strip().str.lower()
    bad = shown.isna() | ~shown.isin(SHOWN)
    if bad.any():
        row = int(np.argmax(bad.to_numpy()))
        raise DualjudgeError(f"{where}: row {row + 1} has shown_first {out['shown_first'].iloc[row]!r}; use a or b")
    out["shown_first"] = shown
    if "prob_a" in out.columns:
        prob = pd.to_numeric(out["prob_a"], errors="coerce")
        bad = (out["prob_a"].notna() & prob.isna()) | (prob < 0) | (prob > 1)
        if bad.any():
            row = int(np.argmax(bad.to_numpy()))
            raise DualjudgeError(
                f"{where}: row {row + 1} has prob_a {out['prob_a'].iloc[row]!r}; it is the judge's probability that a "
                f"is better, from 0 to 1 (blank: not given)"
            )
        out["prob_a"] = prob.astype(float)
    if "run_id" not in out.columns:
        out["run_id"] = "table"
    if "group" not in out.columns:
        out["group"] = out["item_id"]
    out["group"] = out["group"].astype(str)
    for model, family in (("judge_model", "judge_family"), ("system_a", "family_a"), ("system_b", "family_b")):
        if family not in out.columns:
            out[family] = out[model]
        out[family] = out[family].astype(str)
    if "pairwise_status" not in out.columns:
        out["pairwise_status"] = np.where(out["winner"].notna(), "ok", "not_run")
    ok = out["pairwise_status"] == "ok"
    if (ok & out["winner"].isna()).any():
        raise DualjudgeError(f"{where}: rows with pairwise_status ok need a winner")
    clash = _two_families(out)
    if clash:
        raise DualjudgeError(f"{where}: {clash}")
    return out.reset_index(drop=True)


def _two_families(frame: pd.DataFrame) -> str | None:
    """A model given two families across rows (as a system, as a judge, or between them) is one line."""
    pairs = pd.concat(
        [
            frame[["judge_model", "judge_family"]].set_axis(["model", "family"], axis=1),
            frame[["system_a", "family_a"]].set_axis(["model", "family"], axis=1),
            frame[["system_b", "family_b"]].set_axis(["model", "family"], axis=1),
        ]
    ).drop_duplicates()
    counts = pairs.groupby("model")["family"].nunique()
    if (counts > 1).any():
        model = str(counts[counts > 1].index[0])
        families = sorted(pairs.loc[pairs["model"] == model, "family"])
        return f"model {model} has several families in the table ({', '.join(families)}); give it one"
    return None
