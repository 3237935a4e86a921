"""Device groups and the schedule of (model, stage) jobs: placement, dependencies, loads, no deadlock."""

from __future__ import annotations

import random

import pytest

from dualjudge.errors import DualjudgeError
from dualjudge.inference.cards import get_card
from dualjudge.inference.devices import DeviceGroup, check_placement, resolve, split
from dualjudge.inference.gpus import Gpu
from dualjudge.runs.schedule import Job, Schedule, simulate

CPU0, CPU1 = DeviceGroup("cpu", (0,)), DeviceGroup("cpu", (1,))


def card(name: str = "gemma-3-270m", tp: int | None = None):  # type: ignore[no-untyped-def]
    c = get_card(name)
    return c.model_copy(update={"vllm": c.vllm.model_copy(update={"tensor_parallel_size": tp})})


# -- device groups -------------------------------------------------------------------------------------
def test_auto_is_one_group_per_gpu_or_cores_split_per_model():
    h100, h100b, l40 = Gpu("H100", 80.0, 79.0, 0), Gpu("H100", 80.0, 79.0, 1), Gpu("L40S", 44.5, 44.0, 2)
    assert resolve("auto", 6, gpus=[h100, h100b, l40], cores=range(16)) == [
        DeviceGroup("gpu", (0,), (h100,)),
        DeviceGroup("gpu", (1,), (h100b,)),
        DeviceGroup("gpu", (2,), (l40,)),
    ]
    assert resolve("auto", 2, gpus=[], cores=[0, 1]) == [CPU0, CPU1]
    assert [g.ids for g in resolve("auto", 3, gpus=[], cores=range(8))] == [(0, 1, 2), (3, 4, 5), (6, 7)]
    assert [g.ids for g in resolve("auto", 5, gpus=[], cores=[0, 1])] == [(0,), (1,)]  # never more groups than cores
    # one group of every core is left to vLLM's own binding (it keeps a core for the server's front end)
    assert resolve("auto", 1, gpus=[], cores=[0, 1]) == [DeviceGroup("cpu", (0, 1), bind=False)]
    assert DeviceGroup("cpu", (0, 1), bind=False).environment(card()) == {}
    assert resolve([[1, 0]], 1, gpus=[], cores=[0, 1]) == [DeviceGroup("cpu", (1, 0), bind=False)]
    # the in-process transformers engine has one CPU thread pool: one group of every core
    assert resolve("auto", 2, gpus=[], cores=[0, 1], in_process=True) == [DeviceGroup("cpu", (0, 1), bind=False)]
    assert split([4, 5, 6, 7, 8], 2) == [(4, 5, 6), (7, 8)]


def test_explicit_groups_are_checked_against_the_machine():
    a, b, c = (Gpu("A100", 80.0, 79.0, 0), Gpu("L40S", 44.5, 44.0, 1), Gpu("L40S", 44.5, 44.0, 2))
    assert resolve([[0], [1, 2]], 2, gpus=[a, b, c], cores=[0]) == [
        DeviceGroup("gpu", (0,), (a,)),
        DeviceGroup("gpu", (1, 2), (b, c)),
    ]
    with pytest.raises(DualjudgeError, match=r"\[4\] not on this machine \(2 visible GPU\(s\), ids 0-1\)"):
        resolve([[0], [4]], 2, gpus=[a, b])
    with pytest.raises(DualjudgeError, match=r"\[2\] not on this machine \(allowed CPU cores 0,1\)"):
        resolve([[2]], 1, gpus=[], cores=[0, 1])
    with pytest.raises(DualjudgeError, match="transformers backend runs in this process"):
        resolve([[0], [1]], 2, gpus=[], cores=[0, 1], in_process=True)


def test_a_group_reaches_its_server_through_the_environment(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert DeviceGroup("gpu", (2, 3)).environment(card(tp=2)) == {"CUDA_VISIBLE_DEVICES": "2,3"}
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,6,7")  # ids are this process's view: translated
    assert DeviceGroup("gpu", (1, 3)).environment(card(tp=2)) == {"CUDA_VISIBLE_DEVICES": "5,7"}
    assert DeviceGroup("cpu", (0,)).environment(card()) == {"VLLM_CPU_OMP_THREADS_BIND": "0"}
    assert DeviceGroup("cpu", (0, 1, 2, 3)).environment(card()) == {"VLLM_CPU_OMP_THREADS_BIND": "0,1,2,3"}
    assert DeviceGroup("cpu", (0, 1, 2, 3)).environment(card(tp=2)) == {"VLLM_CPU_OMP_THREADS_BIND": "0,2|1,3"}
    assert DeviceGroup("gpu", (1,)).torch_device() == "cuda:1" and CPU0.torch_device() is None


def _gpus(*free_total: tuple[float, float]) -> tuple[Gpu, ...]:
    return tuple(Gpu("GPU", total, free, i) for i, (free, total) in enumerate(free_total))


def test_a_group_holds_a_card_when_vllm_would_start_it_there():
    pixtral = card("pixtral-12b")  # 12B in bf16: about 30 GiB with headroom; gpu_memory_utilization 0.9
    assert DeviceGroup("gpu", (0,), _gpus((79.0, 80.0))).holds(pixtral)
    assert "needs about 30 GiB per GPU" in (DeviceGroup("gpu", (0,), _gpus((23.5, 24.0))).refuses(pixtral) or "")
    assert DeviceGroup("gpu", (0, 1), _gpus((47.0, 48.0), (47.0, 48.0))).holds(card("pixtral-12b", tp=2))
    assert not DeviceGroup("gpu", (0,), _gpus((79.0, 80.0))).holds(card("pixtral-12b", tp=2))
    # another process holds 12 GiB of an 80 GiB GPU: vLLM asks 0.9 x 80 = 72 GiB free and refuses, though the
    # weights alone would fit many times over
    busy = DeviceGroup("gpu", (0,), _gpus((68.0, 80.0))).refuses(pixtral)
    assert busy is not None and "GPU 0 has 68.0 of 80.0 GiB free (other processes hold 12.0)" in busy
    assert "set vllm.gpu_memory_utilization <= 0.84" in busy
    with pytest.raises(
        DualjudgeError,
        match=r"pixtral-12b: no device group can serve it \(\[gpu:0\] needs 2 "
        r"device\(s\) per server .*\[gpu:1\] needs 2 device",
    ):
        check_placement(
            [DeviceGroup("gpu", (0,), _gpus((79.0, 80.0))), DeviceGroup("gpu", (1,), _gpus((79.0, 80.0)))],
            [card("pixtral-12b", tp=2)],
        )


# -- the schedule --------------------------------------------------------------------------------------
def jobs(systems: list[str], judges: list[str], cost: dict[str, float] | None = None) -> list[Job]:
    cost = cost or {}
    return [Job(m, "systems", cost.get(m, 1.0)) for m in systems] + [Job(m, "judges", cost.get(m, 1.0)) for m in judges]


def anywhere(model: str, group: DeviceGroup) -> bool:
    return True


def test_two_models_answer_side_by_side_and_stay_loaded_to_judge():
    schedule = Schedule(jobs(["a", "b"], ["a", "b"]), [CPU0, CPU1], anywhere, last_system="b")
    started = schedule.assign([CPU0, CPU1])
    assert started == [(Job("a", "systems"), CPU0), (Job("b", "systems"), CPU1)]
    assert schedule.assign([]) == []
    assert schedule.keep(Job("a", "systems")) == Job("a", "judges")  # nothing waits for cpu:0
    assert schedule.running[Job("a", "judges")] == CPU0
    assert schedule.systems_done == {"a"}


def test_one_group_runs_the_models_in_turn_as_before():
    schedule = Schedule(jobs(["a", "b"], ["a", "b"]), [CPU0], anywhere, last_system="b")
    assert schedule.assign([CPU0]) == [(Job("a", "systems"), CPU0)]
    assert schedule.keep(Job("a", "systems")) is None  # b's systems job waits for the group: a gives it back
    assert schedule.assign([CPU0]) == [(Job("b", "systems"), CPU0)]
    assert schedule.keep(Job("b", "systems")) == Job("b", "judges")  # the last system model judges in its load
    assert schedule.assign([]) == []
    schedule.end(Job("b", "judges"))
    assert schedule.assign([CPU0]) == [(Job("a", "judges"), CPU0)]
    run = simulate(
        jobs(["a", "b"], ["a", "b"]), [CPU0], anywhere, {(m, s): 1.0 for m in "ab" for s in ("systems", "judges")}, last_system="b"
    )
    assert [(s.job.model, s.job.stage, s.loaded) for s in run.spans] == [
        ("a", "systems", True),
        ("b", "systems", True),
        ("b", "judges", False),
        ("a", "judges", True),
    ]
    assert run.makespan == 4.0


def test_longest_first_but_the_last_system_model_keeps_the_last_slot():
    schedule = Schedule(jobs(["a", "b", "c"], ["c"], {"a": 1.0, "b": 5.0, "c": 9.0}), [CPU0], anywhere, last_system="c")
    assert [j.model for j in schedule.pending] == ["b", "a", "c", "c"]


def test_a_judge_waits_for_a_group_no_systems_job_needs():
    big, small = DeviceGroup("gpu", (0, 1)), DeviceGroup("gpu", (2,))

    def holds(model: str, group: DeviceGroup) -> bool:
        return model != "wide" or len(group.ids) >= 2

    schedule = Schedule(jobs(["wide", "a", "b"], ["j"]), [big, small], holds)
    # the wide model takes the big group, a the small one; b and the judge wait (b could use the small group)
    assert schedule.assign([big, small]) == [(Job("wide", "systems"), big), (Job("a", "systems"), small)]
    schedule.end(Job("a", "systems"))
    assert schedule.assign([small]) == [(Job("b", "systems"), small)]
    schedule.end(Job("b", "systems"))
    # no systems job waits any more: the judge may start and judge a's and b's answers while wide answers
    assert schedule.assign([small]) == [(Job("j", "judges"), small)]


def test_models_served_elsewhere_need_no_group():
    remote = [Job("hosted", "systems", local=False), Job("hosted", "judges", local=False), Job("a", "systems")]
    schedule = Schedule(remote, [CPU0], anywhere)
    assert schedule.assign([]) == [(Job("hosted", "systems", local=False), None)]
    assert schedule.keep(Job("hosted", "systems", local=False)) == Job("hosted", "judges", local=False)


def loads_one_at_a_time(systems: list[str], judges: list[str]) -> dict[str, int]:
    """What the runner loaded before device groups: each system model once, each judge once, except the
    last system model when it also judges (once for both)."""
    loads = {m: 0 for m in {*systems, *judges}}
    for m in systems:
        loads[m] += 1
    for m in judges:
        loads[m] += 0 if (m == systems[-1]) else 1
    return loads


@pytest.mark.parametrize("seed", range(60))
@pytest.mark.parametrize("replicas", [True, False])
def test_random_studies_never_deadlock_never_load_more_and_respect_dependencies(seed, replicas):
    rng = random.Random(seed)
    names = [f"m{i}" for i in range(rng.randint(2, 7))]
    systems = rng.sample(names, rng.randint(1, len(names)))
    judges = rng.sample(names, rng.randint(1, len(names)))
    wide = {m for m in names if rng.random() < 0.2}
    sizes = rng.choice([[1], [1, 1], [2], [2, 1], [1, 1, 1, 1], [2, 2, 1, 1, 1, 1]])
    groups, start = [], 0
    for n in sizes:
        groups.append(DeviceGroup("gpu", tuple(range(start, start + n))))
        start += n
    if wide and not any(len(g.ids) >= 2 for g in groups):
        groups.append(DeviceGroup("gpu", (start, start + 1)))

    def holds(model: str, group: DeviceGroup) -> bool:
        return len(group.ids) >= (2 if model in wide else 1)

    seconds = {(m, "systems"): rng.uniform(1, 10) for m in systems} | {(m, "judges"): rng.uniform(1, 30) for m in judges}
    last = systems[-1] if systems[-1] in judges else None
    run = simulate(
        jobs(systems, judges, {m: rng.uniform(1, 9) for m in names}),
        groups,
        holds,
        seconds,
        probe_share=0.2,
        load_s=0.5,
        last_system=last,
        replicas=replicas,
    )
    first = [s for s in run.spans if not s.replica]
    assert sorted((s.job.model, s.job.stage) for s in first) == sorted(
        [(m, "systems") for m in systems] + [(m, "judges") for m in judges]
    )  # everything ran once: no deadlock
    own = {s.job.model: s for s in first if s.job.stage == "systems"}
    early = [s for s in first if s.job.stage == "judges" and s.job.model in own and s.start < own[s.job.model].end]
    loads: dict[str, int] = {}
    for s in run.spans:
        assert holds(s.job.model, s.group)  # type: ignore[arg-type]
        if not s.replica and s not in early:
            loads[s.job.model] = loads.get(s.job.model, 0) + s.loaded
    # beyond a one-model-at-a-time run's loads, only replicas and early judges load a model again
    assert all(loads.get(m, 0) <= n for m, n in loads_one_at_a_time(systems, judges).items())
    if not replicas or len(groups) == 1:
        assert not early and not any(s.replica for s in run.spans)
    systems_end = max(s.end for s in first if s.job.stage == "systems")
    for s in first:
        if s.job.stage == "judges":
            assert s.end >= systems_end - 1e-9  # the probes come after every answer
            if s.job.model in own and s not in early:
                assert own[s.job.model].end <= s.start + 1e-9  # a model's judges job follows its own systems job
    for s in early:  # an early judge starts while its own systems job runs, on another group
        assert own[s.job.model].start <= s.start and own[s.job.model].group != s.group
    for a in run.spans:  # a group serves one job at a time
        for b in run.spans:
            if a is not b and a.group == b.group:
                assert a.end <= b.start + 1e-9 or b.end <= a.start + 1e-9


def test_an_idle_group_gets_a_replica_of_the_longest_job_and_the_makespan_drops():
    seconds = {("a", "systems"): 10.0, ("b", "systems"): 10.0, ("a", "judges"): 100.0}
    study = jobs(["a", "b"], ["a"])
    groups = [DeviceGroup("gpu", (i,)) for i in range(3)]
    alone = simulate(study, groups, anywhere, seconds, load_s=1.0, last_system="b", replicas=False)
    shared = simulate(study, groups, anywhere, seconds, load_s=1.0, last_system="b")
    # without replicas the third GPU sits idle the whole run and a's judging runs on one server
    assert alone.makespan == pytest.approx(1 + 10 + 100)
    assert alone.idle_share(groups[2]) == pytest.approx(1.0)
    # with them: the third GPU first serves a's answers (a replica), then stays loaded to judge with a;
    # b's GPU joins a's judging when b has answered (a new load)
    assert [(s.job.model, s.job.stage, s.group.ids, s.replica, s.loaded) for s in shared.spans] == [  # type: ignore[union-attr]
        ("a", "systems", (0,), False, True),
        ("a", "systems", (2,), True, True),
        ("b", "systems", (1,), False, True),
        ("a", "judges", (0,), False, False),
        ("a", "judges", (2,), True, False),
        ("a", "judges", (1,), True, True),
    ]
    # answers: 1 s load, then 2 servers for 5 s; a's half of the judging: 2 servers from 6 s, b's half from
    # 11 s, b's GPU working from 12 s: 10 + 2 done by then, 88 left on 3 servers
    assert shared.makespan == pytest.approx(12 + 88 / 3)
    assert shared.makespan < alone.makespan / 2.5
    assert max(shared.idle_share(g) for g in groups) == 0.0  # every GPU loads or works until the end


def test_an_early_judge_starts_on_a_spare_group_and_its_systems_group_joins_it():
    # a answers for long; b's answers come quickly; a's judges job may start on the spare group to judge
    # b's answers, and a's systems group joins it as a second server when a has answered
    seconds = {("a", "systems"): 50.0, ("b", "systems"): 5.0, ("a", "judges"): 40.0}
    groups = [DeviceGroup("gpu", (0,)), DeviceGroup("gpu", (1,))]
    run = simulate(jobs(["a", "b"], ["a"]), groups, anywhere, seconds, shares={"a": 0.5, "b": 0.5})
    by = {(s.job.model, s.job.stage, s.replica): s for s in run.spans}
    judge, joined = by[("a", "judges", False)], by[("a", "judges", True)]
    assert judge.group == groups[1] and judge.start == pytest.approx(5.0) and judge.loaded  # a second load
    assert joined.group == groups[0] and joined.start == pytest.approx(50.0) and not joined.loaded  # same load
    assert run.makespan == pytest.approx(50.0 + 20.0 / 2)  # b's half judged meanwhile, a's half on two servers


def test_more_groups_shorten_the_simulated_makespan():
    systems = judges = ["a", "b", "c", "d"]
    seconds = {(m, s): 10.0 for m in systems for s in ("systems", "judges")}
    spans = {
        n: simulate(
            jobs(systems, judges), [DeviceGroup("gpu", (i,)) for i in range(n)], anywhere, seconds, probe_share=0.1, last_system="d"
        ).makespan
        for n in (1, 2, 4)
    }
    assert spans[1] == pytest.approx(80.0)
    assert spans[2] == pytest.approx(40.0)
    assert spans[4] == pytest.approx(20.0)  # each judge judges the answers as they come


def test_a_server_is_started_with_its_group_and_a_port_of_its_own(tmp_path, monkeypatch):
    from dualjudge.inference.vllm_server import VllmServer, free_port
    from dualjudge.inference.weights import LocalWeights

    monkeypatch.setenv("VLLM_CPU_OMP_THREADS_BIND", "auto")  # the group's binding wins over the caller's
    weights = LocalWeights(tmp_path, "w@0", {})
    group = DeviceGroup("cpu", (1,))
    servers = [VllmServer(card(), weights, log_dir=tmp_path, placement=group.environment(card())) for _ in range(2)]
    assert all(s.environment()["VLLM_CPU_OMP_THREADS_BIND"] == "1" for s in servers)
    assert VllmServer(card(), weights, log_dir=tmp_path).environment()["VLLM_CPU_OMP_THREADS_BIND"] == "auto"
    ports = [s.port for s in servers] + [free_port() for _ in range(200)]
    assert len(set(ports)) == len(ports)  # servers starting side by side never share a port
