"""One run's context: its configuration, run directory, store, engines, session, device groups,
progress and report. The runner's parts share it, and the studies (a whole run, the rubric
clarification) read a run through it, never through the runner."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dualjudge.config import RunConfig
from dualjudge.errors import DualjudgeError
from dualjudge.inference.devices import DeviceGroup
from dualjudge.inference.engines import EngineFactory, Engines
from dualjudge.rundir import RunDir
from dualjudge.runs import plan, steps, study
from dualjudge.runs.jobs import device_groups, runs_here
from dualjudge.runs.progress import Progress, QuietProgress
from dualjudge.runs.testbed import build_testbed, testbed_items
from dualjudge.storage.rows import ROW_TYPES, Answer, AnswerKey, AnswerRow, JobRecord
from dualjudge.storage.store import Store
from dualjudge.tasks.task import Task

RUBRICS_META = "rubric_sha256"  # store meta key: each rubric variant's rubric when the run started
TASK_META = "task"  # store meta key: the task's name and content hash when the run started


@dataclass
class RunReport:
    out: Path
    sessions_requests: int = 0
    cache_hits: int = 0
    models_loaded: list[str] = field(default_factory=list)
    failures: dict[str, dict[str, int]] = field(default_factory=dict)
    verdict_failures: dict[str, dict[str, int]] = field(default_factory=dict)  # per judge model, by kind
    jobs: list[JobRecord] = field(default_factory=list)  # this session's jobs (manifest.json["jobs"])
    restarts: list[str] = field(default_factory=list)  # each engine that went down and was started again, and why
    failed_jobs: list[str] = field(default_factory=list)  # each job that stopped (its model could not serve), and why
    truncated: list[str] = field(default_factory=list)  # per system model whose answers were cut at max_tokens, in words


class RunContext:
    """A run directory opened for a session: its store (created, or checked to hold this configuration
    and these rubrics), a new session id, the engines, the device groups and the session's report."""

    def __init__(
        self, config: RunConfig, out: Path, progress: Progress | None = None, engines: EngineFactory | None = None
    ) -> None:
        self.config = config
        self.out = out
        self.progress = progress or QuietProgress()
        self.engines = engines or Engines(
            config.engine,
            seed=config.run.seed,
            log_dir=RunDir(out).logs,
            local=any(runs_here(config, m) for m in config.all_models()),
        )
        self.session = secrets.token_hex(6)
        self.report = RunReport(out)
        self.task: Task = config.task.load()
        self.groups: list[DeviceGroup] = device_groups(config)
        out.mkdir(parents=True, exist_ok=True)
        cache = Path(config.engine.cache).expanduser() if config.engine.cache else None
        self.store = Store(RunDir(out).store, cache)
        self.config = config = with_drawn_sample(config, self.store)
        check_fingerprint(config, out, self.store)
        for stage in study.STUDY:  # a stage's own rows (the built-in ones are the store's)
            for row in stage.rows:
                if row not in ROW_TYPES:
                    self.store.ensure(row)
        self.variants: dict[str, Any] = {}

    def local(self, model: str) -> bool:
        """Whether the model runs on this machine's devices (not at attached endpoints or a hosted API)."""
        return runs_here(self.config, model)

    def holds(self, model: str, group: DeviceGroup) -> bool:
        return group.holds(self.config.card(model))

    def prepare(self) -> list[Any]:
        """The run's testbed (built or checked) and its items; the context then knows each variant's item."""
        variants = build_testbed(self.config, RunDir(self.out).testbed)
        self.variants = {v.variant_id: v for v in variants}
        return testbed_items(self.config, RunDir(self.out).testbed, variants)

    def steps_context(self, items: list[Any]) -> steps.Context:
        """What the study's steps share for this run's items."""
        shown = steps.judge_images(self.config, items)
        return steps.Context(self.config, self.store, self.task, self.answers, self.planned_of(items), shown)

    def planned_of(self, items: list[Any]) -> Callable[[str | None], list[AnswerKey]]:
        """The answers the design asks for, of one system model or of all (the probes draw from these)."""

        def planned(model: str | None = None) -> list[AnswerKey]:
            models = self.config.systems.models if model is None else (model,)
            return [t.answer for m in models for t in plan.answer_tasks(self.config, items, m)]

        return planned

    def answers(self, model: str | None = None) -> list[Answer]:
        """This run's answers (of one system model, or of all), with their variant's sign and category."""
        wanted = set(self.config.systems.models) if model is None else {model}
        out = []
        for r in self.store.read(AnswerRow):
            v = self.variants.get(r.variant_id)
            if v is not None and r.system_model in wanted:
                out.append(Answer(r.answer_key, r.text, r.predicted_category, v.sign_code, v.category))
        return out


SAMPLE_META = "sample"  # the item ids a sampled run drew at its start


def with_drawn_sample(config: RunConfig, store: Store) -> RunConfig:
    """A sampled run's configuration with the sample it drew at its start, kept in its store, so that a task
    folder grown since (items added) neither changes the sample nor blocks resuming."""
    if config.testbed.sample is None:
        return config
    recorded = store.get_meta(SAMPLE_META)
    if recorded is None:
        ids = tuple(i.id for i in config.items())
        if not store.readonly:
            store.set_meta(SAMPLE_META, json.dumps(ids))
    else:
        ids = tuple(json.loads(recorded))
    return config.model_copy(update={"testbed": config.testbed.drawn(ids)})


def check_task(config: RunConfig, out: Path, store: Store) -> None:
    """A run keeps its task: a task folder edited since the run started is refused (its verdicts would mix
    two versions of the items), the way an edited rubric is."""
    task = config.task.load()
    now = {"name": task.name, "sha256": config.task_hash()}
    recorded = json.loads(store.get_meta(TASK_META) or "null")
    if recorded is None:
        if not store.readonly:  # `plan` asks the same questions of a run folder, read-only
            store.set_meta(TASK_META, json.dumps(now))
    elif recorded["name"] == task.name and recorded["sha256"] != now["sha256"]:
        then = (recorded["sha256"] or "")[:12]
        raise DualjudgeError(
            f"{out}: task {task.name} changed since this run started (sha256 {then} then, "
            f"{(now['sha256'] or '')[:12]} now); restore its folder, or use another --out (unchanged requests come from the cache)"
        )


def check_fingerprint(config: RunConfig, out: Path, store: Store) -> None:
    """A new run directory records its configuration and rubrics; an existing one must hold the same
    configuration (a one-line error otherwise) and the same rubric for every judge variant it has. On a store
    opened read-only (`plan` on a run folder) the same refusals, and nothing is recorded."""
    check_task(config, out, store)
    fp = config.fingerprint()
    stored = store.get_meta("config_fingerprint")
    rubrics = config.rubric_hashes()
    recorded = json.loads(store.get_meta(RUBRICS_META) or "null")
    if stored is not None and recorded is not None:
        for variant, sha in rubrics.items():
            if variant in recorded and recorded[variant] != sha:
                raise DualjudgeError(
                    f"{out}: the rubric of judge variant {variant} changed since this run started (sha256 "
                    f"{recorded[variant][:12]} then, {sha[:12]} now); verdicts of two rubrics would share one "
                    f"label: restore the file, or add the new text as a new variant (rubric:NAME) or another --out"
                )
    if store.readonly:  # `plan` on a run folder: the same refusals, nothing recorded
        pass
    elif stored is None:
        store.set_meta("config_fingerprint", fp)
        store.set_meta("config", config.model_dump_json())
        store.set_meta(RUBRICS_META, json.dumps(rubrics))
    elif recorded is None:
        store.set_meta(RUBRICS_META, json.dumps(rubrics))  # a run from before rubric hashes were kept
    if stored is not None and stored != fp:
        raise DualjudgeError(
            f"{out} holds a run of a different configuration; use another --out (responses are reused through the cache)"
        )
