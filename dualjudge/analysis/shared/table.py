"""Read and validate a verdict table (CSV or Parquet), the only input the analysis needs.

The contract (DESIGN.md; `CONTRACT` below): one row per response x judge model with its variant,
system and judge, both judges' verdicts and their outcome states. Tables made elsewhere (the paper's own data, another tool)
are analysed the same way. Missing columns or wrong types are one-line errors.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dualjudge.analysis.shared.scale import PAPER_SCALE, Scale
from dualjudge.errors import DualjudgeError
from dualjudge.outcome import FINAL, TABLE_STATUSES
from dualjudge.protocol.kinds import EQUIVALENCE, PROTOCOL_KINDS, QUALITY, JudgeKind, declared
from dualjudge.protocol.variants import VARIANT
from dualjudge.protocol.verdicts import OVERALL_CONVENTIONS as CONVENTIONS
from dualjudge.storage.rows import ANSWER_KEY as ANSWER_KEY_COLUMNS
from dualjudge.variants.occlusion import visibility_label

# The contract, declared once: (column, kind, required), in the order a run writes them. The judges'
# columns come from the declared judge kinds (protocol/kinds.py): every kind's score fields, then every
# kind's status column; the protocol's two kinds are required, another kind's columns optional.
Column = tuple[str, str, bool]
ANSWER_COLUMNS: tuple[Column, ...] = (
    ("run_id", "text", True),
    ("item_id", "text", True),
    ("sign_code", "text", True),
    ("category", "text", True),
    ("visibility", "number", True),
    ("mode", "text", True),
    ("repeat", "number", True),
    ("system", "text", True),
    ("system_model", "text", True),
    ("system_family", "text", True),
    ("system_base_llm", "text", False),
    ("predicted_category", "category", True),
    ("format_ok", "boolean", True),
    ("judge_model", "text", True),
    ("judge_family", "text", True),
    ("judge_base_llm", "text", False),
)
TRAILING_COLUMNS: tuple[Column, ...] = (
    ("response", "text", False),
    ("system_status", "text", False),
    ("overall_convention", "text", False),
    ("judge_variant", "text", False),
)


def contract() -> tuple[Column, ...]:
    kinds = declared()
    scores = [(f.name, "boolean" if f.type == "boolean" else "number", k.name in PROTOCOL_KINDS) for k in kinds for f in k.scores]
    statuses = [(k.status, "text", k.name in PROTOCOL_KINDS) for k in kinds]
    return (*ANSWER_COLUMNS, *scores, *statuses, *TRAILING_COLUMNS)


def table_columns() -> tuple[str, ...]:
    """The verdict table's columns, in the order a run writes them."""
    return tuple(name for name, _, _ in contract())


def _numeric() -> tuple[str, ...]:
    return tuple(name for name, kind, _ in contract() if kind == "number")


def _text() -> tuple[str, ...]:
    return tuple(name for name, kind, required in contract() if kind == "text" and required)


def extra_kinds() -> tuple[JudgeKind, ...]:
    """Declared judge kinds beyond the protocol's two: carried through the table, read by no statistic here."""
    return tuple(k for k in declared() if k.name not in PROTOCOL_KINDS)


# every row needs these: they say which answer and which judge a verdict belongs to
IDENTIFYING = ("item_id", "sign_code", "system", "system_model", "system_family", "judge_model", "judge_family")
# one row per response x judge (x judge variant)
# The answer key, declared once: an answer is a run's variant (item_id), repeat, strategy (system) and
# system model; within one run (the human check's sample, the explorer) the run_id is left out. The
# store and the probe tables name the same key in the store's words (storage/rows.py: STORE_ANSWER).
ANSWER_KEY = ["run_id", "item_id", "repeat", "system", "system_model"]
ANSWER_IN_RUN = ANSWER_KEY[1:]
STORE_ANSWER = list(ANSWER_KEY_COLUMNS)
ROW_KEY = [*ANSWER_KEY, "judge_model", "judge_variant"]
STATUSES = set(TABLE_STATUSES)
_TRUE = {"true", "1", "1.0", "yes", "t"}
_FALSE = {"false", "0", "0.0", "no", "f"}


def read_csv(path: Path, dtype: dict[str, type], what: str, labels_as_text: bool = False) -> pd.DataFrame:
    """A CSV the user named, or a one-line error saying why it cannot be read. With `labels_as_text`,
    only an empty cell is missing: "None", "NA" and "null" stay labels."""
    if path.is_dir():
        raise DualjudgeError(f"{path}: is a folder, not a {what}")
    if not path.is_file():
        raise DualjudgeError(f"{path}: {what} not found")
    try:
        if labels_as_text:
            return pd.read_csv(path, dtype=dtype, keep_default_na=False, na_values=[""])
        return pd.read_csv(path, dtype=dtype, keep_default_na=True)
    except (ValueError, OSError, UnicodeDecodeError) as e:
        raise DualjudgeError(f"{path}: unreadable {what} ({type(e).__name__}: {_first_line(e)})") from None


def _first_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return lines[0] if lines else type(e).__name__


def last_of(keys: pd.Series | np.ndarray, values: pd.Series | np.ndarray) -> dict[Any, Any]:
    """`dict(zip(keys, values))` (the last value of each key wins) without a Python loop over every row: the
    pairs are made unique first (a million-row table has a few dozen)."""
    k = keys.reset_index(drop=True) if isinstance(keys, pd.Series) else pd.Series(np.asarray(keys, dtype=object))
    v = values.reset_index(drop=True) if isinstance(values, pd.Series) else pd.Series(np.asarray(values, dtype=object))
    pairs = pd.DataFrame({"k": k, "v": v}).drop_duplicates("k", keep="last")
    return dict(zip(pairs["k"].tolist(), pairs["v"].tolist()))


def read_table(path: Path, scale: Scale = PAPER_SCALE) -> pd.DataFrame:
    suffix = path.suffix.lower()
    if suffix not in (".parquet", ".pq", ".csv"):
        raise DualjudgeError(f"{path}: unsupported table format (use .csv or .parquet)")
    if suffix == ".csv":
        frame = read_csv(path, {"sign_code": str, "item_id": str}, "verdict table")
    else:
        if path.is_dir():
            raise DualjudgeError(f"{path}: is a folder, not a verdict table")
        if not path.is_file():
            raise DualjudgeError(f"{path}: verdict table not found")
        try:
            frame = pd.read_parquet(path)
        except Exception as e:  # pyarrow raises its own error types for damaged files
            raise DualjudgeError(f"{path}: unreadable table ({type(e).__name__}: {_first_line(e)})") from None
    return validate(frame, str(path), scale)


def _booleans(col: pd.Series, name: str, where: str) -> pd.Series:
    if pd.api.types.is_bool_dtype(col):
        return col.astype("boolean")
    out = []
    for v in col:
        if v is None or (isinstance(v, float) and np.isnan(v)) or v is pd.NA:
            out.append(pd.NA)
        elif isinstance(v, (bool, np.bool_)):
            out.append(bool(v))
        elif isinstance(v, (int, float, np.integer, np.floating)) and float(v) in (0.0, 1.0):
            out.append(bool(v))  # 1/0, and 1.0/0.0 as pandas writes a boolean column with blanks
        elif str(v).strip().lower() in _TRUE:
            out.append(True)
        elif str(v).strip().lower() in _FALSE:
            out.append(False)
        else:
            raise DualjudgeError(f"{where}: column {name} must be boolean, found {v!r}")
    return pd.Series(out, index=col.index, dtype="boolean")


MINIMAL = ("item_id", "system_model", "judge_model")  # and at least one of overall, equivalent
# a task folder's table names the cluster, the gold and the predicted final line in its own words (studies/export.py)
TASK_COLUMNS = {"group": "sign_code", "label": "category", "predicted_label": "predicted_category"}


def cluster_named(frame: pd.DataFrame) -> pd.DataFrame:
    """A probe or passes table with its cluster column as the analysis names it (a task folder's says `group`)."""
    if "group" in frame.columns and "sign_code" not in frame.columns:
        return frame.rename(columns={"group": "sign_code"})
    return frame


def _fill_optional(frame: pd.DataFrame, where: str) -> list[str]:
    """Give every optional column that is absent its documented fallback; one note per fallback that
    changes what the analysis can say."""
    notes = []
    absent: list[str] = []

    def fill(name: str, value: object, note: str | None = None) -> None:
        if name not in frame.columns:
            frame[name] = value
            absent.append(name)
            if note:
                notes.append(note)

    if "overall" not in frame.columns and "equivalent" not in frame.columns:
        raise DualjudgeError(
            f"{where}: needs an overall column (0-10 quality verdicts), an equivalent column (0/1 equivalence verdicts), or both"
        )
    fill("run_id", "table")
    fill(
        "sign_code",
        frame["item_id"],
        "no sign_code column: each item is its own cluster in the bootstrap and the self-preference intervals",
    )
    fill("category", pd.NA)
    if "task" in frame.columns:  # a task whose items are their one variant each: seen whole, nothing to say of it
        fill("visibility", 1.0)
    fill("visibility", np.nan, "no visibility column: no Type II rates by visibility and no degradation figure")
    fill("mode", "none")
    fill("repeat", 0)
    fill("system", "all", "no system column (prompting strategy): no paired tests against SA")
    fill("system_family", frame["system_model"], "no system_family column: each system model is its own family")
    fill("judge_family", frame["judge_model"], "no judge_family column: each judge model is its own family")
    fill("system_base_llm", frame["system_family"])
    fill("judge_base_llm", frame["judge_family"])
    fill("predicted_category", pd.NA, "no predicted_category column: no identification accuracy")
    fill("format_ok", pd.NA)
    fill("judge_variant", "holistic")  # a table from elsewhere has one judge design
    for name in ("accuracy", "completeness", "relevance"):
        fill(name, np.nan)
    if "overall" not in frame.columns:
        absent.append("overall")
        frame["overall"] = np.nan
        frame[QUALITY.status] = "skipped"
        notes.append("no overall column: only the equivalence judge's statistics")
    if "equivalent" not in frame.columns:
        absent.append("equivalent")
        frame["equivalent"] = pd.NA
        frame[EQUIVALENCE.status] = "skipped"
        notes.append("no equivalent column: only the quality judge's statistics")
    fill(QUALITY.status, np.where(pd.to_numeric(frame["overall"], errors="coerce").notna(), "ok", "not_run"))
    fill(EQUIVALENCE.status, np.where(frame["equivalent"].notna(), "ok", "not_run"))
    for kind in extra_kinds():  # a table without another kind's columns: that judge was not asked
        for f in kind.scores:
            fill(f.name, pd.NA if f.type == "boolean" else np.nan)
        fill(kind.status, "skipped")
    frame.attrs["absent"] = absent
    return notes


def validate(frame: pd.DataFrame, where: str = "verdict table", scale: Scale = PAPER_SCALE) -> pd.DataFrame:
    """Check a verdict table and give absent optional columns their fallbacks (docs/verdict-table.md).
    The notes on fallbacks are in `frame.attrs["notes"]`."""
    padded = [c for c in frame.columns if isinstance(c, str) and c != c.strip() and c.strip() in table_columns()]
    if padded:
        raise DualjudgeError(
            f"{where}: column {padded[0]!r} has spaces around its name; rename it to "
            f"{padded[0].strip()!r} (otherwise it is not read)"
        )
    if len(frame) == 0:
        raise DualjudgeError(f"{where}: the table has no rows (a header only?)")
    missing = [c for c in MINIMAL if c not in frame.columns]
    if missing:
        raise DualjudgeError(
            f"{where}: missing columns {', '.join(missing)} (the minimal table is item_id, "
            f"system_model, judge_model and overall and/or equivalent)"
        )
    frame = frame.copy()
    if "group" in frame.columns and "sign_code" not in frame.columns:  # a task folder's table, in its own words
        frame = frame.rename(columns={k: v for k, v in TASK_COLUMNS.items() if k in frame.columns and v not in frame.columns})
    notes = _fill_optional(frame, where)
    for name in _numeric():
        try:
            frame[name] = pd.to_numeric(frame[name], errors="raise").astype("float64")
        except (ValueError, TypeError):
            bad = next(v for v in frame[name] if pd.notna(v) and not _is_number(v))
            raise DualjudgeError(f"{where}: column {name} must be numeric, found {bad!r}") from None
    for name in _text():
        frame[name] = frame[name].astype("string")
    frame["predicted_category"] = frame["predicted_category"].astype("string")
    frame["format_ok"] = _booleans(frame["format_ok"], "format_ok", where)
    for f in (f for k in declared() for f in k.scores if f.type == "boolean"):
        frame[f.name] = _booleans(frame[f.name], f.name, where)
    for name in (*(k.status for k in declared()), "system_status"):
        if name not in frame.columns:
            continue
        bad = set(frame[name].dropna()) - (STATUSES if name != "system_status" else set(FINAL) | {"error"})
        if bad:
            raise DualjudgeError(
                f"{where}: column {name} has unknown states {sorted(bad)} (expected {', '.join(sorted(STATUSES))})"
            )
    scores = frame[["accuracy", "completeness", "relevance", "overall"]]
    if ((scores < 0) | (scores > scale.maximum)).any().any() or np.isinf(scores.to_numpy(dtype=float)).any():
        raise DualjudgeError(f"{where}: scores must lie between 0 and {scale.maximum:g} (set the scale's maximum with --scale-max)")
    vis = frame["visibility"]
    if ((vis <= 0) | (vis > 1)).any() or ("visibility" not in frame.attrs.get("absent", []) and vis.isna().any()):
        raise DualjudgeError(
            f"{where}: visibility must lie in (0, 1] in every row (found {_first_bad(vis, lambda v: not 0 < v <= 1)})"
        )
    rep = frame["repeat"]
    if (rep.isna() | (rep < 0) | (rep != np.floor(rep))).any():
        raise DualjudgeError(
            f"{where}: repeat must be a whole number 0 or more in every row (found "
            f"{_first_bad(rep, lambda v: not (v >= 0 and v == int(v)))})"
        )
    if "judge_variant" in frame.columns:
        bad_variant = sorted({str(v) for v in frame["judge_variant"].unique() if pd.isna(v) or not VARIANT.match(str(v))})
        if bad_variant:
            raise DualjudgeError(
                f"{where}: unknown judge_variant {bad_variant[0]!r} (holistic, rubric or rubric:NAME "
                f"with NAME of letters, digits, _ and -)"
            )
    if "overall_convention" in frame.columns:
        bad_convention = sorted(set(frame["overall_convention"].dropna().astype(str)) - set(CONVENTIONS))
        if bad_convention:
            raise DualjudgeError(f"{where}: unknown overall_convention {bad_convention[0]!r} (expected {' or '.join(CONVENTIONS)})")
    for k in declared():
        if frame.loc[frame[k.status] == "ok", k.value].isna().any():
            noun = "value" if next(f for f in k.scores if f.name == k.value).type == "boolean" else "score"
            article = "an" if k.value[0] in "aeiou" else "a"
            raise DualjudgeError(f"{where}: rows with {k.status} ok need {article} {k.value} {noun}")
    for name in ("run_id", *IDENTIFYING):
        blank = (frame[name].isna() | (frame[name].str.strip() == "")).fillna(True).astype(bool)
        if blank.any():
            raise DualjudgeError(
                f"{where}: column {name} is blank in row {int(blank.to_numpy().argmax()) + 1}; "
                f"every row needs a {name} (or leave the column out: docs/verdict-table.md says "
                f"what then)"
            )
    dup = frame.duplicated(ROW_KEY, keep=False)
    if dup.any():
        first = frame[dup].iloc[0]
        kind = "identical" if frame[dup].duplicated(keep=False).all() else "conflicting"
        raise DualjudgeError(
            f"{where}: {int(dup.sum())} rows share a key ({kind} duplicates), e.g. item "
            f"{first['item_id']}, repeat {first['repeat']}, system {first['system']}, "
            f"{first['system_model']}, judge {first['judge_model']}; each response x judge once"
        )
    frame["visibility"] = frame["visibility"].round(6)  # float noise only: 0.55 stays 0.55
    frame["sign_code"] = frame["sign_code"].astype(str)
    absent = frame.attrs.get("absent", [])
    frame = frame.reset_index(drop=True)
    frame.attrs["notes"] = notes
    frame.attrs["absent"] = absent  # optional columns the table did not have (filled with their fallbacks)
    return frame


def _first_bad(column: pd.Series, bad: Callable[[Any], bool]) -> str:
    for v in column:
        if pd.isna(v) or bad(v):
            return "a blank" if pd.isna(v) else repr(float(v))
    return "?"


def _is_number(v: object) -> bool:
    try:
        float(v)  # type: ignore[arg-type]  # any value: the question is whether float() takes it
        return True
    except (TypeError, ValueError):
        return False


def vis_key(v: float) -> str:
    """Visibility keys as the testbed writes them ("1.0", "0.8", "0.55"); other values as they are."""
    try:
        return visibility_label(float(v))
    except DualjudgeError:
        return f"{float(v):g}"
