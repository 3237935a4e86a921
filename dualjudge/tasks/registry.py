"""Which task a run studies: a built-in one by name, or a task folder by path."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from dualjudge.errors import DualjudgeError
from dualjudge.tasks.applied import NAME as APPLIED
from dualjudge.tasks.applied import uk_signs_applied
from dualjudge.tasks.folder import TASK_FILE, load_task, task_prompts_dir
from dualjudge.tasks.signs import NAME as SIGNS
from dualjudge.tasks.signs import uk_signs
from dualjudge.tasks.task import Task

BUILTIN: dict[str, Callable[[], Task]] = {SIGNS: uk_signs, APPLIED: uk_signs_applied}
DEFAULT = SIGNS


def default_rubric(task: Task) -> Path | None:
    """The `rubric` variant's rubric: the task's own, the task folders' default, or (uk-signs) the shipped one."""
    if task.name == DEFAULT:
        return None
    return task.rubric or task_prompts_dir() / "rubrics" / "rubric.toml"


def builtin_task(name: str) -> Task:
    make = BUILTIN.get(name)
    if make is None:
        raise DualjudgeError(f"unknown task {name!r}; built in: {', '.join(BUILTIN)} (or [task] path = a task folder)")
    return make()


def task_at(path: Path) -> Task:
    """The task folder at `path`, read again only when a file of it changed."""
    folder = path.expanduser().resolve()
    return _cached(folder, _stamp(folder))


def resolve(name: str | None, path: str | None) -> Task:
    if path:
        return task_at(Path(path))
    return builtin_task(name or DEFAULT)


@lru_cache(maxsize=8)
def _cached(folder: Path, stamp: tuple[tuple[str, int, int], ...]) -> Task:
    task = load_task(folder)
    if task.name in BUILTIN:  # its runs would pass for the built-in task's (fingerprint, words, testbed)
        raise DualjudgeError(f"{folder / TASK_FILE}: name {task.name!r} is a built-in task's; give the folder's task another name")
    return task


def _stamp(folder: Path) -> tuple[tuple[str, int, int], ...]:
    """Every file under the folder, with its size and time (a task edited in place is read again)."""
    if not (folder / TASK_FILE).is_file():
        return ()
    out = []
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            st = p.stat()
            out.append((str(p.relative_to(folder)), st.st_size, st.st_mtime_ns))
    return tuple(out)
