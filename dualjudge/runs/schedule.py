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

Two more rules use a group that would otherwise sit idle (free, and no waiting systems job could use it);
with one group neither ever applies, so `devices = [[0]]` keeps the order above exactly:
- Early judges: a judges job whose own model's systems job is still running may start on such a group (a
  second load of the same weights), judging the other models' answers first. When the systems job ends,
  its group (and load) joins the judges job as a second server.
- Replicas: a group that no waiting job could use at all goes to the running job with the most work left
  per server (`replicate`), as one more server of that model; the job's remaining requests are shared
  between its servers (the same request keys: results and resumption are unchanged). A replica's group
  comes back when its job ends. Never more servers than groups.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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
    spare: bool = True  # use idle groups: early judges and replicas (False: neither)
    pending: list[Job] = field(init=False)
    running: dict[Job, DeviceGroup | None] = field(init=False, default_factory=dict)  # each job's first group
    replicas: dict[Job, list[DeviceGroup]] = field(init=False, default_factory=dict)  # its other servers' groups
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

    def servers(self, job: Job) -> int:
        """How many servers a running job has (its first group and its replicas)."""
        return int(job in self.running) + len(self.replicas.get(job, ()))

    def _waiting_systems_could_use(self, group: DeviceGroup) -> bool:
        return any(j.stage == "systems" and j.local and self.holds(j.model, group) for j in self.pending)

    def _idle(self, group: DeviceGroup, now: bool = False) -> bool:
        """No waiting job could use the group (`now`: could start on it now): it may serve a running job
        as a replica."""
        return not any(j.local and self.holds(j.model, group) and (not now or self._startable(j)) for j in self.pending)

    def _startable(self, job: Job) -> bool:
        """Whether a waiting job could start now, given a group: a systems job always; a judges job once
        some answers are there to judge and its own systems job has ended (or runs elsewhere: early)."""
        if job.stage == "systems":
            return True
        if self.systems_models and not self.systems_done:
            return False
        return not self._own_systems_open(job.model) or (job.local and self._own_systems_running(job.model))

    def _own_systems_open(self, model: str) -> bool:
        return any(j.model == model and j.stage == "systems" for j in (*self.pending, *self.running))

    def _own_systems_running(self, model: str) -> bool:
        return any(j.model == model and j.stage == "systems" for j in self.running)

    # -- decisions -----------------------------------------------------------------------------
    def assign(self, free: Sequence[DeviceGroup]) -> list[tuple[Job, DeviceGroup | None]]:
        """Jobs to start now, each with its group (None: served elsewhere); marks them running. Then early
        judges: judges jobs whose own systems job still runs, on groups no waiting systems job could use."""
        free = list(free)
        out: list[tuple[Job, DeviceGroup | None]] = []
        for early in (False, True) if self.spare else (False,):
            for job in list(self.pending):
                if self.spare and job.stage == "judges" and self.systems_models and not self.systems_done:
                    continue  # nothing to judge yet: the group may serve a systems job as a replica meanwhile
                if job.stage == "judges" and self._own_systems_open(job.model):
                    if not (early and job.local and self._own_systems_running(job.model)):
                        continue
                elif early:
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

    def replicate(
        self, free: Sequence[DeviceGroup], work_left: Callable[[Job], float], minimum: float = 0.0
    ) -> list[tuple[Job, DeviceGroup]]:
        """Idle groups (free, no waiting job could use them), each given to the running job with the most
        work left per server once it has one more (`work_left(job)`, in any unit), when that is at least
        `minimum` (a replica's load must pay off); marks them as the jobs' replicas."""
        out: list[tuple[Job, DeviceGroup]] = []
        for group in sorted(free if self.spare else (), key=lambda g: (len(g.ids), g.ids)):
            if not self._idle(group, now=True):
                continue
            idle = self._idle(group)  # a judges job's replica may wait for answers: only on a group no job will need
            shares = [
                (work_left(j) / (self.servers(j) + 1), j)
                for j, first in self.running.items()
                if j.local and first is not None and self.holds(j.model, group) and (idle or j.stage == "systems")
            ]
            share, job = max(shares, key=lambda s: s[0], default=(0.0, None))
            if job is None or share <= 0 or share < minimum:
                continue
            self.replicas.setdefault(job, []).append(group)
            out.append((job, group))
        return out

    def release(self, job: Job, group: DeviceGroup) -> None:
        """A replica of a running job stopped before the job ended (it went down): its group comes back."""
        if group in self.replicas.get(job, ()):
            self.replicas[job].remove(group)

    def end(self, job: Job) -> list[DeviceGroup]:
        """The job has ended: returns its replicas' groups (they come back with its first group)."""
        del self.running[job]
        self.ended.append(job)
        return self.replicas.pop(job, [])

    def successor(self, job: Job, group: DeviceGroup | None) -> Job | None:
        """After `job` ended: the job of the same model that `group` serves now in the same load (kept as
        its first group, or joined to it as a replica), if any; None: the group goes back. The one walk
        the runner (a job's lane, a replica) and the simulation both take."""
        return next(
            (
                j
                for j, first in self.running.items()
                if j.model == job.model and j != job and (first == group or group in self.replicas.get(j, ()))
            ),
            None,
        )

    def keep(self, systems: Job) -> Job | None:
        """After `systems` ended: its model's judges job, to run on in the same group and load, when the
        rule allows; None otherwise (the group goes back). When that judges job already runs elsewhere
        (it started early), the group joins it as a replica instead (`replicas[judges]` then holds it).
        The systems job's replicas join the judges job too (same load) where no waiting job could use their
        group; the others come back."""
        group = self.running.get(systems)
        spares = self.end(systems)
        judges = next((j for j in (*self.pending, *self.running) if j.model == systems.model and j.stage == "judges"), None)
        if judges is None or (group is not None and self._waiting_systems_could_use(group)):
            return None
        if judges in self.running:
            if group is None or not self._idle(group) or not self.spare:
                return None
            self.replicas.setdefault(judges, []).append(group)
        else:
            self.pending.remove(judges)
            self.running[judges] = group
        self.replicas.setdefault(judges, []).extend(g for g in spares if self._idle(g))
        return judges


# -- simulation --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Span:
    job: Job
    group: DeviceGroup | None
    start: float
    end: float
    loaded: bool  # False: it ran on in the load of its model's systems job
    replica: bool = False  # a second (third, ...) server of a job that runs on another group too

    @property
    def seconds(self) -> float:
        return self.end - self.start


@dataclass
class _Server:
    start: float
    loaded: bool
    replica: bool
    load: float  # seconds of loading left


@dataclass
class _Running:
    """A running job in the simulation: its servers (by group) and its work done (in one server's seconds)."""

    servers: dict[DeviceGroup | None, _Server] = field(default_factory=dict)
    done: float = 0.0

    @property
    def rate(self) -> int:
        return sum(s.load <= 0 for s in self.servers.values())


@dataclass(frozen=True)
class Simulation:
    spans: list[Span]
    makespan: float
    busy: dict[DeviceGroup, float]  # seconds each group was loading or working (not waiting for answers)

    @property
    def loads(self) -> int:
        return sum(s.loaded for s in self.spans)

    def idle_share(self, group: DeviceGroup) -> float:
        """The share of the makespan the group was neither loading nor working."""
        return 1.0 - self.busy.get(group, 0.0) / self.makespan if self.makespan else 0.0


def simulate(
    jobs: Sequence[Job],
    groups: Sequence[DeviceGroup],
    holds: Callable[[str, DeviceGroup], bool],
    seconds: dict[tuple[str, Stage], float],
    *,
    shares: dict[str, float] | None = None,
    probe_share: float = 0.0,
    load_s: float | Mapping[str, float] = 0.0,
    last_system: str | None = None,
    replicas: bool = True,
) -> Simulation:
    """The runner's schedule with each job taking `seconds[(model, stage)]` on one server (plus `load_s` to
    load: seconds for every model, or per model, as the plan's roofline.load_seconds gives them); k servers
    of a job work k times as fast. Replicas are started when a server's share of the work left would be at
    least twice the longest load; `replicas=False`: no replicas and no early judges.

    A judges job's work is fluid: `shares[system model]` of its verdicts (shares of the answers, equal by
    default; summing to 1 - probe_share) become available when that system model's systems job ends, and
    `probe_share` (the probes) once all have ended; it idles when nothing is available.
    """
    schedule = Schedule(jobs, groups, holds, last_system, spare=replicas)

    def loading(model: str) -> float:
        return load_s if isinstance(load_s, (int, float)) else load_s.get(model, 0.0)

    max_load = max((loading(j.model) for j in jobs), default=0.0)
    systems = sorted(schedule.systems_models)
    shares = shares or {m: (1.0 - probe_share) / max(1, len(systems)) for m in systems}
    now = 0.0
    free = list(groups)
    state: dict[Job, _Running] = {}
    spans: list[Span] = []
    busy: dict[DeviceGroup, float] = {g: 0.0 for g in groups}

    def begin(job: Job, group: DeviceGroup | None, loaded: bool, replica: bool = False, load: float = 0.0) -> None:
        """A server of `job` starts on `group`: loading (`loaded`), or in a load already there (`load`: what
        is left of it, for a replica still loading when its job ended)."""
        state.setdefault(job, _Running()).servers[group] = _Server(now, loaded, replica, loading(job.model) if loaded else load)

    def available(job: Job) -> float:
        total = seconds[(job.model, job.stage)]
        if job.stage == "systems":
            return total
        done = schedule.systems_done
        share = sum(shares.get(m, 0.0) for m in done) + (probe_share if done >= set(systems) else 0.0)
        return total * min(1.0, share)

    def work_left(job: Job) -> float:
        return seconds[(job.model, job.stage)] - state[job].done

    def start_assigned() -> None:
        for job, group in schedule.assign(free):
            begin(job, group, True)
            if group is not None:
                free.remove(group)
        if replicas:
            for job, group in schedule.replicate(free, work_left, minimum=2 * max_load):
                begin(job, group, True, replica=True)
                free.remove(group)

    start_assigned()
    while not schedule.complete():
        # the next moment a server finishes its load, or a job its available work
        steps = []
        for job, st in state.items():
            steps += [s.load for s in st.servers.values() if s.load > 0]
            if st.rate and available(job) - st.done > 1e-12:
                steps.append((available(job) - st.done) / st.rate)
            elif st.rate and seconds[(job.model, job.stage)] - st.done <= 1e-9:
                steps.append(0.0)  # nothing to do: it ends now
        assert steps, "the schedule is stuck"  # every waiting judge waits on a running systems job
        dt = min(steps)
        now += dt
        finished = []
        for job, st in state.items():
            working = available(job) - st.done > 1e-12
            for group, server in st.servers.items():
                if group is not None and (server.load > 0 or working):
                    busy[group] += dt
            if st.rate and working:
                st.done = min(available(job), st.done + dt * st.rate)
            for server in st.servers.values():
                server.load = max(0.0, server.load - dt)
            if seconds[(job.model, job.stage)] - st.done <= 1e-9 and st.rate:
                finished.append(job)
        for job in sorted(finished, key=lambda j: STAGES.index(j.stage)):
            st = state.pop(job)
            first = schedule.running.get(job)
            for group, server in st.servers.items():
                spans.append(Span(job, group, server.start, now, server.loaded, server.replica))
            if job.stage == "systems":
                schedule.keep(job)
            else:
                schedule.end(job)
            for group, server in st.servers.items():  # each server goes on with the model's next job, or back
                following = schedule.successor(job, group)
                if following is not None:
                    begin(
                        following,
                        group,
                        False,
                        replica=schedule.running[following] != group,
                        load=0.0 if group == first else server.load,
                    )
                elif group is not None:
                    free.append(group)
        start_assigned()
    spans.sort(key=lambda s: (s.start, s.job.stage, s.job.model, s.replica))
    return Simulation(spans, max((s.end for s in spans), default=0.0), busy)
