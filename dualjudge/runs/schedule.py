"""The schedule of a run: which (model, stage) job runs next, on which device group.

Jobs: `systems` for each system model (answers, then the padding restatements of its losing answers)
and `judges` for each judge model (verdicts, order probe, re-judged padding, stability passes). A judges
job depends on the answers it judges: it judges each system model's answers once that model's systems
job is done, and its probes once every systems job is done (the order pairs are drawn from all answers
and the padded texts come from every system model).

The rules, shared by the runner and the simulator (`simulate`):
- Order: systems jobs before judges jobs; within each, the longest expected job first (`Job.cost`:
  runner.expected_costs), ties in configuration order. The last configured system model that also
  judges is ordered after every other systems job: a systems job still waiting when it starts could
  use no free group then, so none can use its group when it ends, and it always stays loaded into its
  judges job. No model is loaded more often than in a one-model-at-a-time run.
- A systems job starts on the smallest free group that holds its card.
- A judges job starts once its own model's systems job (if any) has ended, and only on a group no
  waiting systems job could use: it may wait there for answers, so it must never keep a systems job
  from starting (no deadlock, and answers first).
- A model that is both system and judge keeps its group (and its loaded engine) from its systems job
  into its judges job under the same rule; otherwise it gives the group back and is loaded again later.
- A model served elsewhere (attached endpoints, a hosted API) needs no group and runs at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from dualjudge.inference.devices import DeviceGroup

Stage = Literal["systems", "judges"]
STAGES: tuple[Stage, ...] = ("systems", "judges")


@dataclass(frozen=True)
class Job:
    model: str
    stage: Stage
    cost: float = 1.0  # expected length (any unit, the same for all jobs): orders the jobs
    local: bool = True  # False: served elsewhere, needs no device group


@dataclass
class Schedule:
    jobs: Sequence[Job]
    groups: Sequence[DeviceGroup]
    holds: Callable[[str, DeviceGroup], bool]  # (model, group) -> whether the group can hold the model
    last_system: str | None = None  # keeps the last systems slot (see the module docstring)
    pending: list[Job] = field(init=False)
    running: dict[Job, DeviceGroup | None] = field(init=False, default_factory=dict)
    ended: list[Job] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        order = {j: i for i, j in enumerate(self.jobs)}

        def rank(j: Job) -> tuple[int, int, float, int]:
            return (STAGES.index(j.stage), int(j.stage == "systems" and j.model == self.last_system), -j.cost, order[j])

        self.pending = sorted(self.jobs, key=rank)

    # -- state ---------------------------------------------------------------------------------
    @property
    def systems_done(self) -> frozenset[str]:
        return frozenset(j.model for j in self.ended if j.stage == "systems")

    @property
    def systems_models(self) -> frozenset[str]:
        return frozenset(j.model for j in self.jobs if j.stage == "systems")

    def complete(self) -> bool:
        return not self.pending and not self.running

    def _waiting_systems_could_use(self, group: DeviceGroup) -> bool:
        return any(j.stage == "systems" and j.local and self.holds(j.model, group) for j in self.pending)

    def _own_systems_open(self, model: str) -> bool:
        return any(j.model == model and j.stage == "systems" for j in (*self.pending, *self.running))

    # -- decisions -----------------------------------------------------------------------------
    def assign(self, free: Sequence[DeviceGroup]) -> list[tuple[Job, DeviceGroup | None]]:
        """Jobs to start now, each with its group (None: served elsewhere); marks them running."""
        free = list(free)
        out: list[tuple[Job, DeviceGroup | None]] = []
        for job in list(self.pending):
            if job.stage == "judges" and self._own_systems_open(job.model):
                continue
            group: DeviceGroup | None = None
            if job.local:
                fits = sorted((g for g in free if self.holds(job.model, g)), key=lambda g: (len(g.ids), g.ids))
                if job.stage == "judges":
                    fits = [g for g in fits if not self._waiting_systems_could_use(g)]
                if not fits:
                    continue
                group = fits[0]
                free.remove(group)
            self.pending.remove(job)
            self.running[job] = group
            out.append((job, group))
        return out

    def end(self, job: Job) -> None:
        del self.running[job]
        self.ended.append(job)

    def keep(self, systems: Job) -> Job | None:
        """After `systems` ended: its model's judges job, to run on in the same group and load, when the
        rule allows; None otherwise (the group goes back)."""
        group = self.running.get(systems)
        self.end(systems)
        judges = next((j for j in self.pending if j.model == systems.model and j.stage == "judges"), None)
        if judges is None or (group is not None and self._waiting_systems_could_use(group)):
            return None
        self.pending.remove(judges)
        self.running[judges] = group
        return judges


# -- simulation --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Span:
    job: Job
    group: DeviceGroup | None
    start: float
    end: float
    loaded: bool  # False: it ran on in the load of its model's systems job


@dataclass
class _Running:
    """A running job in the simulation: when it started, whether it loaded, load left, work done."""

    start: float
    loaded: bool
    load: float
    done: float = 0.0


@dataclass(frozen=True)
class Simulation:
    spans: list[Span]
    makespan: float

    @property
    def loads(self) -> int:
        return sum(s.loaded for s in self.spans)


def simulate(jobs: Sequence[Job], groups: Sequence[DeviceGroup], holds: Callable[[str, DeviceGroup], bool],
             seconds: dict[tuple[str, Stage], float], *, shares: dict[str, float] | None = None,
             probe_share: float = 0.0, load_s: float = 0.0, last_system: str | None = None) -> Simulation:
    """The runner's schedule with each job taking `seconds[(model, stage)]` (plus `load_s` to load).

    A judges job's work is fluid: `shares[system model]` of its verdicts (shares of the answers, equal by
    default; summing to 1 - probe_share) become available when that system model's systems job ends, and
    `probe_share` (the probes) once all have ended; it idles when nothing is available.
    """
    schedule = Schedule(jobs, groups, holds, last_system)
    systems = sorted(schedule.systems_models)
    shares = shares or {m: (1.0 - probe_share) / max(1, len(systems)) for m in systems}
    now = 0.0
    free = list(groups)
    state: dict[Job, _Running] = {}
    spans: list[Span] = []

    def begin(job: Job, loaded: bool) -> None:
        state[job] = _Running(start=now, loaded=loaded, load=load_s if loaded else 0.0)

    def available(job: Job) -> float:
        total = seconds[(job.model, job.stage)]
        if job.stage == "systems":
            return total
        done = schedule.systems_done
        share = sum(shares.get(m, 0.0) for m in done) + (probe_share if done >= set(systems) else 0.0)
        return total * min(1.0, share)

    def start_assigned() -> None:
        for job, group in schedule.assign(free):
            begin(job, True)
            if group is not None:
                free.remove(group)

    start_assigned()
    while not schedule.complete():
        # the next moment a running job finishes its load, its available work, or all its work
        steps = []
        for job, st in state.items():
            if st.load > 0:
                steps.append(st.load)
            elif available(job) - st.done > 1e-12:
                steps.append(available(job) - st.done)
        assert steps, "the schedule is stuck"  # every waiting judge waits on a running systems job
        dt = min(steps)
        now += dt
        finished = []
        for job, st in state.items():
            if st.load > 0:
                st.load = max(0.0, st.load - dt)
            elif available(job) - st.done > 1e-12:
                st.done += dt
            if st.load <= 0 and seconds[(job.model, job.stage)] - st.done <= 1e-9:
                finished.append(job)
        for job in sorted(finished, key=lambda j: STAGES.index(j.stage)):
            st = state.pop(job)
            group = schedule.running.get(job)
            spans.append(Span(job, group, st.start, now, st.loaded))
            if job.stage == "systems":
                kept = schedule.keep(job)
                if kept is not None:
                    begin(kept, False)
                    continue
            else:
                schedule.end(job)
            if group is not None:
                free.append(group)
        start_assigned()
    spans.sort(key=lambda s: (s.start, s.job.stage, s.job.model))
    return Simulation(spans, max((s.end for s in spans), default=0.0))
