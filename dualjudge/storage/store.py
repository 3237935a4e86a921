"""The run store: one SQLite database per run directory (WAL, one writer).

Tables:
- `cache`: responses by content-addressed request key (only deterministic requests, only successes).
  It can live in a separate, user-named file shared across runs (engine.cache), on a connection of its own
  where each reply is one short transaction: runs using the file at once never wait for one another's
  batches, and a reply kept before its run's batch commits is found again on resume.
- `answers`: one row per (variant, repeat, system model, strategy): the system's answer.
- `verdicts`: one row per (answer, judge model, judge kind).
- `order_probe`, `padding_probe`: the judge probes.
Every work row keeps its outcome state (ok / parse_failure / error), attempt count and error text.
A row in a final state (ok, parse_failure) is never overwritten; an error row is retried and its
attempt count grows. Results are committed in batches (one transaction per BATCH_ROWS writes, or
older than BATCH_S seconds; the runner also flushes every BATCH_S and at every stage's end), so a
commit costs little per row; a row is final only once committed, so a kill loses at most the last
uncommitted batch (and the requests in flight), which a rerun does again.

Opening checks the file before anything is written: a folder, an empty file, a file that is not
SQLite, a truncated database or one with another schema is refused with one line, and left as it
is. `readonly=True` (status, export) opens with SQLite's read-only mode and never writes.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import sqlite3
import time
import urllib.parse
from collections.abc import Iterable, Iterator
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

from dualjudge.errors import DualjudgeError
from dualjudge.inference.types import GenerationResult
from dualjudge.outcome import FINAL
from dualjudge.rundir import RunDir
from dualjudge.storage.rows import ROW_TYPES, Row

META_SCHEMA = "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
REQUEST_LOG_SCHEMA = """CREATE TABLE IF NOT EXISTS request_log (
    session TEXT NOT NULL, key TEXT NOT NULL, model TEXT NOT NULL, ok INTEGER NOT NULL, attempts INTEGER,
    latency_s REAL, completion_tokens INTEGER, at REAL NOT NULL);"""
SQL_TYPES = {"str": "TEXT", "Status": "TEXT", "int": "INTEGER", "float": "REAL"}
ALWAYS_SET = ("status", "attempts")  # besides the key: every row has them (NOT NULL)


def table_ddl(row: type[Row]) -> str:
    """A work table's CREATE statement, derived from its row type: the key's columns first (NOT NULL, the
    primary key), then status, the row's own fields, attempts, error and `updated` (when it was written).
    A field's SQL type follows its annotation (str, int, float); only the key, status and attempts are
    NOT NULL."""
    types = {f.name: str(f.type) for f in dataclasses.fields(row)}
    order = [*row.KEY, "status", *(n for n in types if n not in (*row.KEY, "status", "attempts", "error")), "attempts", "error"]
    columns = []
    for name in order:
        sql = SQL_TYPES[types[name].split("|")[0].strip()]
        columns.append(f"{name} {sql}{' NOT NULL' if name in row.KEY or name in ALWAYS_SET else ''}")
    columns.append("updated REAL NOT NULL")
    return f"CREATE TABLE IF NOT EXISTS {row.TABLE} (\n    " + ", ".join(columns) + f",\n    PRIMARY KEY ({', '.join(row.KEY)}));"


SCHEMA = "\n".join([META_SCHEMA, *(table_ddl(row) for row in ROW_TYPES), REQUEST_LOG_SCHEMA]) + "\n"
CACHE_SCHEMA = """
CREATE TABLE IF NOT EXISTS cache (
    key TEXT PRIMARY KEY, model TEXT NOT NULL, text TEXT NOT NULL, finish_reason TEXT,
    prompt_tokens INTEGER, completion_tokens INTEGER, latency_s REAL, constraint_kind TEXT, created REAL NOT NULL);
"""
CACHE_INSERT = "INSERT OR IGNORE INTO cache VALUES (?,?,?,?,?,?,?,?,?)"
_FINAL_SQL = ", ".join(f"'{s}'" for s in FINAL)
TABLE_KEYS = {row.TABLE: row.KEY for row in ROW_TYPES}  # declared with the row types (rows.py)
WORK_TABLES = tuple(TABLE_KEYS)  # the tables of work rows, in the order a run fills them


R = TypeVar("R", bound=Row)
BATCH_ROWS = 256  # writes per transaction at most
BATCH_S = 0.25  # seconds a write may wait uncommitted (checked at each write and by the runner's flusher)
BUSY_S = 60.0  # seconds a write waits for another process's transaction on the same file (a shared cache)
SQLITE_MAGIC = b"SQLite format 3\x00"
SHARED_HINT = "point engine.cache at another file"
UNUSABLE_HINT = "use another --out, or delete it (responses can be restored from a shared engine.cache)"


def _expected_columns() -> dict[str, list[str]]:
    db = sqlite3.connect(":memory:")
    db.executescript(SCHEMA + CACHE_SCHEMA.format(schema="main"))
    tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    out = {t: [row[1] for row in db.execute(f"PRAGMA table_info({t})")] for t in tables}
    db.close()
    return out


EXPECTED_COLUMNS = _expected_columns()

# Columns a store made by an earlier dualjudge lacks, and how a run fills them from what it has: a
# verdict's scores were one column each (accuracy ... equivalent), a stability pass kept overall or
# equivalent. A run opening such a store adds the column and fills it (the old columns stay, unread);
# reading one before that says how to upgrade it.
UPGRADES: dict[tuple[str, str], tuple[str, str]] = {
    ("verdicts", "scores"): (
        "TEXT",
        """UPDATE verdicts SET scores = CASE
        WHEN status != 'ok' THEN NULL
        WHEN kind = 'quality' THEN json_object('accuracy', accuracy, 'completeness', completeness,
                                               'relevance', relevance, 'overall', overall)
        WHEN kind = 'equivalence' THEN json_object('equivalent',
                                                   json(CASE equivalent WHEN 1 THEN 'true' WHEN 0 THEN 'false' END))
        END""",
    ),
    ("judge_passes", "value"): ("REAL", "UPDATE judge_passes SET value = COALESCE(overall, equivalent)"),
}
UPGRADE_HINT = "it was made by an earlier dualjudge: rerun `dualjudge run CONFIG --out RUN` once to upgrade it"


def _readonly_uri(path: Path) -> str:
    """A SQLite URI that opens `path` read-only (nothing can be written through it); in a folder nothing can be
    written to (an archived run on a read-only mount), also immutable: SQLite then needs no lock or shared-memory
    file beside it, which it could not create there (a finished run's store has its write-ahead log folded in)."""
    uri = f"file:{urllib.parse.quote(str(path.resolve()))}?mode=ro"
    return uri + ("&immutable=1" if not writable_folder(path.parent) else "")


def writable_folder(folder: Path) -> bool:
    """Whether files can be made in `folder` (False on a read-only mount, whoever asks)."""
    return os.access(folder, os.W_OK)


def read_only_line(folder: Path, what: str) -> str:
    return f"{folder}: is read-only (an archived run?), and {what} must write there; copy the run to a writable folder first"


def _columns(db: sqlite3.Connection, schema: str, table: str) -> set[str]:
    return {row[1] for row in db.execute(f"PRAGMA {schema}.table_info({table})")}


def _upgrade(db: sqlite3.Connection) -> None:
    """Bring a store made by an earlier dualjudge to today's columns (UPGRADES), in one transaction."""
    todo = [(t, c, how) for (t, c), how in UPGRADES.items() if (have := _columns(db, "main", t)) and c not in have]
    if not todo:
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        for table, column, (kind, fill) in todo:
            db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
            db.execute(fill)
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def check_sqlite_file(path: Path, what: str, hint: str = UNUSABLE_HINT, *, empty_ok: bool = False) -> bool:
    """Refuse a path that cannot be a SQLite database: a folder, an empty file (unless `empty_ok`: a shared cache
    that another run is creating this instant), another format, a truncated file. Returns whether the file exists
    (a missing one is created later)."""
    if path.is_dir():
        raise DualjudgeError(f"{path}: is a folder, not a {what}; {hint}")
    if not path.exists():
        return False
    try:
        with path.open("rb") as f:
            header = f.read(100)
        size = path.stat().st_size
    except OSError as e:
        raise DualjudgeError(f"{path}: cannot read the {what} ({e.strerror or e})") from None
    if size == 0 and empty_ok:
        return True
    if size == 0:
        raise DualjudgeError(f"{path}: is empty (0 bytes), not a usable {what}; {hint}")
    if len(header) < 100 or not header.startswith(SQLITE_MAGIC):
        raise DualjudgeError(f"{path}: is not a SQLite database, so not a usable {what}; {hint}")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    # as SQLite reads it: the header's page count holds only when the change counter (offset 24) equals the
    # version-valid-for number (offset 92); and pages not yet checkpointed live in the write-ahead log, so a
    # database beside a non-empty -wal file may be shorter than its header says (SQLite reads both)
    counted = header[24:28] == header[92:96]
    wal = path.with_name(path.name + "-wal")
    in_wal = wal.is_file() and wal.stat().st_size > 32
    if pages and counted and not in_wal and size < pages * page_size:
        raise DualjudgeError(f"{path}: is truncated ({size} of {pages * page_size} bytes), not a usable {what}; {hint}")
    return True


def _check_schema(
    db: sqlite3.Connection, schema: str, path: Path, what: str, wanted: tuple[str, ...], upgradable: bool = False
) -> None:
    """An existing database must hold this project's tables (with their columns), or nothing at all. With
    `upgradable`, the columns a run adds to an earlier store (UPGRADES) may be missing."""
    try:
        tables = {name for (name,) in db.execute(f"SELECT name FROM {schema}.sqlite_master WHERE type = 'table'")}
        if not tables:
            return
        ours = [t for t in wanted if t in tables]
        if not ours:
            raise DualjudgeError(f"{path}: holds other tables ({', '.join(sorted(tables)[:5])}), not a {what}; {UNUSABLE_HINT}")
        for table in ours:
            have = _columns(db, schema, table)
            missing = [c for c in EXPECTED_COLUMNS[table] if c not in have]
            if missing and all((table, c) in UPGRADES for c in missing):
                if upgradable:
                    continue
                raise DualjudgeError(f"{path}: table {table} lacks columns {', '.join(missing)}; {UPGRADE_HINT}")
            if missing:
                raise DualjudgeError(
                    f"{path}: table {table} lacks columns {', '.join(missing)}, so this is not a usable {what}; {UNUSABLE_HINT}"
                )
    except sqlite3.DatabaseError as e:
        raise DualjudgeError(f"{path}: is damaged or not a SQLite database ({e}), not a usable {what}; {UNUSABLE_HINT}") from None


def check_store_files(path: Path, shared_cache: Path | None = None) -> None:
    """Check a run's store and its shared cache without writing anything (before a run takes its lock)."""
    if check_sqlite_file(path, "dualjudge store"):
        db = sqlite3.connect(_readonly_uri(path), uri=True)
        try:
            _check_schema(db, "main", path, "dualjudge store", tuple(EXPECTED_COLUMNS), upgradable=True)
        finally:
            db.close()
    if shared_cache is not None and check_sqlite_file(shared_cache, "response cache", SHARED_HINT, empty_ok=True):
        db = sqlite3.connect(_readonly_uri(shared_cache), uri=True)
        try:
            _check_schema(db, "main", shared_cache, "response cache", ("cache",))
        finally:
            db.close()


def _has_table(db: sqlite3.Connection, table: str) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone() is not None


def _shared_cache(path: Path) -> sqlite3.Connection:
    """A connection of its own to a shared response cache (engine.cache), in autocommit: each reply is one short
    transaction, so runs using the file at once wait at most for one another's row (BUSY_S bounds the wait)."""
    check_sqlite_file(path, "response cache", SHARED_HINT, empty_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=BUSY_S)
    try:
        _check_schema(db, "main", path, "response cache", ("cache",))
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
    except BaseException:
        db.close()
        raise
    return db


def _cache_row(key: str, model: str, r: GenerationResult) -> tuple[Any, ...]:
    """A reply as a row of the cache table, in its columns' order (CACHE_SCHEMA)."""
    return (key, model, r.text, r.finish_reason, r.prompt_tokens, r.completion_tokens, r.latency_s, r.constraint_kind, time.time())


class Store:
    def __init__(self, path: Path, shared_cache: Path | None = None, *, readonly: bool = False) -> None:
        self.path = path
        self.readonly = readonly
        existed = check_sqlite_file(path, "dualjudge store")
        if readonly and not existed:
            raise DualjudgeError(f"{path}: not found; is this a run directory?")
        if readonly:
            uri = _readonly_uri(path)
            self.db = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False, timeout=BUSY_S)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            if not writable_folder(path.parent):
                raise DualjudgeError(read_only_line(path.parent, "this command"))
            self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=BUSY_S)
        self.cache_db = self.db  # where the response cache lives: the store itself, or a shared cache file
        try:
            _check_schema(self.db, "main", path, "dualjudge store", tuple(EXPECTED_COLUMNS), upgradable=not readonly)
            if readonly:
                return
            _upgrade(self.db)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")  # in WAL: durable across process kills, fsync at checkpoints
            self.db.executescript(SCHEMA)
            if shared_cache is not None and shared_cache.resolve() != path.resolve():
                self.cache_db = _shared_cache(shared_cache)
            self.cache_db.executescript(CACHE_SCHEMA)
        except BaseException:
            self.close_connections()
            raise
        self._pending = 0  # writes in the open transaction
        self._since = 0.0  # when it began (monotonic)

    @cached_property
    def _has_cache(self) -> bool:
        return _has_table(self.cache_db, "cache")

    @property
    def shares_cache(self) -> bool:
        """Whether the response cache is a file of its own (engine.cache), which other runs may use at once."""
        return self.cache_db is not self.db

    def close(self) -> None:
        if not self.readonly:
            self.flush()
        self.close_connections()

    def close_connections(self) -> None:
        if self.shares_cache:
            self.cache_db.close()
        self.db.close()

    # -- batched writes ------------------------------------------------------------------------
    def _write(self, sql: str, params: Iterable[Any], last: bool = True) -> None:
        """One write, in the open batch (begun by the first write after a commit). The batch may be
        committed after it only when it is the `last` of the writes that belong together."""
        if not self._pending:
            self.db.execute("BEGIN")
            self._since = time.monotonic()
        try:
            self.db.execute(sql, tuple(params))
        finally:
            self._pending += 1
        if last and (self._pending >= BATCH_ROWS or time.monotonic() - self._since >= BATCH_S):
            self.flush()

    def flush(self) -> None:
        """Commit the open batch: its rows are final from now on."""
        if self._pending:
            self._pending = 0
            self.db.execute("COMMIT")

    def flush_if_due(self) -> None:
        """Commit the open batch when it is older than BATCH_S (the runner's flusher calls it)."""
        if self._pending and time.monotonic() - self._since >= BATCH_S:
            self.flush()

    # -- meta ----------------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        self.flush()
        self.db.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key, value))

    # -- response cache ------------------------------------------------------------------------
    def cache_get(self, key: str) -> GenerationResult | None:
        if self.readonly and not self._has_cache:  # a run that kept its replies in a shared cache file
            return None
        row = self.cache_db.execute(
            "SELECT text, finish_reason, prompt_tokens, completion_tokens, latency_s, constraint_kind FROM cache WHERE key = ?",
            (key,),
        ).fetchone()
        if row is None:
            return None
        return GenerationResult(
            row[0],
            finish_reason=row[1],
            prompt_tokens=row[2],
            completion_tokens=row[3],
            latency_s=row[4],
            constraint_kind=row[5],
            tries=0,
        )

    def cache_put(self, key: str, model: str, result: GenerationResult, last: bool = True) -> None:
        """Keep a reply: in the store's open batch, or, in a shared cache, committed at once in a transaction of its
        own (another run using the same file waits for a single row, never for this run's batch)."""
        assert result.ok
        self._cache_write(CACHE_INSERT, _cache_row(key, model, result), last)

    def cache_drop(self, key: str) -> None:
        """Forget a cached reply (one that can no longer be read); the request is then sent again."""
        self._cache_write("DELETE FROM cache WHERE key = ?", (key,))

    def _cache_write(self, sql: str, params: tuple[Any, ...], last: bool = True) -> None:
        """A write to the response cache: in a shared cache its own transaction, else a write of the open batch."""
        if self.shares_cache:
            self.cache_db.execute(sql, params)
        else:
            self._write(sql, params, last)

    def cache_put_many(self, rows: Iterable[tuple[str, str, GenerationResult]]) -> int:
        """Bulk insert in one transaction (imports and benchmarks)."""
        self.flush()
        n = 0
        with _Transaction(self.cache_db):
            for key, model, r in rows:
                self.cache_db.execute(CACHE_INSERT, _cache_row(key, model, r))
                n += 1
        return n

    def log_request(self, session: str, key: str, model: str, result: GenerationResult, last: bool = True) -> None:
        """Audit log of every request actually sent to an engine (cache hits are not)."""
        self._write(
            "INSERT INTO request_log VALUES (?,?,?,?,?,?,?,?)",
            (session, key, model, int(result.ok), result.tries, result.latency_s, result.completion_tokens, time.time()),
            last,
        )

    def sent(self, session: str, key: str, model: str, result: GenerationResult, cacheable: bool) -> None:
        """A request's log row and (a deterministic success) its cache row, committed together: a rerun
        never finds one without the other."""
        cache = result.ok and cacheable
        self.log_request(session, key, model, result, last=not cache)
        if cache:
            self.cache_put(key, model, result)

    def requests(self) -> dict[str, int]:
        """Requests this run sent to engines, over all its sessions (cache hits are not requests)."""
        if self.readonly and not self.has_table("request_log"):
            return {"sent": 0, "failed": 0, "sessions": 0}
        sent, failed, sessions = self.db.execute(
            "SELECT COUNT(*), COALESCE(SUM(ok = 0), 0), COUNT(DISTINCT session) FROM request_log"
        ).fetchone()
        return {"sent": int(sent), "failed": int(failed), "sessions": int(sessions)}

    def has_table(self, table: str) -> bool:
        return _has_table(self.db, table)

    def cache_size(self) -> int:
        if not _has_table(self.cache_db, "cache"):
            return 0
        return int(self.cache_db.execute("SELECT COUNT(*) FROM cache").fetchone()[0])

    def cache_finish(self, keys: list[str]) -> dict[str, tuple[str, int]]:
        """The finish reason and completion tokens of the cached replies among `keys`."""
        if not keys or not _has_table(self.cache_db, "cache"):
            return {}
        out: dict[str, tuple[str, int]] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ", ".join("?" for _ in chunk)
            for key, reason, tokens in self.cache_db.execute(
                f"SELECT key, finish_reason, completion_tokens FROM cache WHERE key IN ({marks})", chunk
            ):
                out[key] = (str(reason or ""), int(tokens or 0))
        return out

    def cached_tokens(self, model: str, where: str) -> tuple[float, int]:
        """The completion tokens of a model's cached replies that match `where` (SQL over the cache's columns), and
        how many replies they are."""
        if not _has_table(self.cache_db, "cache"):
            return 0.0, 0
        got = self.cache_db.execute(
            f"SELECT SUM(completion_tokens), COUNT(*) FROM cache WHERE model = ? AND {where}", (model,)
        ).fetchone()
        return float(got[0] or 0), int(got[1] or 0)

    def transaction(self) -> _Transaction:
        self.flush()
        return _Transaction(self.db)

    # -- work rows -----------------------------------------------------------------------------
    def done_keys(self, row: type[Row]) -> set[tuple[Any, ...]]:
        """Primary keys of a table's rows in a final state (ok or parse_failure): work that is not redone."""
        cols = ", ".join(row.KEY)
        return {tuple(r) for r in self.db.execute(f"SELECT {cols} FROM {row.TABLE} WHERE status IN ({_FINAL_SQL})")}

    def ensure(self, row: type[Row]) -> None:
        """The work table of a row type that is not one of the built-in ROW_TYPES (a stage's own), made
        from the type when missing."""
        self.db.execute(table_ddl(row))

    def record(self, result: Row) -> None:
        """Insert a result; an existing error row is replaced (attempts add up), a final row never is."""
        table, keys = result.TABLE, result.KEY
        row = {**result.values(), "updated": time.time()}
        cols = list(row)
        updates = ", ".join(f"{c} = excluded.{c}" for c in cols if c not in keys and c != "attempts")
        sql = (
            f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)}) "
            f"ON CONFLICT({', '.join(keys)}) DO UPDATE SET {updates}, attempts = {table}.attempts + excluded.attempts "
            f"WHERE {table}.status NOT IN ({_FINAL_SQL})"
        )
        self._write(sql, [row[c] for c in cols])

    def read(self, row_type: type[R], **equal: Any) -> list[R]:
        """Rows of a table as their type, optionally only those whose columns equal the given values."""
        unknown = set(equal) - set(row_type.columns())
        assert not unknown, unknown
        where = " AND ".join(f"{c} = ?" for c in equal)
        return [
            row_type.from_record(dict(r))
            for r in self.rows(row_type.TABLE, f"WHERE {where}" if where else "", tuple(equal.values()))
        ]

    def rows(self, table: str, where: str = "", params: tuple[Any, ...] = ()) -> Iterator[sqlite3.Row]:
        if self.readonly and not self.has_table(table):
            return  # a read-only view of an older or partial store: the table has no rows yet
        cursor = self.db.cursor()
        cursor.row_factory = sqlite3.Row  # on this cursor only: other queries keep plain tuples
        yield from cursor.execute(f"SELECT * FROM {table} {where}", params)

    def counts(self, table: str) -> dict[str, int]:
        if self.readonly and not self.has_table(table):
            return {}
        return {s: n for s, n in self.db.execute(f"SELECT status, COUNT(*) FROM {table} GROUP BY status")}

    def error_kinds(self, table: str) -> dict[str, int]:
        """Failures grouped by kind: the first words of their error text ("truncated", "not JSON ...")."""
        out: dict[str, int] = {}
        for by_group in self.error_kinds_by(table, None).values():
            for kind, n in by_group.items():
                out[kind] = out.get(kind, 0) + n
        return out

    def error_kinds_by(self, table: str, column: str | None) -> dict[str, dict[str, int]]:
        """Failure kinds per value of `column` (e.g. per judge model); one group "" without a column."""
        out: dict[str, dict[str, int]] = {}
        if self.readonly and not self.has_table(table):
            return out
        group = column or "''"
        for value, err in self.db.execute(f"SELECT {group}, error FROM {table} WHERE status != 'ok'"):
            kind = (err or "unknown").split(":")[0][:60]
            counts = out.setdefault(str(value), {})
            counts[kind] = counts.get(kind, 0) + 1
        return out


class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN")

    def __exit__(self, exc_type: object, *_: object) -> None:
        self.db.execute("COMMIT" if exc_type is None else "ROLLBACK")


def dumps(obj: object) -> str:
    return json.dumps(obj, separators=(",", ":"))


def load_run_store(out: Path) -> Store:
    """A run's store opened read-only (status, export): nothing in it is ever changed."""
    run = RunDir(out)
    if not run.store.exists():
        raise DualjudgeError(f"{out}: no {RunDir.STORE}; is this a run directory?")
    return Store(run.store, readonly=True)


def fault_line(error: BaseException) -> tuple[str, int] | None:
    """One line for a storage fault (the disk full, a damaged or locked store) and its exit status, or None
    when `error` is not one. What was committed before stays: SQLite rolls back only the open batch."""
    text = str(error)
    full = (isinstance(error, OSError) and error.errno == errno.ENOSPC) or "database or disk is full" in text
    if full:
        return (
            "the disk is full: what was committed stays in the store; free space (or move the run directory "
            "elsewhere) and run the same command again, which goes on where this one stopped",
            4,
        )
    if not isinstance(error, sqlite3.Error):
        return None
    if "malformed" in text or "not a database" in text or "disk I/O error" in text:
        return (
            f"the store is damaged (SQLite: {text}): copy results.sqlite aside and recover what it holds with "
            f"`sqlite3 results.sqlite .recover | sqlite3 recovered.sqlite`, then run into a fresh directory",
            2,
        )
    if "locked" in text or "busy" in text:
        return (
            "the store is locked by another process (a run or a reader still writing): wait for it to finish, then run again",
            2,
        )
    return None
