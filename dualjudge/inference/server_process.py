"""A model server as a child process, whatever the backend: a free port on 127.0.0.1, an API key that
travels in the environment (never on the command line, where every local user could read it), its own
log, readiness on its /health route, and a stop that leaves no process of its group behind.

`Server` is what the rest of the package needs of a server (the engines start one, the watch observes
it, `dualjudge models serve` keeps one in the foreground); `ServerProcess` implements it for a backend
that says its label, log prefix, command and environment variables (vllm_server.py).

`start()` waits for /health; if the server dies or times out, the error includes the tail of its log.
`stop()` sends SIGTERM to the server's whole process group, even when the API server itself has already
died, and waits until no process of the group is left (SIGKILL after a timeout), so GPU memory is free
before the next model starts and no engine or worker outlives its server.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple, Protocol, Self

import httpx

from dualjudge.errors import DualjudgeError, ServerStartFailed
from dualjudge.inference.cards import ModelCard
from dualjudge.inference.weights import LocalWeights

_HANDED_OUT: set[int] = set()  # ports given to servers of this process (several may start at once)


def free_port() -> int:
    """A port nothing listens on and no other server of this process was given: servers started side by
    side each bind theirs seconds later, so the OS alone could hand the same free port out twice."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port


def port_in_use(port: int) -> bool:
    """True when something listens on the port (connections lingering in TIME_WAIT do not count)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of a process group; on systems without /proc, [pgid] while the
    group can be signalled."""
    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return []
        return [pgid]
    members = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()  # after "pid (comm) ": state, ppid, pgrp, ...
        if len(fields) > 2 and fields[0] not in ("Z", "X") and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _own_session_dying_with_parent() -> None:
    """In the child before exec: default SIGINT/SIGTERM handling (a runner started in the background
    inherits SIGINT ignored), a new session (so stop() can signal the whole group), and SIGTERM when
    the parent dies (Linux PR_SET_PDEATHSIG), so a SIGKILLed run cannot orphan the server."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.setsid()
    if sys.platform.startswith("linux"):
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG = 1


_WRITING: set[Path] = set()  # the logs of the servers this process runs: a replica of a model gets its own


def _log_path(log_dir: Path, prefix: str, name: str) -> Path:
    """PREFIX-NAME.log, or PREFIX-NAME.2.log (3, ...) while another server of the same model writes the first."""
    path, n = log_dir / f"{prefix}-{name}.log", 1
    while path in _WRITING:
        n += 1
        path = log_dir / f"{prefix}-{name}.{n}.log"
    return path


class WaitGauges(NamedTuple):
    """Prometheus gauges of a server: requests held back (`waiting`, those with label reason=`reason` wait for
    their grammar to compile) and requests running."""

    waiting: str
    reason: str
    running: str


class Server(Protocol):
    """A started (or starting) model server serving the OpenAI-compatible chat API at `base_url`."""

    LABEL: str  # in messages: "starting <LABEL> for MODEL"
    card: ModelCard
    api_key: str
    log_path: Path
    progress_counters: tuple[str, ...]  # Prometheus counters of tokens prefilled and generated (the hang watch)
    grammar_wait: WaitGauges | None  # the gauges that say requests wait for a grammar compile (the hang watch)
    started_s: float | None

    @property
    def base_url(self) -> str: ...

    @property
    def health_url(self) -> str: ...

    @property
    def metrics_url(self) -> str: ...

    def launch(self) -> None: ...

    def wait_ready(self) -> None: ...

    def alive(self) -> bool: ...

    def gone(self) -> str:
        """Why the server is no longer alive, in words (the watch's reason)."""
        ...

    def stop(self, timeout: float = 60.0) -> None: ...

    def log_tail(self, lines: int = 12) -> str: ...


class Routes:
    """The OpenAI-compatible routes of a server listening at `host`:`port`."""

    host: str
    port: int

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def health_url(self) -> str:
        return f"http://{self.host}:{self.port}/health"

    @property
    def metrics_url(self) -> str:
        return f"http://{self.host}:{self.port}/metrics"


class ServerProcess(Routes):
    """The process side of a Server: a backend subclass gives LABEL, LOG_PREFIX, progress_counters,
    check_settings(), command() and backend_environment()."""

    LABEL = "model"  # in messages: "<LABEL> server for MODEL exited ..."
    LOG_PREFIX = "server"  # logs are PREFIX-MODEL.log in the run's logs folder

    @classmethod
    def engine_version(cls) -> str:
        """The installed server, by name and version ("vllm 0.33.0"): part of every request's identity, so a
        backend must say its own (a backend that does not is refused, never taken for another)."""
        raise DualjudgeError(
            f"server backend {cls.__name__} does not say which server it is: define engine_version() on it "
            f"(its name and installed version; docs/extending.md)"
        )

    progress_counters: tuple[str, ...] = ()  # none: the watch falls back to request completions
    grammar_wait: WaitGauges | None = None  # none: the server cannot say that a grammar compiles

    def __init__(
        self,
        card: ModelCard,
        weights: LocalWeights,
        *,
        log_dir: Path,
        port: int | None = None,
        seed: int = 0,
        structured_backend: str = "xgrammar",
        startup_timeout: float = 900.0,
        placement: dict[str, str] | None = None,
        batch_invariant: bool = False,
        host: str = "127.0.0.1",
    ) -> None:
        self.check_settings(card, structured_backend)  # before a port or a log is taken
        if port is not None and port_in_use(port):
            raise DualjudgeError(f"port {port} on 127.0.0.1 is already in use; choose another or omit --port")
        self.host = host  # the loopback; a node's own address for a server on a Ray cluster (inference/ray_cluster.py)
        self.card = card
        self.weights = weights
        self.seed = seed
        self.structured_backend = structured_backend  # the grammar backend, in vLLM's names
        self.batch_invariant = batch_invariant  # batch-invariant kernels (inference/determinism.py)
        self.port = port or free_port()
        self.api_key = secrets.token_hex(16)
        self.startup_timeout = startup_timeout
        self.placement = dict(placement or {})  # the device group's variables (CUDA_VISIBLE_DEVICES, CPU binding)
        log_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = _log_path(log_dir, self.LOG_PREFIX, card.name)
        self.process: subprocess.Popen[bytes] | None = None
        self.started_s: float | None = None
        self._launched = 0.0

    def check_settings(self, card: ModelCard, structured_backend: str) -> None:
        """Refuse, in one line, what this backend cannot serve (the backend is not installed, an unknown
        grammar backend)."""

    def command(self) -> list[str]:
        raise NotImplementedError

    def backend_environment(self) -> dict[str, str]:
        """The backend's own variables (the API key among them)."""
        raise NotImplementedError

    def environment(self) -> dict[str, str]:
        """The server's environment: this process's, offline hub access, the backend's variables and the
        device group's placement."""
        offline = {"HF_HUB_OFFLINE": os.environ.get("HF_HUB_OFFLINE", "1")}
        return {**os.environ, **offline, **self.backend_environment(), **self.placement}

    def launch(self) -> None:
        """Start the server process. Call from a long-lived thread (the main one): the server gets
        SIGTERM when the thread that started it ends, so a killed dualjudge never leaves it behind."""
        self.log_path = _log_path(self.log_path.parent, self.LOG_PREFIX, self.card.name)
        _WRITING.add(self.log_path)
        log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            self.command(),
            stdout=log,
            stderr=subprocess.STDOUT,
            env=self.environment(),
            preexec_fn=_own_session_dying_with_parent,
        )
        log.close()
        self._launched = time.perf_counter()

    def start(self) -> None:
        """Launch and wait until ready."""
        self.launch()
        self.wait_ready()

    def wait_ready(self) -> None:
        assert self.process is not None, "launch() first"
        t0 = self._launched
        deadline = t0 + self.startup_timeout
        with httpx.Client(timeout=5.0) as client:
            while True:
                if self.process.poll() is not None:
                    raise ServerStartFailed(
                        f"{self.LABEL} server for {self.card.name} exited with status "
                        f"{self.process.returncode} while starting: {self.log_tail()}"
                    )
                try:
                    if client.get(self.health_url).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.perf_counter() > deadline:
                    self.stop()
                    raise ServerStartFailed(
                        f"{self.LABEL} server for {self.card.name} not ready after {self.startup_timeout:.0f} s: {self.log_tail()}"
                    )
                time.sleep(1.0)
        self.started_s = time.perf_counter() - t0

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def gone(self) -> str:
        return f"the server process exited (status {None if self.process is None else self.process.returncode})"

    def stop(self, timeout: float = 60.0) -> None:
        """SIGTERM the server's process group and wait until none of it is left (SIGKILL after
        `timeout`). The group is signalled even when the API server has died already: its engine
        and worker processes keep the group alive and would otherwise run on, orphaned."""
        _WRITING.discard(self.log_path)
        if self.process is None:
            return
        pgid = self.process.pid  # setsid() in the child: the group id is the server's pid
        _signal_group(pgid, signal.SIGTERM)
        _signal_group(pgid, signal.SIGCONT)  # a stopped (SIGSTOP) process acts on the SIGTERM only once continued
        deadline = time.monotonic() + timeout
        while self.process.poll() is None or group_members(pgid):
            if time.monotonic() > deadline:
                _signal_group(pgid, signal.SIGKILL)
                self.process.wait()
                kill_deadline = time.monotonic() + 10
                while group_members(pgid) and time.monotonic() < kill_deadline:
                    time.sleep(0.1)
                break
            time.sleep(0.1)
        self.process = None

    def log_tail(self, lines: int = 12) -> str:
        try:
            text = self.log_path.read_text(errors="replace").strip().splitlines()
        except FileNotFoundError:
            return "(no log)"
        tail = [line.strip() for line in text[-lines:] if line.strip()]
        return " | ".join(tail) + f" (full log: {self.log_path})"

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
