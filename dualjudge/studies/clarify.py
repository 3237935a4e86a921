"""`dualjudge rubric clarify RUN`: label-free rubric clarification with its control, on a finished run.

1. Split the run's signs into development and test (seeded, stratified by group; analysis/pointwise/clarification.py).
2. Every judge scores every answer with the original rubric (the `rubric` variant; answered from the
   store where the run already has it).
3. Rank the clauses by the judges' disagreement on the development split; the top k are clarified,
   and k others drawn (seeded) from the rest are the control.
4. The editor model rewrites each arm's clauses with the same instruction (protocol/editor.py). A reply
   that breaks the rubric's structure or returns a clause unchanged is retried with another seed (four
   tries), then reported and never used. The rubrics and their diffs against the original are saved under RUN/rubrics/.
5. Every judge scores the test split's answers with the clarified and control rubrics (variants
   `rubric:clarified` and `rubric:control`, in the same store).
6. The verdict table is exported again and the run re-analysed: the report's "Rubric clarification"
   section has the result; clarification.json and the manifest record what was done.

Interrupted, it resumes: the same command answers what is done from the store and the response cache.
Human labels are never read here.
"""

from __future__ import annotations

import asyncio
import difflib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dualjudge.analysis.pointwise.clarification import (
    ARMS,
    CLARIFICATION,
    STATISTIC,
    choose_clauses,
    clause_scores,
    rank_clauses,
    split_signs,
)
from dualjudge.analysis.shared.results import ClarificationRecord
from dualjudge.config import RunConfig
from dualjudge.errors import DualjudgeError
from dualjudge.files import write_text
from dualjudge.inference.engines import EngineFactory
from dualjudge.protocol.editor import ATTEMPTS, build_editor_request, read_rewrite
from dualjudge.protocol.kinds import QUALITY
from dualjudge.protocol.prompts import SIGN_PROMPTS, PromptSet
from dualjudge.protocol.rubric import Rubric, load_rubric
from dualjudge.protocol.seeds import derive_seed
from dualjudge.protocol.variants import RUBRIC
from dualjudge.report.build import analyze
from dualjudge.report.explorer import write_explorer
from dualjudge.rundir import RunDir
from dualjudge.runs import steps
from dualjudge.runs.caller import CachingCaller
from dualjudge.runs.context import RunContext
from dualjudge.runs.lease import run_alone
from dualjudge.runs.progress import Progress
from dualjudge.runs.stages.verdicts import judge_step
from dualjudge.storage.lock import run_lock
from dualjudge.storage.rows import Answer, VerdictRow
from dualjudge.storage.store import Store, check_store_files
from dualjudge.studies.job import export_run, stored_config
from dualjudge.studies.manifest import build_manifest, read_manifest, write_manifest
from dualjudge.tasks.registry import default_rubric

RUBRICS_DIR = RunDir.RUBRICS


@dataclass(frozen=True)
class ClarifyOptions:
    editor: str
    k: int = 2
    dev_share: float = 0.5
    seed: int | None = None  # default: the run's seed

    def check(self, rubric: Rubric) -> None:
        """A one-line error for an option out of range, before any work."""
        if not 1 <= self.k <= len(rubric.ids) // 2:
            raise DualjudgeError(
                f"--k must be from 1 to {len(rubric.ids) // 2} (half the rubric's {len(rubric.ids)} clauses), got {self.k}"
            )
        if not 0 < self.dev_share < 1:
            raise DualjudgeError(f"--dev-share must be between 0 and 1 (exclusive), got {self.dev_share}")
        if self.seed is not None and self.seed < 0:
            raise DualjudgeError(f"--seed must be 0 or more, got {self.seed}")

    def settings(self, run_seed: int, rubric: Rubric) -> dict[str, Any]:
        """What makes an experiment: a rerun with the same settings resumes it, other settings are refused."""
        return {
            "editor": self.editor,
            "k": self.k,
            "dev_share": self.dev_share,
            "seed": run_seed if self.seed is None else self.seed,
            "original_rubric_sha256": rubric.sha256,
        }


@dataclass
class EditorLog:
    attempts: list[dict[str, Any]] = field(default_factory=list)
    rewrites: dict[str, dict[str, str]] = field(default_factory=dict)  # arm -> clause -> text


def clarify(
    out: Path, options: ClarifyOptions, progress: Progress | None = None, engines: EngineFactory | None = None
) -> ClarificationRecord:
    """Run the clarification experiment on run directory `out`; returns what clarification.json records."""
    if not RunDir(out).store.is_file():
        raise DualjudgeError(f"{out}: not a run directory (no {RunDir.STORE}); run `dualjudge run` first")
    check_store_files(RunDir(out).store, None)
    config = _config_of(out)
    config.card(options.editor)  # an unknown editor, bad options or a rubric that cannot be read: one line, before
    options.check(load_rubric(config.default_rubric()))  # the lock or any file is written
    with run_lock(out):
        ctx = RunContext(config, out, progress, engines)
        try:
            record = asyncio.run(_clarify(ctx, options))
            export_run(config, out, ctx.store)
            _manifest(out, config, record, ctx.store.requests())
            analyze(RunDir(out).verdicts, out, seed=config.run.seed, links=True)
            write_explorer(out, ctx.store)  # after the analysis: it reads summary.json
            return record
        finally:
            ctx.store.close()


def _config_of(out: Path) -> RunConfig:
    # opened for writing but only read: closing it leaves no -shm/-wal file behind (a read-only open would)
    store = Store(RunDir(out).store)
    try:
        return stored_config(store, out, needs_key=True)
    finally:
        store.close()


async def _clarify(ctx: RunContext, options: ClarifyOptions) -> ClarificationRecord:
    config = ctx.config
    # the editor and the options were checked by clarify() before the lock; the rubric from the task the context loaded
    if any(i.rubric is not None for i in ctx.task.items):
        raise DualjudgeError(
            f"task {ctx.task.name}: its items carry their own rubrics, and the clarification edits one rubric shared by "
            f"all; clarify a task whose items share the rubric"
        )
    original = load_rubric(default_rubric(ctx.task))
    settings = options.settings(config.run.seed, original)
    previous = _previous(ctx.out)
    if previous is not None and previous.settings != settings:
        raise DualjudgeError(
            f"{ctx.out} already holds a rubric clarification with other settings "
            f"({_differences(previous.settings, settings)}); clarify a copy of the run directory"
        )
    ctx.prepare()
    answers = ctx.answers()
    if not answers:
        raise DualjudgeError(f"{ctx.out}: the run has no answers to judge")
    seed = settings["seed"]
    cluster = {a.sign_code: ctx.task.item(a.sign_code).cluster for a in answers}  # the split keeps a cluster whole
    stratum = {ctx.task.item(code).cluster: ctx.task.item(code).stratum for code in cluster}
    dev, test = split_signs(list(cluster.values()), stratum.__getitem__, seed, options.dev_share)
    rubric_dir = ctx.out / RUBRICS_DIR
    rubric_dir.mkdir(exist_ok=True)
    write_text(rubric_dir / "original.toml", original.to_toml())

    # 2. the original rubric on every answer
    original_judges = _context(ctx, (RUBRIC,), {}, answers)
    for judge in config.judges.models:
        await run_alone(ctx, judge, [_named(judge_step(original_judges, judge), f"rubric judges: {judge}")])

    # 3. the contested clauses, on the development split
    by_key = {a.key.astuple(): a for a in answers}
    rows = [
        _score_row(r, config.run.name, cluster[by_key[r.key()[:4]].sign_code])
        for r in ctx.store.read(VerdictRow, judge_variant=RUBRIC, kind=QUALITY.name, status="ok")
        if r.key()[:4] in by_key and cluster[by_key[r.key()[:4]].sign_code] in dev
    ]
    ranking = rank_clauses(clause_scores(rows), original.ids)
    selected, control = choose_clauses(ranking, options.k, seed)

    # 4. the editor rewrites both arms with the same instruction; 5. the rewritten rubrics on the test split.
    # The editor, when it is also a judge, stays loaded to judge first.
    log = EditorLog()
    arms_clauses = {"clarified": tuple(selected), "control": tuple(control)}
    record = ClarificationRecord.model_validate(
        {
            "settings": settings,
            "split": {
                "dev": dev,
                "test": test,
                "stratified_by": "sign group" if ctx.task.noun == "sign" else f"{ctx.task.noun} group",
            },
            "statistic": STATISTIC,
            "ranking": ranking,
            "selected": selected,
            "control": control,
            "editor": {"model": options.editor, "attempts": [], "tries": ATTEMPTS},
            "arms": [],
            "variants": {},
            "rubrics": {},
            "rubric_sha256": {},
            "status": "ranked",
        }
    )
    settled: dict[str, str] = {}

    def settle() -> dict[str, str]:
        """Once the editor is done: the rubrics saved, the record written; arm -> rubric file."""
        nonlocal record
        if not settled:
            files, record = _save(ctx.out, original, log, record, previous)
            settled.update(files)
        return settled

    test_answers = [a for a in answers if cluster[a.sign_code] in set(test)]
    judges = config.judges.models
    editor_judges = [options.editor] if options.editor in judges else []
    await run_alone(
        ctx,
        options.editor,
        [
            _editor_step(original, arms_clauses, seed, log, ctx.task.prompts),
            *(_test_step(ctx, j, test_answers, settle) for j in editor_judges),
        ],
    )
    settle()
    for judge in judges:
        if judge not in editor_judges:
            await run_alone(ctx, judge, [_test_step(ctx, judge, test_answers, settle)])
    record = record.model_copy(update={"status": "done"})
    write_text(ctx.out / CLARIFICATION, record.model_dump_json(indent=2))
    return record


def _save(
    out: Path, original: Rubric, log: EditorLog, record: ClarificationRecord, previous: ClarificationRecord | None
) -> tuple[dict[str, str], ClarificationRecord]:
    """The rewritten rubrics and their diffs under RUN/rubrics/, and the record so far (status judging)."""
    rewritten = {arm: original.with_texts(arm, texts) for arm, texts in sorted(log.rewrites.items())}
    hashes = {"original": original.sha256, **{arm: r.sha256 for arm, r in rewritten.items()}}
    if previous is not None and previous.rubric_sha256 != hashes:
        raise DualjudgeError(
            f"the editor's rewrites differ from those {out} recorded (was the response cache "
            f"removed?); clarify a copy of the run directory"
        )
    for arm, rubric in rewritten.items():
        write_text(out / RUBRICS_DIR / f"{arm}.toml", rubric.to_toml())
        write_text(out / RUBRICS_DIR / f"{arm}.diff", _diff(original, rubric, arm))
    arms = ["original", *rewritten]
    record = ClarificationRecord.model_validate(
        {
            **record.model_dump(),
            "editor": {**record.editor.model_dump(), "attempts": log.attempts},
            "arms": arms,
            "variants": {arm: ARMS[arm] for arm in arms},
            "rubrics": {arm: f"{RUBRICS_DIR}/{arm}.toml" for arm in arms},
            "rubric_sha256": hashes,
            "status": "judging",
        }
    )
    write_text(out / CLARIFICATION, record.model_dump_json(indent=2))
    return {arm: str((out / RUBRICS_DIR / f"{arm}.toml").resolve()) for arm in rewritten}, record


def _test_step(ctx: RunContext, judge: str, answers: list[Answer], settle: Callable[[], dict[str, str]]) -> steps.Step[Any]:
    """The judge's verdicts on the test split with the clarified and control rubrics (those the editor
    made), built when the step starts, after the editor's step."""
    inner: list[steps.Step[Any]] = []

    def tasks() -> list[Any]:
        files = settle()
        if not files:
            return []
        variants = tuple(ARMS[arm] for arm in files)
        inner[:] = [judge_step(_context(ctx, variants, files, answers), judge)]
        return inner[0].tasks()

    async def work(task: Any, caller: CachingCaller) -> None:
        await inner[0].work(task, caller)

    return steps.Step(f"clarified/control judges: {judge}", tasks, work)


def _context(ctx: RunContext, variants: tuple[str, ...], rubrics: dict[str, str], answers: list[Answer]) -> steps.Context:
    judges = ctx.config.judges.model_copy(update={"variants": variants, "rubrics": rubrics})
    config = ctx.config.model_copy(update={"judges": judges})
    return steps.Context(config, ctx.store, ctx.task, lambda _model: answers, lambda _model: [a.key for a in answers])


def _named(step: steps.Step[Any], name: str) -> steps.Step[Any]:
    return steps.Step(name, step.tasks, step.work)


def _score_row(row: VerdictRow, run_id: str, sign_code: str) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "item_id": row.variant_id,
        "repeat": row.repeat,
        "system": row.strategy,
        "system_model": row.system_model,
        "sign_code": sign_code,
        "judge_model": row.judge_model,
        "criteria": row.criteria,
    }


def _editor_step(
    original: Rubric, arms: dict[str, tuple[str, ...]], seed: int, log: EditorLog, prompts: PromptSet = SIGN_PROMPTS
) -> steps.Step[str]:
    def tasks() -> list[str]:
        return sorted(arm for arm in arms if arm not in log.rewrites)

    async def work(arm: str, caller: CachingCaller) -> None:
        tries = []
        for attempt in range(1, ATTEMPTS + 1):
            request = build_editor_request(original, arms[arm], derive_seed(seed, "rubric-editor", arm, attempt), prompts)
            result = await caller(request)
            rewrite = read_rewrite(original, arms[arm], result.text if result.ok else None, result.error)
            tries.append(
                {
                    "arm": arm,
                    "attempt": attempt,
                    "seed": request.sampling.seed,
                    "request_key": request.key(caller.identity),
                    "finish_reason": result.finish_reason,
                    "problems": list(rewrite.problems),
                    "used": rewrite.texts is not None,
                }
            )
            if rewrite.texts is not None:
                log.rewrites[arm] = rewrite.texts
                break
        log.attempts += tries  # recorded once the arm is settled (a cache miss re-runs the arm whole)

    return steps.Step(f"rubric editor: {', '.join(sorted(arms))}", tasks, work)


def _diff(original: Rubric, rewritten: Rubric, arm: str) -> str:
    return "".join(
        difflib.unified_diff(
            original.to_toml().splitlines(keepends=True),
            rewritten.to_toml().splitlines(keepends=True),
            fromfile="original.toml",
            tofile=f"{arm}.toml",
        )
    )


def _previous(out: Path) -> ClarificationRecord | None:
    path = out / CLARIFICATION
    if not path.is_file():
        return None
    try:
        return ClarificationRecord.model_validate_json(path.read_text())
    except ValueError:
        raise DualjudgeError(f"{path} is damaged; move it away to run the clarification again") from None


def _differences(a: dict[str, Any], b: dict[str, Any]) -> str:
    return ", ".join(f"{k}: {a.get(k)!r} then, {b.get(k)!r} now" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k))


def _manifest(out: Path, config: RunConfig, record: ClarificationRecord, requests: dict[str, int]) -> None:
    """The run's manifest with the clarification added (a missing or unreadable one is made anew)."""
    manifest = read_manifest(out) or build_manifest(config, out)
    manifest.clarification = record.model_dump(
        mode="json", include={"settings", "split", "selected", "control", "arms", "rubric_sha256"}
    )
    manifest.requests = requests
    write_manifest(manifest, out)
