"""Where verdicts and answers are missing: the denominators behind every rate.

Per judge and kind, the share of asked-for verdicts that are not ok (parse failures, errors, not run),
overall, by visibility and by system family; rows where one judge answered and the other did not;
answers no judge scored; and system calls that produced no answer (rows whose system_status is not
ok, when the table has that column).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from dualjudge.analysis.shared.table import ANSWER_KEY, vis_key
from dualjudge.protocol.kinds import EQUIVALENCE, QUALITY

KINDS = {QUALITY.name: QUALITY.status, EQUIVALENCE.name: EQUIVALENCE.status}
ANSWER = ANSWER_KEY


def _rate(rows: pd.DataFrame, status: str) -> dict[str, Any]:
    asked = rows[rows[status] != "skipped"]
    missing = int((asked[status] != "ok").sum())
    return {"missing": missing, "asked": int(len(asked)), "rate": missing / len(asked) if len(asked) else None}


def missingness(frame: pd.DataFrame) -> dict[str, Any]:
    wanted = [*ANSWER, "judge_model", "visibility", "system_family", *KINDS.values(), "system_status"]
    frame = frame[[c for c in dict.fromkeys(wanted) if c in frame.columns]]  # a groupby moves every column it holds
    per_judge: dict[str, Any] = {}
    for judge, g in frame.groupby("judge_model", sort=True):
        entry: dict[str, Any] = {}
        for kind, status in KINDS.items():
            entry[kind] = {
                "overall": _rate(g, status),
                "by_visibility": {vis_key(v): _rate(h, status) for v, h in g.groupby("visibility", sort=True)},
                "by_system_family": {str(f): _rate(h, status) for f, h in g.groupby("system_family", sort=True)},
            }
        q_ok, e_ok = g[QUALITY.status] == "ok", g[EQUIVALENCE.status] == "ok"
        asked_both = (g[QUALITY.status] != "skipped") & (g[EQUIVALENCE.status] != "skipped")
        entry["one_judge_failed"] = int((asked_both & (q_ok != e_ok)).sum())
        per_judge[str(judge)] = entry
    scored = (frame[QUALITY.status] == "ok") | (frame[EQUIVALENCE.status] == "ok")
    never = frame.assign(_scored=scored).groupby(ANSWER)["_scored"].any()
    out: dict[str, Any] = {"per_judge": per_judge, "answers": int(len(never)), "never_scored": int((~never).sum())}
    if "system_status" in frame.columns:
        answers = frame.drop_duplicates(ANSWER)
        out["failed_system_calls"] = int((answers["system_status"] != "ok").sum())
    return out
