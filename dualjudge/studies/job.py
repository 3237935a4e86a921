"""A whole run: the runner, then the verdict table, the manifest and a short summary."""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import SecretStr

from dualjudge.config import RECORDED_TASK, RunConfig
from dualjudge.errors import DualjudgeError
from dualjudge.files import check_output_dir, write_text
from dualjudge.inference.determinism import Regeneration
from dualjudge.inference.engines import EngineFactory, check_remote, gpu_server_concurrency, regeneration
from dualjudge.inference.image_tokens import image_tokens
from dualjudge.inference.preflight import Load, ModelCheck, check_models, failures
from dualjudge.protocol.kinds import judge_kind
from dualjudge.protocol.variants import HOLISTIC
from dualjudge.report.build import ANALYSIS_FILES, ANALYSIS_FOLDERS, analyze, analyze_pairwise
from dualjudge.report.explorer import write_explorer
from dualjudge.report.links import EXPLORER
from dualjudge.rundir import RunDir
from dualjudge.runs.context import RunContext, RunReport, with_drawn_sample
from dualjudge.runs.job_log import recorded_jobs
from dualjudge.runs.jobs import all_groups, device_groups, runs_here
from dualjudge.runs.progress import Progress
from dualjudge.runs.runner import Runner
from dualjudge.storage.lock import run_lock
from dualjudge.storage.store import WORK_TABLES, Store, check_store_files
from dualjudge.storage.truncation import truncation
from dualjudge.studies.export import (
    RUN_FILES,
    TASK_NAMES,
    in_task_words,
    pairwise_table,
    verdict_table,
    with_task_columns,
    write_pairwise,
    write_probe_tables,
    write_table,
)
from dualjudge.studies.manifest import LastSession, build_manifest, write_manifest
from dualjudge.tasks.folder import dumps as task_json
from dualjudge.tasks.folder import recorded_task
from dualjudge.tasks.registry import DEFAULT as DEFAULT_TASK
from dualjudge.tasks.registry import resolve
from dualjudge.tasks.task import Task
from dualjudge.variants.manifest import variants_by_id

MASKED = "**********"  # how pydantic writes a secret
API_KEY_ENV = "DUALJUDGE_API_KEY"  # the attached endpoints' key when a run is resumed from its stored configuration
SMALL_MODELS_NOTE = (
    "Note: models under 1B parameters ({models}) show the pipeline working end to end, not how real judges "
    "behave; their scores say nothing about judges."
)
TEST_MODELS_NOTE = "Note: these are random-weight test models; their answers and verdicts are noise by design."


def caveats(config: RunConfig) -> list[str]:
    """What a reader of this run's results must be told: a run of test models or of sub-1B models only
    measures nothing."""
    cards = [config.card(m) for m in config.all_models()]
    if all(c.family == "test" for c in cards):
        return [TEST_MODELS_NOTE]
    if all(c.parameters_b is not None and c.parameters_b < 1 for c in cards):
        return [SMALL_MODELS_NOTE.format(models=", ".join(c.name for c in cards))]
    return []


PROMPT_TOKENS = {"system": 350, "judge": 550}  # a request's own text: instructions, item, reference, rubric


def study_loads(config: RunConfig) -> dict[str, Load]:
    """What the study asks of one GPU server of each model at once: its requests in flight, and the tokens
    its larger kind of request holds (a system: prompt, image and answer; a judge: prompt, the answer it
    judges and its verdict)."""
    out = {}
    for model, roles in config.roles().items():
        card = config.card(model)
        image = image_tokens(card, config.testbed.size).count if config.testbed.modality == "image" and not card.hosted else 0
        tokens = max(
            PROMPT_TOKENS["system"] + image + config.systems.max_tokens if "system" in roles else 0,
            PROMPT_TOKENS["judge"] + config.systems.max_tokens + config.judges.max_tokens if "judge" in roles else 0,
        )
        out[model] = Load(gpu_server_concurrency(card, config.engine), tokens)
    return out


def preflight(config: RunConfig, for_run: bool = True) -> list[ModelCheck]:
    """Every model of the study checked against this machine, on the run's device groups, loading nothing."""
    groups = all_groups(config)
    return check_models(
        config.roles(),
        config.cards(),
        config.engine.backend,
        config.testbed.modality,
        frozenset(config.engine.endpoints),
        for_run=for_run,
        # a constrained final line only where the task has one (a task without labels asks for none)
        regex=config.task.load().label if config.systems.sign_type == "constrained" else None,
        groups=groups,
        loads=study_loads(config) if any(g.kind == "gpu" for g in groups) else None,  # the KV check is for GPUs only
    )


def require_preflight(config: RunConfig) -> list[ModelCheck]:
    """The checks, or a one-line error naming each model that cannot run and why."""
    checks = preflight(config)
    failed = failures(checks)
    if failed:
        raise DualjudgeError(
            f"preflight: {failed} (nothing was loaded; `dualjudge models check CONFIG` shows "
            f"every check; --skip-preflight runs anyway)"
        )
    return checks


@dataclass
class JobResult:
    out: Path
    report: RunReport
    table: pd.DataFrame
    counts: dict[str, dict[str, int]]


def counts(store: Store) -> dict[str, dict[str, int]]:
    return {t: store.counts(t) for t in WORK_TABLES}


EXIT_NOTHING = 3  # no answer, or no verdict, came back usable: the study measured nothing
EXIT_ERRORS = 4  # some requests ended in errors (transport or engine): a rerun would redo them


def exit_status(c: dict[str, dict[str, int]], failed_jobs: list[str] | None = None) -> tuple[int, str | None]:
    """The run's exit code and why: 0 when the work is done (parse failures of weak models are results,
    not failures of the run), EXIT_ERRORS when requests ended in errors or jobs stopped (a model that
    could not start or kept failing) that a rerun would redo, EXIT_NOTHING when no answer or no verdict
    could be made at all."""
    if failed_jobs:
        return EXIT_ERRORS, (
            f"{len(failed_jobs)} job(s) stopped: {'; '.join(failed_jobs)}. Every other job finished; "
            f"rerun the same command to redo only their work"
        )
    answers, verdicts = c.get("answers", {}), c.get("verdicts", {})
    for what, table in (("answer", answers), ("verdict", verdicts)):
        if sum(table.values()) and not table.get("ok"):
            shown = ", ".join(f"{n} {s}" for s, n in sorted(table.items()))
            return EXIT_NOTHING, f"no {what} came back usable ({shown}): the study measured nothing; see the failures above"
    errors = {t: n.get("error", 0) for t, n in c.items() if n.get("error")}
    if errors:
        shown = ", ".join(f"{n} {t}" for t, n in errors.items())
        return EXIT_ERRORS, f"some requests ended in errors ({shown}); rerun the same command to redo only them"
    return 0, None


def stored_config(store: Store, out: Path, needs_key: bool = False, *, recorded_task: bool = False) -> RunConfig:
    """The configuration a run directory was made with, as its store recorded it. With `recorded_task`, a task
    folder that no longer reads (moved, removed) is taken from the run's record of it (task.json: enough for an
    export, not for sending requests)."""
    raw = store.get_meta("config")
    if raw is None:
        raise DualjudgeError(f"{out}: the store has no configuration recorded; rerun `dualjudge run` on it")
    try:
        data = json.loads(raw)
        context = {RECORDED_TASK: _task_record(data, out)} if recorded_task else None
        config = RunConfig.model_validate(data, context=context)
    except (ValueError, TypeError) as e:  # not JSON, or JSON that is not a configuration
        first = str(e).splitlines()[0]
        raise DualjudgeError(
            f"{out}: the configuration recorded in {store.path.name} is damaged ({first}); "
            f"rerun `dualjudge run CONFIG --out {out}` to export again"
        ) from None
    # the key of attached endpoints is never stored (it was written masked): take it from the environment
    if config.engine.api_key.get_secret_value() == MASKED:
        key = os.environ.get(API_KEY_ENV)
        if key is None and needs_key and config.engine.endpoints:
            raise DualjudgeError(
                f"{out}: this run's attached endpoints were reached with an API key, which is never "
                f"stored: set {API_KEY_ENV} to it and run again"
            )
        key = key or "EMPTY"
        config = config.model_copy(update={"engine": config.engine.model_copy(update={"api_key": SecretStr(key)})})
    return with_drawn_sample(config, store)


def _task_record(data: Any, out: Path) -> Task | None:
    """The run's record of its task folder, where the folder its configuration names no longer reads."""
    path = (data.get("task") or {}).get("path") if isinstance(data, dict) else None
    if not path or not RunDir(out).task.is_file():
        return None
    try:
        resolve(None, path)
    except DualjudgeError:
        return recorded_task(RunDir(out).task)
    return None


def export_run(config: RunConfig, out: Path, store: Store) -> pd.DataFrame:
    check_output_dir(out, "run directory", RUN_FILES)
    variants = variants_by_id(RunDir(out).testbed)
    task = config.task.load()
    if task.name != DEFAULT_TASK:  # the table's sign_code is the bootstrap's cluster: the item's group
        variants = {k: replace(v, sign_code=task.item(v.sign_code).cluster) for k, v in variants.items()}
    table = verdict_table(
        store,
        variants,
        config.run.name,
        config.judges.models,
        config.judges.pointwise,
        config.judges.overall,
        config.cards(),
        config.judges.variants,
    )
    if task.name != DEFAULT_TASK:
        table = in_task_words(with_task_columns(table, task, variants_by_id(RunDir(out).testbed)), task, config.testbed.modality)
        write_text(RunDir(out).task, task_json(task))
    write_table(table, out)
    write_probe_tables(store, variants, out, "sign_code" if task.builtin else TASK_NAMES["sign_code"])
    if config.judges.pairwise:
        write_pairwise(pairwise_table(store, variants, config.run.name, config.cards()), out)
    return table


def validate_run(config: RunConfig) -> None:
    """What a run needs that can be checked before anything is written: device groups that hold every
    model, the artwork folder when one is named, and every model card."""
    device_groups(config)
    if config.testbed.images and not Path(config.testbed.images).expanduser().is_dir():
        raise DualjudgeError(
            f"testbed.images: {config.testbed.images} is not a folder (paths in a configuration are "
            f"relative to the configuration file)"
        )
    config.cards()
    prompts = config.task.load().prompts
    rubric = any(v != HOLISTIC for v in config.judges.variants)
    for kind in config.judges.pointwise:  # a kind without the task's prompt: one line, before anything is written
        for with_rubric in {False, rubric}:
            judge_kind(kind).prompt(config.judges.overall, rubric=with_rubric, prompts=prompts)


def check_before_run(config: RunConfig, out: Path) -> Regeneration:
    """Everything a run can check in a second, before the preflight loads vLLM and before anything is
    written: the output folder, the store files, validate_run, and the regeneration settings (batch
    invariance asked for where it cannot be had is one line); those settings, resolved."""
    check_output_dir(out, "--out", (*RUN_FILES, *ANALYSIS_FILES, EXPLORER), (RunDir.LOGS, RunDir.TESTBED, *ANALYSIS_FOLDERS))
    check_store_files(RunDir(out).store, Path(config.engine.cache).expanduser() if config.engine.cache else None)
    validate_run(config)
    return run_regeneration(config)


async def model_identities(engines: EngineFactory, config: RunConfig) -> dict[str, str]:
    """The identity each model's requests are cached under (what `dualjudge reproduce` looks them up by)."""
    return {m: await engines.identity(config.card(m)) for m in config.all_models()}


def run_regeneration(config: RunConfig) -> Regeneration:
    """Whether this run's answers regenerate identically on this machine (inference/determinism.py)."""
    return regeneration(config.engine, local=any(runs_here(config, m) for m in config.all_models()))


def run_job(config: RunConfig, out: Path, progress: Progress | None = None, engines: EngineFactory | None = None) -> JobResult:
    """The whole run under the directory's lock; the output folder and everything else that can be checked
    without a model (check_before_run) are checked before anything is written."""
    regen = check_before_run(config, out)
    if engines is None and not out.exists():  # a new run on the real engines: a remote refusal leaves no folder
        asyncio.run(check_remote([config.card(m) for m in config.all_models()], config.engine))
    out.mkdir(parents=True, exist_ok=True)
    with run_lock(out):
        return _run_locked(config, out, progress, engines, regen)


def _run_locked(
    config: RunConfig, out: Path, progress: Progress | None, engines: EngineFactory | None, regen: Regeneration
) -> JobResult:
    ctx = RunContext(config, out, progress, engines)
    config = ctx.config  # a sampled run's items: the sample it drew at its start
    ctx.progress.note(regen.line)
    if ctx.task.name != DEFAULT_TASK:  # the run holds its task's record from its start (an export needs no folder)
        write_text(RunDir(out).task, task_json(ctx.task))
    try:
        report = asyncio.run(Runner(ctx).run())
        table = export_run(config, out, ctx.store)
        c = counts(ctx.store)
        last = LastSession(
            session=ctx.session,
            requests_sent=report.sessions_requests,
            cache_hits=report.cache_hits,
            models_loaded=report.models_loaded,
            failures=report.failures,
            verdict_failures_by_judge=report.verdict_failures,
        )
        cut = truncation(ctx.store, config.systems.max_tokens)  # answers cut at max_tokens, said by run, status, report
        report.truncated = [t.words(model) for model, t in cut.items() if t.cut]
        identities = asyncio.run(model_identities(ctx.engines, config))
        write_manifest(
            build_manifest(
                config,
                out,
                identities,
                last_session=last,
                counts=c,
                requests=ctx.store.requests(),
                devices=[g.label for g in ctx.groups],
                jobs=recorded_jobs(ctx.store),
                cache_file=config.engine.cache or str(RunDir(out).store),
                regeneration=regen.record(),
                truncation={m: t.as_dict() for m, t in cut.items()},
            ),
            out,
        )
        if config.judges.pointwise and len(table):  # the analysis first: the explorer names each judge's index from it
            analyze(RunDir(out).verdicts, out, seed=config.run.seed, links=True)
            write_explorer(out, ctx.store)
        elif config.judges.pairwise and RunDir(out).pairwise.is_file():
            analyze_pairwise(RunDir(out).pairwise, out, seed=config.run.seed)
            write_explorer(out, ctx.store)
        return JobResult(out, report, table, c)
    finally:
        ctx.store.close()


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per system model, strategy, judge and judge variant: n, mean overall, equivalence rate, format compliance."""
    if table.empty:
        return pd.DataFrame(
            columns=[
                "system_model",
                "system",
                "judge_model",
                "judge_variant",
                "n",
                "mean_overall",
                "equivalence_rate",
                "format_compliance",
            ]
        )
    g = table.groupby(["system_model", "system", "judge_model", "judge_variant"], sort=True)
    return g.agg(
        n=("item_id", "size"),
        mean_overall=("overall", "mean"),
        equivalence_rate=("equivalent", "mean"),
        format_compliance=("format_ok", "mean"),
    ).reset_index()
