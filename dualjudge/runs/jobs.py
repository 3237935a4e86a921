"""The run's jobs: one per (model, stage), each with its expected length, and the device groups they
run on (`engine.devices` on this machine; a model at attached endpoints or a hosted API needs none)."""

from __future__ import annotations

from collections.abc import Callable

from dualjudge.config import RunConfig
from dualjudge.inference.devices import DeviceGroup, check_placement, resolve
from dualjudge.inference.engines import runs_on_devices
from dualjudge.runs.schedule import Job
from dualjudge.runs.study import job_tokens


def expected_costs(config: RunConfig, items: int) -> dict[tuple[str, str], float]:
    """Each job's expected length: its completion tokens at max_tokens, over the card's throughput hint
    when it has one, else times the model's size (decoding is memory-bound: a bigger model is slower).
    This orders the jobs (longest first); exact counts are `dualjudge plan`'s."""
    system_tokens, judge_tokens = job_tokens(config, items, "systems"), job_tokens(config, items, "judges")

    def length(model: str, tokens: float) -> float:
        card = config.card(model)
        return tokens / card.throughput_hint if card.throughput_hint else tokens * (card.parameters_b or 1.0)

    return {
        **{(m, "systems"): length(m, system_tokens) for m in config.systems.models},
        **{(m, "judges"): length(m, judge_tokens) for m in config.judges.models},
    }


def study_jobs(config: RunConfig, items: int, local: Callable[[str], bool] = lambda _: True) -> tuple[list[Job], str | None]:
    """The run's jobs, ranked by `expected_costs`, and the system model that keeps the last systems slot
    (the last configured one, when it also judges)."""
    costs = expected_costs(config, items)
    systems, judges = config.systems.models, config.judges.models
    jobs = [Job(m, "systems", costs[(m, "systems")], local(m)) for m in systems] + [
        Job(m, "judges", costs[(m, "judges")], local(m)) for m in judges
    ]
    return jobs, systems[-1] if systems[-1] in judges else None


def runs_here(config: RunConfig, model: str) -> bool:
    """Whether a model runs on this machine's devices (not at attached endpoints or a hosted API)."""
    return runs_on_devices(config.card(model), config.engine)


def all_groups(config: RunConfig) -> list[DeviceGroup]:
    """The run's device groups, as `engine.devices` names them on this machine, or a Ray cluster's slots."""
    local = [m for m in config.all_models() if runs_here(config, m)]
    if config.engine.ray is not None:
        from dualjudge.inference.ray_cluster import cluster, cluster_groups

        return cluster_groups(cluster(config.engine.ray), [config.card(m) for m in local], config.engine.ray_cpus)
    return resolve(config.engine.devices, len(local), in_process=config.engine.backend == "transformers")


def cluster_placement(config: RunConfig, groups: list[DeviceGroup] | None = None) -> str | None:
    """How the study's servers would be placed on its Ray cluster (on `groups`, its slots: read when not given), in
    one line; None without one."""
    if config.engine.ray is None:
        return None
    from dualjudge.inference.ray_cluster import cluster, placement_words

    return placement_words(cluster(config.engine.ray), all_groups(config) if groups is None else groups)


def device_groups(config: RunConfig) -> list[DeviceGroup]:
    """The run's device groups, checked to hold every model that runs here (a one-line error if not)."""
    groups = all_groups(config)
    check_placement(groups, [config.card(m) for m in config.all_models() if runs_here(config, m)])
    return groups
