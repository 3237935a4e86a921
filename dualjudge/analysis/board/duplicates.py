"""The same model under two keys: what the leaderboard flags before it ranks.

A judge that copies another is merged before any fit (diagnostics.merge_copies). Beside it, two system keys
or two judge keys whose verdicts are identical (the same judges on the same items with the same values), and
two keys a user declares to name one model (`--alias A=B`), are flagged: the board then scores one model
twice, and its ranks count it twice.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

from dualjudge.analysis.pointwise.grid import OUTCOMES
from dualjudge.analysis.shared.choices import Outcome

Aliases = tuple[tuple[str, str], ...]  # (key, key) pairs declared to name one model
MIN_VERDICTS = 10  # identical vectors shorter than this are coincidence, not a copy


def _fingerprints(rows: pd.DataFrame, key: str, other: str, value: str) -> dict[str, str]:
    """Each key's verdicts (other x item x strategy -> value) hashed, for keys with enough of them. The text
    columns are coded once for the whole table (sorted, so a code stands for the same text under every key);
    each key's cells are sorted and hashed as arrays, so equal hashes are equal lists of cells."""
    if rows.empty:
        return {}
    cells = [pd.factorize(_text(rows[c]), sort=True)[0] for c in (other, "item_id", "system")]
    values = rows[value].astype(float).to_numpy()
    keys, names = pd.factorize(_text(rows[key]), sort=True)
    order = np.lexsort((values, *cells[::-1], keys))
    coded = np.stack(cells)[:, order]
    values, keys = values[order], keys[order]
    starts = np.searchsorted(keys, np.arange(len(names) + 1))
    out = {}
    for k, name in enumerate(names):
        lo, hi = starts[k], starts[k + 1]
        if hi - lo < MIN_VERDICTS:
            continue
        digest = hashlib.sha256(np.ascontiguousarray(coded[:, lo:hi]).tobytes())
        digest.update(np.ascontiguousarray(values[lo:hi]).tobytes())
        out[str(name)] = digest.hexdigest()
    return out


def _text(column: pd.Series) -> pd.Series:
    """The column as text: a string column as it is (astype(str) would walk it value by value)."""
    return column if pd.api.types.is_string_dtype(column.dtype) else column.astype(str)


def duplicate_keys(frame: pd.DataFrame, outcome: Outcome, aliases: Aliases = ()) -> list[str]:
    """One line per pair of keys that name one model: identical verdicts, or declared."""
    value, status = OUTCOMES[outcome]
    rows = frame[frame[status] == "ok"]
    out = []
    for key, other, what in (("system_model", "judge_model", "system models"), ("judge_model", "system_model", "judges")):
        seen: dict[str, str] = {}
        for name, fingerprint in _fingerprints(rows, key, other, value).items():
            if fingerprint in seen:
                out.append(
                    f"{seen[fingerprint]} and {name} have identical {outcome} verdicts ({what}): one model under two "
                    f"keys is scored twice; give it one key"
                )
            else:
                seen[fingerprint] = name
    present = set(frame["system_model"].astype(str)) | set(frame["judge_model"].astype(str))
    for a, b in aliases:
        if a in present and b in present:
            out.append(
                f"{a} and {b} are declared one model (--alias): each is scored on its own here; give it one key in the table"
            )
    return out
