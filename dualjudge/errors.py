"""Errors a user can cause. The CLI prints their one-line message and exits with status 2."""


class DualjudgeError(Exception):
    """A user-facing error: bad input, missing file, unreachable endpoint. One line, says what to do."""
