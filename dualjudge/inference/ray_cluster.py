"""Model servers on a Ray cluster (`[engine] ray = "ADDRESS"`): each job's server is started by Ray on a node with
the GPUs (or CPU cores) it needs, and the runner attaches to it as to a server of its own.

The cluster is read when the run's device groups are made (runs/jobs.py): its live nodes, their CPUs, GPUs and
memory. A GPU cluster gives each node one group per `chunk` GPUs (chunk: the largest tensor_parallel_size of the
study's cards); a CPU cluster one group per `engine.ray_cpus` cores. The groups set how many servers run at once;
Ray decides the node, by the resources a group asks for (`num_gpus`, `num_cpus`).

A server is a Ray actor (`ServerHost`) that owns the vLLM (or SGLang) server process on its node, exactly as a local
run starts one (the same command, the same seed and grammar backend), bound to the node's address; it fetches the
card's weights on the node where they are missing (a shared cache folder avoids the download). On this machine,
`RayServer` is what the runner's engines and the server watch see (inference/server_process.Server): it starts the
actor, waits for its address, asks it whether the server lives, and stops it (the actor is killed with it). A node
that dies takes its actor and server with it (a server dies with the process that started it): the watch sees the
server gone and the run restarts it by the same rules as a local one, on another node. The store, the cache, resume,
the stages and the reports stay on the machine that runs `dualjudge run`.
"""

from __future__ import annotations

import itertools
import logging
import os
import socket
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dualjudge.errors import DualjudgeError, ServerStartFailed
from dualjudge.inference.cards import ModelCard
from dualjudge.inference.devices import DeviceGroup
from dualjudge.inference.server_process import Routes, ServerProcess
from dualjudge.inference.weights import fetch

RAY_INSTALL = 'pip install -e ".[ray]"'  # the optional extra (pyproject.toml), from a checkout
REACH_S = 3.0  # seconds a cluster address has to accept a connection
CURRENT_CLUSTER = Path(tempfile.gettempdir()) / "ray" / "ray_current_cluster"  # where `ray start --head` writes its address
_NUMBERS = itertools.count(1)
NAMESPACE = "dualjudge"  # the run's actors are named in it: `ray list actors` shows them
GCS_PROBE = "/ray.rpc.NodeInfoGcsService/GetClusterId"  # asked of a head before Ray joins it
PING_S = 30.0  # seconds an actor has to answer whether its server lives
LOG_BYTES = 4 * 2**20  # the most of a server's log that is copied back from its node


def ray_module() -> Any:
    """Ray, or one line saying how to install it."""
    try:
        import ray
    except ImportError:
        raise DualjudgeError(f"engine.ray: Ray is not installed; install it with {RAY_INSTALL}") from None
    return ray


def _host_port(address: str) -> tuple[str, int]:
    """The host and port an address names: HOST:PORT (the cluster's GCS), ray://HOST:PORT (Ray Client), or auto
    (the cluster `ray start --head` started on this machine)."""
    if address == "auto":
        env = os.environ.get("RAY_ADDRESS")
        if env and env != "auto":
            return _host_port(env)
        try:
            address = CURRENT_CLUSTER.read_text().strip()
        except OSError:
            raise DualjudgeError(
                "engine.ray: auto names the cluster started on this machine, and none is (`ray start --head` starts one)"
            ) from None
    plain = address.removeprefix("ray://")
    host, sep, port = plain.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise DualjudgeError(f"engine.ray: {address!r} is not a cluster address (HOST:PORT, ray://HOST:PORT or auto)")
    return host, int(port)


def check_reachable(address: str) -> None:
    """One line when nothing answers at the address, or something that is not a Ray cluster's head (before anything
    is written), never a hang: Ray's own client waits for a head that does not answer as one without end."""
    import grpc  # Ray's own dependency: its head (the GCS) speaks gRPC

    host, port = _host_port(address)
    try:
        with socket.create_connection((host, port), timeout=REACH_S):
            pass
    except OSError as e:
        raise DualjudgeError(
            f"engine.ray: nothing answers at {host}:{port} ({e.strerror or type(e).__name__}); is the cluster up? "
            f"(`ray start --head` starts one on this machine)"
        ) from None
    with grpc.insecure_channel(f"{host}:{port}") as channel:
        try:
            if address.startswith("ray://"):  # Ray Client's server: a gRPC server is all that can be asked of it
                grpc.channel_ready_future(channel).result(timeout=REACH_S)
            else:  # the head's GCS: the first question Ray's client asks it
                channel.unary_unary(GCS_PROBE)(b"", timeout=REACH_S)
        except (grpc.FutureTimeoutError, grpc.RpcError):
            raise DualjudgeError(
                f"engine.ray: {host}:{port} answers, but not as a Ray cluster's head (`ray status` on the head names its address)"
            ) from None


def connect(address: str) -> Any:
    """Ray, connected to the cluster at `address` (once per process)."""
    ray = ray_module()
    if ray.is_initialized():
        return ray
    check_reachable(address)
    host, port = _host_port(address)
    target = address if address.startswith("ray://") else f"{host}:{port}"
    try:
        ray.init(address=target, namespace=NAMESPACE, log_to_driver=False, logging_level=logging.ERROR)
    except (RuntimeError, ConnectionError, ValueError) as e:  # a version mismatch, a refused client
        raise DualjudgeError(f"engine.ray: could not join the cluster at {target}: {_first_line(e)}") from None
    return ray


@dataclass(frozen=True)
class Node:
    address: str
    cpus: int
    gpus: int
    memory_gb: float
    accelerator: str | None  # the GPU type Ray reports (accelerator_type:NAME), if any


@dataclass(frozen=True)
class Cluster:
    address: str
    nodes: tuple[Node, ...]

    @property
    def gpus(self) -> int:
        return sum(n.gpus for n in self.nodes)

    @property
    def cpus(self) -> int:
        return sum(n.cpus for n in self.nodes)

    def words(self) -> str:
        kinds = sorted({n.accelerator for n in self.nodes if n.accelerator})
        gpus = f"{self.gpus} GPU(s){' (' + ', '.join(kinds) + ')' if kinds else ''}" if self.gpus else "no GPU"
        memory = sum(n.memory_gb for n in self.nodes)
        return (
            f"the Ray cluster at {self.address}: {len(self.nodes)} node(s), {self.cpus} CPU(s), {gpus}, {memory:.0f} GB of memory"
        )


def cluster(address: str) -> Cluster:
    """The cluster's live nodes and their resources."""
    ray = connect(address)
    nodes = []
    for n in ray.nodes():
        if not n.get("Alive"):
            continue
        r = n.get("Resources", {})
        accelerator = next((k.split(":", 1)[1] for k in r if k.startswith("accelerator_type:")), None)
        nodes.append(
            Node(
                str(n.get("NodeManagerAddress")),
                int(r.get("CPU", 0)),
                int(r.get("GPU", 0)),
                float(r.get("memory", 0)) / 1e9,
                accelerator,
            )
        )
    host, port = _host_port(address)  # "auto" named by what it found
    if not nodes:
        raise DualjudgeError(f"engine.ray: the cluster at {host}:{port} has no live node")
    return Cluster(f"{host}:{port}", tuple(sorted(nodes, key=lambda n: n.address)))


def cluster_groups(c: Cluster, cards: list[ModelCard], cpus_per_server: int) -> list[DeviceGroup]:
    """The cluster as device groups: per node, one group per `chunk` GPUs (the widest tensor-parallel card's), or,
    on a cluster without GPUs, one per `cpus_per_server` cores; one line where no node can hold a server."""
    chunk = max([int(card.vllm.tensor_parallel_size or 1) for card in cards] or [1])
    groups: list[DeviceGroup] = []
    if c.gpus:
        for node in c.nodes:
            groups += [
                DeviceGroup("ray", (len(groups) + i,), ray_gpus=chunk, bind=False, accelerator=node.accelerator)
                for i in range(node.gpus // chunk)
            ]
        if not groups:
            widest = max(cards, key=lambda card: int(card.vllm.tensor_parallel_size or 1))
            raise DualjudgeError(
                f"{widest.name}: needs {chunk} GPUs on one node (tensor_parallel_size {chunk}) and no node of "
                f"{c.words()} has as many"
            )
        return groups
    for node in c.nodes:
        slots = node.cpus // cpus_per_server
        groups += [DeviceGroup("ray", (len(groups) + i,), ray_cpus=cpus_per_server, bind=False) for i in range(slots)]
    if not groups:
        raise DualjudgeError(f"engine.ray_cpus: {cpus_per_server} cores per server, and no node of {c.words()} has as many")
    return groups


def placement_words(c: Cluster, groups: list[DeviceGroup]) -> str:
    """How a study's servers are placed on the cluster, in one line (plan and `models check` print it)."""
    slot = groups[0]
    each = f"{slot.ray_gpus} GPU(s)" if slot.ray_gpus else f"{slot.ray_cpus} CPU core(s) (engine.ray_cpus)"
    nodes = "; ".join(
        f"{n.address}: {n.cpus} CPU(s), {n.gpus} GPU(s){' ' + n.accelerator if n.accelerator else ''}, {n.memory_gb:.0f} GB"
        for n in c.nodes
    )
    return (
        f"placed on {c.words()} ({nodes}): up to {len(groups)} model server(s) at once, each with {each} on one node, "
        f"the node Ray's to choose"
    )


class ServerHost:
    """A Ray actor on a node: the model server process it starts there, bound to the node's address."""

    def __init__(
        self,
        name: str,
        card: ModelCard,
        kind: type[ServerProcess],
        seed: int,
        structured_backend: str,
        startup_timeout: float,
        batch_invariant: bool,
    ):
        self.name, self.card, self.kind, self.seed = name, card, kind, seed
        self.structured_backend, self.startup_timeout, self.batch_invariant = structured_backend, startup_timeout, batch_invariant
        self.server: ServerProcess | None = None

    def start(self) -> tuple[str, int, str, str]:
        """Start the server (the card's weights fetched on this node where missing) and return its host, port, API
        key and log path once it answers."""
        from ray.util import get_node_ip_address

        host = str(get_node_ip_address())  # type: ignore[no-untyped-call]
        weights = fetch(self.card, log=lambda _: None)
        server = self.kind(
            self.card,
            weights,
            log_dir=Path(tempfile.gettempdir()) / "dualjudge-ray-logs" / self.name,
            seed=self.seed,
            structured_backend=self.structured_backend,
            startup_timeout=self.startup_timeout,
            placement={},
            batch_invariant=self.batch_invariant,
            host=host,
        )
        self.server = server
        server.launch()
        server.wait_ready()
        return host, int(server.port), server.api_key, str(server.log_path)

    def alive(self) -> bool:
        return self.server is not None and bool(self.server.alive())

    def node_id(self) -> str:
        """The Ray node this actor (and its server) runs on."""
        import ray

        return str(ray.get_runtime_context().get_node_id())

    def pid(self) -> int | None:
        """The server process's id on its node (a test kills it there)."""
        return None if self.server is None or self.server.process is None else int(self.server.process.pid)

    def stop(self, timeout: float) -> None:
        if self.server is not None:
            self.server.stop(timeout)

    def log_tail(self, lines: int) -> str:
        return "" if self.server is None else str(self.server.log_tail(lines))

    def log_bytes(self) -> bytes:
        """The server's log (its last LOG_BYTES), to be kept beside the run's own logs."""
        if self.server is None:
            return b""
        try:
            with self.server.log_path.open("rb") as f:
                f.seek(max(0, self.server.log_path.stat().st_size - LOG_BYTES))
                return f.read()
        except OSError:
            return b""


class RayServer(Routes):
    """The runner's side of a server on the cluster (inference/server_process.Server): an actor started on the node
    Ray picks for the group's resources."""

    LABEL = "a server on Ray"

    def __init__(
        self,
        card: ModelCard,
        group: DeviceGroup,
        *,
        kind: type[ServerProcess],
        log_dir: Path,
        seed: int,
        structured_backend: str,
        startup_timeout: float,
        batch_invariant: bool,
    ) -> None:
        self.card, self.group = card, group
        self.name = f"dualjudge-{card.name}-{os.getpid()}-{next(_NUMBERS)}"  # unique in the namespace: Ray lists it
        self.log_copy = log_dir / f"{kind.LOG_PREFIX}-{card.name}.{self.name.rsplit('-', 1)[1]}.ray.log"
        self.progress_counters = kind.progress_counters
        self.grammar_wait = kind.grammar_wait
        self.options = {"num_gpus": group.ray_gpus, "num_cpus": group.ray_cpus or (0 if group.ray_gpus else 1)}
        self.args = (self.name, card, kind, seed, structured_backend, startup_timeout, batch_invariant)
        self.startup_timeout = startup_timeout
        self.api_key = ""
        self.host, self.port = "", 0
        self.log_path = Path("(on its node, once started)")
        self.node_log = ""
        self.started_s: float | None = None
        self.actor: Any = None
        self._ready: Any = None
        self._ping: Any = None  # an alive() question on its way
        self._asked = 0.0
        self._alive = True

    def launch(self) -> None:
        ray = ray_module()
        host = ray.remote(max_restarts=0)(ServerHost)
        self.actor = host.options(name=self.name, **self.options).remote(*self.args)
        self._launched = time.monotonic()
        self._ready = self.actor.start.remote()

    def wait_ready(self) -> None:
        ray = ray_module()
        try:
            self.host, self.port, self.api_key, self.node_log = ray.get(self._ready, timeout=self.startup_timeout)
        except ray.exceptions.GetTimeoutError:
            raise ServerStartFailed(
                f"the server for {self.card.name} on the Ray cluster was not ready in {self.startup_timeout:.0f} s "
                f"(no node had {self.options} free, or the server was still starting)"
            ) from None
        except ray.exceptions.RayError as e:
            raise ServerStartFailed(f"the server for {self.card.name} on the Ray cluster did not start: {_first_line(e)}") from None
        self.log_path = Path(f"{self.host}:{self.node_log}")
        self.started_s = time.monotonic() - self._launched

    def alive(self) -> bool:
        """Whether the actor says its server lives, without blocking the caller (the watch asks every second): a
        question is sent, and its answer read on a later call; an actor or node that is gone answers with an error,
        and one that leaves a question unanswered for PING_S is taken for gone."""
        if self.actor is None:
            return False
        ray = ray_module()
        if self._ping is None:
            self._ping, self._asked = self.actor.alive.remote(), time.monotonic()
            return self._alive
        done, _ = ray.wait([self._ping], timeout=0)
        if not done:
            self._alive = self._alive and time.monotonic() - self._asked < PING_S
            return self._alive
        try:
            self._alive = bool(ray.get(self._ping))
        except Exception:  # the actor or its node is gone (Ray's errors vary with how)
            self._alive = False
        self._ping = None
        return self._alive

    def gone(self) -> str:
        return f"{self.LABEL} is gone (its process or its node)"  # the actor's process, or the node it ran on

    def stop(self, timeout: float = 60.0) -> None:
        if self.actor is None:
            return
        ray = ray_module()
        try:
            if self.started_s is not None:
                ray.get(self.actor.stop.remote(timeout), timeout=timeout + 15)
                self.log_copy.parent.mkdir(parents=True, exist_ok=True)
                self.log_copy.write_bytes(ray.get(self.actor.log_bytes.remote(), timeout=30))
        except Exception:  # the actor or its node is gone already: nothing left to stop, no log to keep
            pass
        ray.kill(self.actor)
        self.actor = None

    def log_tail(self, lines: int = 12) -> str:
        if self.actor is None:
            return "(the server is stopped)"
        ray = ray_module()
        try:
            return str(ray.get(self.actor.log_tail.remote(lines), timeout=10))
        except Exception:
            return "(its node is gone, and its log with it)"


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return next((t for t in reversed(text) if t.strip()), type(e).__name__)[:300]
