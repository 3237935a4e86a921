"""The plan's wall time: the runner's own schedule (runs/schedule.py) of a study's jobs simulated on this machine's
device groups, each job as long as the plan prices it (its model's time split over its stages by their tokens) and
each load as long as the plan's load time; what `dualjudge plan` prints as the wall time and each model's loads."""

from __future__ import annotations

from dataclasses import dataclass, field

from dualjudge.config import RunConfig
from dualjudge.inference.devices import DeviceGroup
from dualjudge.runs.counting import ModelCost, StageCount
from dualjudge.runs.jobs import runs_here, study_jobs
from dualjudge.runs.schedule import Stage, simulate
from dualjudge.runs.study import STUDY


@dataclass(frozen=True)
class Placed:
    """The runner's own schedule (runs/schedule.py) of the study's jobs on this machine's device groups, each job as
    long as the plan prices it and each load as long as the plan's load time: the wall time and how often each
    model is loaded (a model whose judges job must wait for another model's answers is loaded again)."""

    seconds: float  # the makespan: serving and loads, jobs side by side where the groups allow
    loads: dict[str, int]  # model -> times loaded
    groups: int
    replicas: dict[str, int] = field(default_factory=dict)  # model -> of its loads, replicas started for a long job


PROBE_STAGES = frozenset(s.name for s in STUDY if s.job == "judges" and s.name != "verdicts")  # a judges job's last work


def job_seconds(rows: list[StageCount], models: list[ModelCost]) -> tuple[dict[tuple[str, Stage], float], float]:
    """Each (model, job)'s seconds: its model's time split over its stages by their tokens (to prefill, and the
    expected completion tokens), and the share of the judges jobs' tokens that is probes (they wait for every
    systems job)."""
    job_of = {s.name: s.job for s in STUDY}
    expected = {m.model: m for m in models}
    tokens: dict[tuple[str, Stage], float] = {}
    probe = judge = 0.0
    for row in rows:
        bound = sum(r.completion_tokens for r in rows if r.model == row.model) or 1
        work = row.prefill_tokens + row.completion_tokens * expected[row.model].expected_completion_tokens / bound
        key = (row.model, job_of.get(row.stage, "judges"))
        tokens[key] = tokens.get(key, 0.0) + work
        if key[1] == "judges":
            judge += work
            probe += work if row.stage in PROBE_STAGES else 0.0
    per_model: dict[str, float] = {}
    for (m, _), t in tokens.items():
        per_model[m] = per_model.get(m, 0.0) + t
    seconds = {(m, j): (expected[m].seconds or 0.0) * t / per_model[m] for (m, j), t in tokens.items() if per_model[m]}
    return seconds, probe / judge if judge else 0.0


def placement_of(
    config: RunConfig, rows: list[StageCount], models: list[ModelCost], groups: list[DeviceGroup], items: int
) -> Placed | None:
    """The runner's schedule of the study simulated on `groups` (None where some model's time is unknown)."""
    if any(m.seconds is None for m in models):
        return None
    seconds, probe_share = job_seconds(rows, models)
    jobs, last = study_jobs(config, items, lambda m: runs_here(config, m))
    cards = {m: config.card(m) for m in config.all_models()}
    run = simulate(
        jobs,
        groups,
        lambda model, group: group.holds(cards[model]),
        {key: seconds.get(key, 0.0) for key in ((j.model, j.stage) for j in jobs)},
        probe_share=probe_share,
        load_s={m.model: m.load_seconds or 0.0 for m in models},
        last_system=last,
        replicas=config.engine.replicas,
    )
    loads: dict[str, int] = {}
    replicas: dict[str, int] = {}
    for span in run.spans:
        loads[span.job.model] = loads.get(span.job.model, 0) + int(span.loaded)
        replicas[span.job.model] = replicas.get(span.job.model, 0) + int(span.loaded and span.replica)
    return Placed(run.makespan, loads, len(groups), {m: n for m, n in replicas.items() if n})
