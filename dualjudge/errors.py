"""Errors a user can cause. The CLI prints their one-line message and exits with status 2."""


class DualjudgeError(Exception):
    """A user-facing error: bad input, missing file, unreachable endpoint. One line, says what to do."""


class ServerStartFailed(DualjudgeError):
    """A model server that was launched exited, or was not ready in time, while loading: the machine's
    trouble with one model (memory, a flag, a processor), which the runner retries and, past its restarts,
    turns into that model's job failure rather than the run's."""
