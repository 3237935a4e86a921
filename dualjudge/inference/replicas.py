"""The servers of one model, on one or more device groups, used as one engine.

A job's first server is opened by the job itself; replicas (the same weights on other, idle groups)
join and leave while it runs (runs/schedule.py decides when). Each request goes to the server with the
most room: the fewest requests in flight for its capacity. A replica that goes down leaves at once and
its requests are sent again to the others; the first server going down ends the request with
EngineDown, as a single engine would (the runner then restarts it). Every server serves the same
weights under the same identity, so which server answers a request changes nothing that is recorded.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from dualjudge.inference.types import Engine, EngineDown, GenerationRequest, GenerationResult, capacity


@dataclass(eq=False)
class Server:
    engine: Engine
    label: str  # where it runs: a device group's label
    first: bool  # the job's own server (not a replica)
    capacity: int
    outstanding: int = 0
    served: int = 0  # requests it answered
    lost: asyncio.Event = field(default_factory=asyncio.Event)  # set when it went down and left


class Servers:
    """The servers of one model as one engine (the Engine protocol)."""

    def __init__(self, model_identity: str) -> None:
        self.model_identity = model_identity
        self.servers: list[Server] = []

    @property
    def capacity(self) -> int:
        """Requests worth keeping in flight: every server's capacity (0 while none is open)."""
        return sum(s.capacity for s in self.servers)

    def add(self, engine: Engine, label: str, first: bool = False) -> Server:
        server = Server(engine, label, first, capacity(engine))
        self.servers.append(server)
        return server

    def remove(self, engine: Engine) -> None:
        self.servers = [s for s in self.servers if s.engine is not engine]

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        while True:
            if not self.servers:
                raise EngineDown("no server of this model is open")
            server = min(self.servers, key=lambda s: (s.outstanding / max(1, s.capacity), not s.first))
            server.outstanding += 1
            try:
                result = await server.engine.generate(request)
                server.served += 1
                return result
            except EngineDown:
                if server.first:
                    raise
                if server in self.servers:
                    self.remove(server.engine)
                    server.lost.set()
            finally:
                server.outstanding -= 1

    async def close(self) -> None:
        """Nothing to close: each server is closed by whoever opened it."""
