"""The run explorer: one self-contained HTML file (RUN/explorer.html) to read why a judge said what it said.

Built from the run's verdict table (verdicts.parquet), its store (each verdict's reasoning, a rubric
judge's clause scores, errors; the probes) and its testbed (scene text, image path). The data travel
inside the file as one JSON block; web/explorer.js renders one card per answer (image or scene text,
gold caption and description, the answer and its SIGN_TYPE, every judge's verdicts with reasoning, the
probes that involve it) and filters, sorts and pages them in the browser. Images stay beside it in the
run directory (testbed/images/), so the file works offline, opened from disk, with no server.

The state of the filters is the URL's fragment (explorer.html#judge=X&type=type2&visibility=0.3), so
the report links each headline number to the rows behind it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, TypedDict

import pandas as pd

from dualjudge.analysis.board.leaderboard import calibrated_scores
from dualjudge.analysis.pointwise.belief import judge_beliefs, no_control
from dualjudge.analysis.pointwise.designs import variant_order
from dualjudge.analysis.pointwise.self_preference import calibrated_residuals
from dualjudge.analysis.shared.results import Summary
from dualjudge.analysis.shared.scale import PAPER_SCALE
from dualjudge.analysis.shared.table import ANSWER_IN_RUN, read_table
from dualjudge.errors import DualjudgeError
from dualjudge.files import write_text
from dualjudge.paths import project_root
from dualjudge.protocol.kinds import declared
from dualjudge.report.escape import script_json
from dualjudge.report.findings import estimated_outcome
from dualjudge.report.links import EXPLORER
from dualjudge.rundir import RunDir
from dualjudge.storage.rows import ComparisonRow, OrderProbeRow, PaddingProbeRow, RecognitionProbeRow, VerdictRow
from dualjudge.storage.store import Store
from dualjudge.tasks.signs import uk_signs
from dualjudge.variants.manifest import variants_by_id


class JudgeView(TypedDict):
    name: str
    family: str
    self_preference: str | None  # the run's analysis, in words: the index beside it with agreement held fixed


class KindView(TypedDict):
    name: str
    columns: list[str]  # its score fields
    value: str  # the field that carries its decision


class SignView(TypedDict):
    caption: str
    description: str
    group: str


class TaskView(TypedDict):
    """A task other than uk-signs: its words, and the names of its items' metadata (the explorer's filters)."""

    name: str
    noun: str
    unit: str
    label: str | None
    meta: list[str]


class VerdictView(TypedDict):
    """One judge model's verdicts on one answer in one judge variant."""

    judge: int  # index into ExplorerData.judges
    jv: str  # the judge variant
    k: dict[str, dict[str, Any]]  # per judge kind: "s" (state), its score fields, "r" (reasoning), "err"
    criteria: dict[str, Any] | None  # a rubric judge's clause scores
    residual: float | None  # the calibrated residual of its overall score
    agrees: bool | None  # the answer's label is the judge's own on the item (None: its own answer is unknown)


class AnswerView(TypedDict):
    variant: str
    sign: str  # the bootstrap's cluster (a sign; a task's group)
    item: str  # the item whose gold it is judged against (a sign, a task's item)
    context: str | None  # text shown with the item (an applied-rule situation)
    meta: dict[str, str]  # the item's metadata (a task's extra columns)
    visibility: Any
    mode: str
    repeat: int
    strategy: str
    model: str
    family: str
    text: str | None
    predicted: str | None
    category: str
    format_ok: Any
    status: str | None
    scene: str | None
    image: str | None
    verdicts: list[VerdictView]
    probes: list[dict[str, Any]]  # order, padding and recognition probes that involve the answer


class ExplorerData(TypedDict):
    """The explorer's payload: what web/explorer.js reads from the page's JSON block."""

    run: list[str]
    good: float
    poor: float
    modality: str
    judges: list[JudgeView]
    variants: list[str]
    kinds: list[KindView]
    signs: dict[str, SignView]  # by item
    task: TaskView | None
    answers: list[AnswerView]
    systems: dict[str, dict[str, dict[str, float]]]  # per judge variant: calibrated overall per "model" and "strategy"


def _clean(value: Any) -> Any:
    """JSON-safe: NaN and NA become null, numpy scalars plain numbers."""
    if value is None or value is pd.NA:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "item"):
        value = value.item()
        return None if isinstance(value, float) and math.isnan(value) else value
    return value


def explorer_data(out: Path, store: Store) -> ExplorerData:
    """Everything the explorer shows, from a run directory and its store."""
    table_path = RunDir(out).verdicts
    if not table_path.is_file():
        raise DualjudgeError(f"{out}: no {RunDir.VERDICTS_PARQUET}; run `dualjudge export {out}` first")
    try:
        table = read_table(table_path)  # damaged or foreign: one line; absent optional columns get their fallbacks
    except DualjudgeError as e:
        raise DualjudgeError(f"{e}; run `dualjudge export {out}` to write it again from the store") from None
    testbed = _testbed(out)
    signs_gold = {i.id: i for i in uk_signs().items}
    task = _task(out)
    items = {str(i["id"]): i for i in task["items"]} if task else {}
    judges = sorted(set(table["judge_model"].astype(str)))
    judge_family = dict(zip(table["judge_model"].astype(str), table["judge_family"].astype(str)))
    variants = variant_order(table["judge_variant"])
    details = {r.key(): r for r in store.read(VerdictRow)}
    residuals = _residuals(table)
    own_labels = _own_labels(table, judges, judge_family)
    probes = _probes(store)
    answers: list[AnswerView] = []
    for key, rows in table.groupby(ANSWER_IN_RUN, sort=True):
        item_id, repeat, strategy, model = key
        first = rows.iloc[0]
        v = testbed.get(str(item_id), {})
        item = str(first["task_item"]) if task and "task_item" in rows.columns else str(first["sign_code"])
        answer_key = (str(item_id), int(repeat), str(model), str(strategy))
        label = _clean(first["predicted_category"])
        own_item = f"{first['run_id']}\x1f{item_id}"
        verdicts = [
            _verdict(
                r,
                judges,
                details,
                residuals.get((*answer_key, r["judge_model"], r["judge_variant"])),
                _agrees(own_labels.get(str(r["judge_model"]), {}).get(own_item), label),
            )
            for r in rows.to_dict("records")
        ]
        answers.append(
            {
                "variant": str(item_id),
                "sign": str(first["sign_code"]),
                "item": item,
                "context": items.get(item, {}).get("text"),
                "meta": {str(k): str(val) for k, val in items.get(item, {}).get("metadata", {}).items()},
                "visibility": _clean(first["visibility"]),
                "mode": str(first["mode"]),
                "repeat": int(repeat),
                "strategy": str(strategy),
                "model": str(model),
                "family": str(first["system_family"]),
                "text": _clean(first.get("response")),
                "predicted": _clean(first["predicted_category"]),
                "category": str(first["category"]),
                "format_ok": _clean(first["format_ok"]),
                "status": _clean(first.get("system_status")),
                "scene": v.get("scene_text"),
                "image": v.get("image_path"),
                "verdicts": verdicts,
                "probes": probes.get(answer_key, []),
            }
        )
    if task:
        signs = {
            i: SignView(
                caption=str(items[i]["caption"] or ""), description=str(items[i]["reference"]), group=str(items[i]["group"])
            )
            for i in sorted({a["item"] for a in answers})
            if i in items
        }
    else:
        signs = {
            code: SignView(caption=signs_gold[code].caption, description=signs_gold[code].reference, group=signs_gold[code].stratum)
            for code in sorted({a["sign"] for a in answers})
            if code in signs_gold
        }
    said = _self_preference_words(out)
    try:
        config = json.loads(store.get_meta("config") or "{}")
        if not isinstance(config, dict):
            raise ValueError("not an object")
    except ValueError:
        config = {}  # a damaged stored configuration only loses the modality hint: images are assumed
    return {
        "run": sorted(set(table["run_id"].astype(str))),
        "good": PAPER_SCALE.high,
        "poor": PAPER_SCALE.low,
        "modality": config.get("testbed", {}).get("modality", "image"),
        "judges": [JudgeView(name=j, family=judge_family[j], self_preference=said.get(j)) for j in judges],
        "variants": variants,
        "kinds": [KindView(name=k.name, columns=list(k.columns), value=k.value) for k in declared()],
        "signs": signs,
        "task": _task_view(task),
        "answers": answers,
        "systems": _calibrated_systems(table, variants),
    }


def _calibrated_systems(table: pd.DataFrame, variants: list[str]) -> dict[str, dict[str, dict[str, float]]]:
    """Per judge variant, each system model's and strategy's calibrated overall score (one fit, as the
    report's leaderboard); a variant the calibration cannot rank has none."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for variant in variants:
        try:
            scores = calibrated_scores(table[table["judge_variant"] == variant])
        except DualjudgeError:
            scores = None
        if scores:
            out[variant] = {
                "model": {k: round(v, 3) for k, v in scores["system_model"].items()},
                "strategy": {k: round(v, 3) for k, v in scores["system"].items()},
            }
    return out


def _task(out: Path) -> dict[str, Any] | None:
    """The run's task record (task.json; none for uk-signs); a damaged one is a one-line error."""
    path = RunDir(out).task
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
        if not isinstance(data, dict) or not isinstance(data.get("items"), list):
            raise ValueError("not a task record")
        return data
    except (OSError, ValueError) as e:
        raise DualjudgeError(f"{path}: unreadable task record ({e}); write it again with `dualjudge export {out}`") from None


def _task_view(task: dict[str, Any] | None) -> TaskView | None:
    if task is None:
        return None
    meta = list(dict.fromkeys(k for i in task["items"] for k in (i.get("metadata") or {})))
    return TaskView(name=str(task["name"]), noun=str(task["noun"]), unit=str(task["unit"]), label=task.get("label"), meta=meta)


def _testbed(out: Path) -> dict[str, dict[str, Any]]:
    """Each variant's scene text and image (relative to the run directory), from the run's testbed."""
    try:
        variants = variants_by_id(RunDir(out).testbed)
    except DualjudgeError:
        return {}  # no testbed beside the table: the cards show no image and no scene text
    return {
        vid: {"scene_text": v.scene_text or None, "image_path": f"{RunDir.TESTBED}/{v.image_path}" if v.image_path else None}
        for vid, v in variants.items()
    }


def _own_labels(table: pd.DataFrame, judges: list[str], judge_family: dict[str, str]) -> dict[str, dict[str, frozenset[str]]]:
    """Each judge's own label per item (run and item; the tied ones on an even split), as the self-preference
    decomposition reads it."""
    if no_control(table) is not None:
        return {}
    return judge_beliefs(table, judges, judge_family, "family").label


def _agrees(own: frozenset[str] | None, label: Any) -> bool | None:
    return None if own is None or label is None else str(label) in own


def _self_preference_words(out: Path) -> dict[str, str]:
    """Per judge, the analysis beside the run (summary.json, its reference judge variant) in a few words: the index,
    the index with agreement with its own answer held fixed, and its recognition of its own answers."""
    try:
        summary = Summary.model_validate_json(RunDir(out).summary.read_text())
    except (OSError, ValueError):
        return {}
    headline = estimated_outcome(summary)
    words: dict[str, list[str]] = {}
    for entry in headline[1].judges if headline else []:
        if entry.estimate is None:
            continue
        parts = words.setdefault(entry.judge, [])
        parts.append(f"self-preference {entry.estimate:+.2f} [{entry.ci_low:.2f}, {entry.ci_high:.2f}]")
        c = entry.belief.controlled if entry.belief else None
        if c is not None:
            parts.append(f"with agreement held fixed {c.estimate:+.2f} [{c.ci_low:.2f}, {c.ci_high:.2f}]")
    return {judge: "; ".join(parts) for judge, parts in words.items()}


def _verdict(
    r: dict[str, Any],
    judges: list[str],
    details: dict[tuple[Any, ...], VerdictRow],
    residual: float | None,
    agrees: bool | None = None,
) -> VerdictView:
    """One judge's verdicts on one answer: per declared judge kind its state, scores, reasoning and error."""
    key = (r["item_id"], int(r["repeat"]), r["system_model"], r["system"], r["judge_model"], r["judge_variant"])
    kinds: dict[str, dict[str, Any]] = {}
    criteria = None
    for k in declared():
        stored = details.get((*key, k.name))
        kinds[k.name] = {
            "s": r[k.status],
            **{name: _clean(r[name]) for name in k.columns},
            "r": stored.reasoning if stored else None,
            "err": stored.error if stored else None,
        }
        if criteria is None and stored is not None and stored.criteria:
            criteria = json.loads(stored.criteria)  # a rubric judge's clause scores (the first kind that has them)
    return {
        "judge": judges.index(r["judge_model"]),
        "jv": r["judge_variant"],
        "k": kinds,
        "criteria": criteria,
        "residual": None if residual is None else round(float(residual), 3),
        "agrees": agrees,
    }


def _residuals(table: pd.DataFrame) -> dict[tuple[Any, ...], float]:
    """The calibrated residual of each overall verdict, per judge variant (where the fit has data)."""
    out: dict[tuple[Any, ...], float] = {}
    for variant, rows in table.groupby("judge_variant", sort=True):
        if rows["judge_model"].nunique() < 2:
            continue
        try:
            res = calibrated_residuals(rows)
        except DualjudgeError:
            continue  # a table the self-preference analysis refuses has no residuals to sort by
        for r in res.itertuples(index=False):
            out[(r.item_id, int(r.repeat), r.system_model, r.system, r.judge_model, variant)] = r.residual
    return out


def _probes(store: Store) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
    out: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for o in store.read(OrderProbeRow):
        for position, (model, strategy), (other_model, other_strategy) in (
            ("first", (o.first_model, o.first_strategy), (o.second_model, o.second_strategy)),
            ("second", (o.second_model, o.second_strategy), (o.first_model, o.first_strategy)),
        ):
            out.setdefault((o.variant_id, o.repeat, model, strategy), []).append(
                {
                    "probe": "order",
                    "judge": o.judge_model,
                    "jv": o.judge_variant,
                    "position": position,
                    "other": f"{other_model} / {other_strategy}",
                    "winner_ab": o.winner_ab,
                    "winner_ba": o.winner_ba,
                    "flipped": o.flipped,
                    "status": o.status,
                }
            )
    for r in store.read(RecognitionProbeRow):  # on both answers of the pair; asked once per judge, in no variant
        for role, key, other in (
            ("own", (r.variant_id, r.repeat, r.judge_model, r.own_strategy), f"{r.other_model} / {r.other_strategy}"),
            ("other", (r.variant_id, r.repeat, r.other_model, r.other_strategy), f"{r.judge_model} / {r.own_strategy}"),
        ):
            out.setdefault(key, []).append(
                {
                    "probe": "recognition",
                    "judge": r.judge_model,
                    "jv": None,
                    "role": role,
                    "other": other,
                    "own_first": r.own_first,
                    "own_second": r.own_second,
                    "claims_own": r.claims_own,
                    "claims_other": r.claims_other,
                    "status": r.status,
                }
            )
    for key, entry in _comparisons(store):
        out.setdefault(key, []).append(entry)
    for p in store.read(PaddingProbeRow):
        out.setdefault((p.variant_id, p.repeat, p.system_model, p.strategy), []).append(
            {
                "probe": "padding",
                "judge": p.judge_model,
                "jv": p.judge_variant,
                "kind": p.kind,
                "original": _clean(p.original),
                "padded": _clean(p.padded),
                "shift": _clean(p.shift),
                "flipped": p.flipped,
                "status": p.status,
            }
        )
    return out


def _comparisons(store: Store) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    """The pairwise judge's pairs, each on both of its answers: how the answer fared shown first and shown second
    (won, lost, tie), side by side, and whether the two orders disagree on which answer is better (a flip)."""
    pairs: dict[tuple[Any, ...], dict[str, ComparisonRow]] = {}
    for r in store.read(ComparisonRow):
        pairs.setdefault((r.variant_id, r.repeat, r.strategy, r.judge_model, r.system_a, r.system_b), {})[r.shown_first] = r
    out = []
    for (variant, repeat, strategy, judge, a, b), orders in sorted(pairs.items()):
        winners = {shown: r.winner for shown, r in orders.items() if r.status == "ok"}
        flipped = None if len(winners) < 2 else winners["a"] != winners["b"]
        status = "ok" if len(winners) == 2 else next((r.status for r in orders.values() if r.status != "ok"), "not_run")
        for side, model, other in (("a", a, b), ("b", b, a)):

            def fared(shown: str, side: str = side) -> str | None:
                w = winners.get(shown)
                return None if w is None else "tie" if w == "tie" else "won" if w == side else "lost"

            first, second = ("a", "b") if side == "a" else ("b", "a")
            out.append(
                (
                    (variant, repeat, model, strategy),
                    {
                        "probe": "pairwise",
                        "judge": judge,
                        "jv": None,
                        "other": f"{other} / {strategy}",
                        "shown_first": fared(first),
                        "shown_second": fared(second),
                        "flipped": flipped,
                        "status": status,
                    },
                )
            )
    return out


def render_explorer(data: ExplorerData) -> str:
    """The explorer page: the data as one JSON block, the page's script and style inline."""
    web = project_root() / "web"
    payload = script_json(data)  # no answer, name or table value can end the block or open a comment in it
    page = (web / "explorer.html").read_text(encoding="utf-8")
    return (
        page.replace("/*STYLE*/", (web / "explorer.css").read_text(encoding="utf-8"))
        .replace("/*SCRIPT*/", (web / "explorer.js").read_text(encoding="utf-8"))
        .replace("/*DATA*/", payload)
    )


def write_explorer(out: Path, store: Store) -> Path:
    """RUN/explorer.html from the run's verdict table, store and testbed."""
    path = out / EXPLORER
    write_text(path, render_explorer(explorer_data(out, store)))
    return path
