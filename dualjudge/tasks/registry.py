"""Which task a run studies: a built-in one by name, or a task folder by path."""

from __future__ import annotations

from collections.abc import Callable
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
    """The task folder at `path`, read again only when a file it is made of changed (the files its last load
    read are looked at, one stat each; nothing else under the folder is walked, however deep or cyclic)."""
    folder = path.expanduser().resolve()
    known = _LOADED.get(folder)
    if known is not None and _stamp(known[0].files) == known[1]:
        return known[0]
    task = load_task(folder)
    if task.name in BUILTIN:  # its runs would pass for the built-in task's (fingerprint, words, testbed)
        raise DualjudgeError(f"{folder / TASK_FILE}: name {task.name!r} is a built-in task's; give the folder's task another name")
    _LOADED.pop(folder, None)
    while len(_LOADED) >= _KEPT:
        _LOADED.pop(next(iter(_LOADED)))
    _LOADED[folder] = (task, _stamp(task.files))
    return task


def resolve(name: str | None, path: str | None) -> Task:
    if path:
        return task_at(Path(path))
    return builtin_task(name or DEFAULT)


_LOADED: dict[Path, tuple[Task, tuple[tuple[int, int], ...]]] = {}  # folder -> its task, and its files' stamp
_KEPT = 8  # task folders kept in memory (the oldest read goes first)


def _stamp(files: tuple[Path, ...]) -> tuple[tuple[int, int], ...]:
    """Each file's size and time (a task edited in place is read again); a file gone is (-1, -1)."""
    out = []
    for p in files:
        try:
            st = p.stat()
        except OSError:
            out.append((-1, -1))
        else:
            out.append((st.st_size, st.st_mtime_ns))
    return tuple(out)
