"""`dualjudge run | status | export`: run a benchmark configuration, inspect and export a run."""

from __future__ import annotations

import numbers
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, Task, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from dualjudge.cli.common import console, err_console
from dualjudge.rundir import RunDir

if TYPE_CHECKING:  # imported where used: the CLI starts without pandas or the store
    import pandas as pd

    from dualjudge.config import RunConfig
    from dualjudge.storage.store import Store
    from dualjudge.studies.reproduce import Reproduction


class _RichStage:
    """One stage's line: done / total, tokens/s, elapsed and ETA."""

    def __init__(self, bar: Progress, name: str, total: int, from_cache: bool) -> None:
        self.bar = bar
        self.from_cache = from_cache
        self.tokens = 0
        self.task = bar.add_task(name, total=total, tps=0.0)

    def _current(self) -> Task:
        return next(t for t in self.bar.tasks if t.id == self.task)

    def advance(self, tokens_so_far: int | None = None) -> None:
        if tokens_so_far is not None:
            self.tokens = tokens_so_far
        elapsed = self._current().elapsed or 1e-9
        self.bar.update(self.task, advance=1, tps=self.tokens / elapsed)

    def end(self) -> None:
        """Stop the stage's clock; a cache pass that answered nothing is removed from the display."""
        done = self._current().completed
        if done == 0 and self.from_cache:
            self.bar.remove_task(self.task)
        else:
            self.bar.update(self.task, total=done)


class RichProgress:
    """Every active stage at once (one per model running on its device group), each with done / total,
    tokens/s and ETA."""

    def __init__(self) -> None:
        self.bar = Progress(
            TextColumn("{task.description}", markup=False),  # a stage's name holds model names and groups
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[tps]:>6.1f} tok/s"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=err_console,
        )

    def stage(self, name: str, total: int, from_cache: bool = False) -> _RichStage:
        if not self.bar.live.is_started:
            self.bar.start()
        return _RichStage(self.bar, name, total, from_cache)

    def note(self, message: str) -> None:
        self.bar.console.print(message, highlight=False)

    def close(self) -> None:
        if self.bar.live.is_started:
            self.bar.stop()


class _LineStage:
    """One stage of a LineProgress: its counts, read by the printing thread."""

    def __init__(self, owner: LineProgress, name: str, total: int) -> None:
        self.owner, self.name, self.total = owner, name, total
        self.done = self.tokens = 0
        self.started = time.monotonic()
        self.ended = False

    def advance(self, tokens_so_far: int | None = None) -> None:
        with self.owner.lock:
            self.done += 1
            if tokens_so_far is not None:
                self.tokens = tokens_so_far

    def end(self) -> None:
        with self.owner.lock:
            self.ended = True
        if self.done:
            self.owner.say(f"{self.name}: {self.done} of {self.total} done in {time.monotonic() - self.started:.0f} s")

    def line(self) -> str:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        text = f"{self.name}: {self.done} of {self.total} ({self.done / max(self.total, 1):.0%}), {self.tokens / elapsed:.1f} tok/s"
        if 0 < self.done < self.total:
            text += f", about {(self.total - self.done) * elapsed / self.done:.0f} s left"
        return text


class LineProgress:
    """Progress as plain lines, for output that is not a terminal (a log file, CI): every active stage's counts at
    least every EVERY_S seconds, and each stage's end."""

    EVERY_S = 30.0

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.stages: list[_LineStage] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, name="dualjudge-progress", daemon=True)
        self._thread.start()

    def stage(self, name: str, total: int, from_cache: bool = False) -> _LineStage:
        stage = _LineStage(self, name, total)
        with self.lock:
            self.stages.append(stage)
        return stage

    def note(self, message: str) -> None:
        self.say(message)

    def say(self, message: str) -> None:
        err_console.print(message, highlight=False, markup=False, soft_wrap=True)

    def _tick(self) -> None:
        while not self._stop.wait(self.EVERY_S):
            with self.lock:
                active = [s for s in self.stages if not s.ended and s.total]
                lines = [s.line() for s in active]
            for line in lines:
                self.say(line)

    def close(self) -> None:
        self._stop.set()


def _fmt2(x: object) -> str:
    """Two decimals, or "-" for a cell with no value (None, NaN or pandas' NA)."""
    import pandas as pd

    return "-" if not isinstance(x, numbers.Real) or pd.isna(x) else f"{float(x):.2f}"


def _pairwise_lines(out: Path) -> None:
    """The pairwise judges' lines, from the analysis the run wrote (summary.json's pairwise part)."""
    import json

    from dualjudge.analysis.shared.results import PairwiseAnalysis
    from dualjudge.report.pairwise import headline

    try:
        data = json.loads(RunDir(out).summary.read_text())
        result = PairwiseAnalysis.model_validate(data.get("pairwise") or data)
    except (OSError, ValueError):
        console.print("pairwise: no analysis was written (no pair had both answers)")
        return
    for line in headline(result)[1:]:
        console.print(f"pairwise {line.strip()}", markup=False, highlight=False)


def _summary_table(frame: pd.DataFrame) -> Table:
    from dualjudge.studies.job import summary

    t = Table(title="summary (verdict table)")
    table = summary(frame)
    several = table["judge_variant"].nunique() > 1
    for col in (
        "system model",
        "system",
        "judge",
        *(("judge variant",) if several else ()),
        "n",
        "mean overall",
        "equivalence",
        "format ok",
    ):
        t.add_column(col, no_wrap=True)
    for r in table.itertuples():
        t.add_row(
            r.system_model,
            r.system,
            r.judge_model,
            *((r.judge_variant,) if several else ()),
            str(r.n),
            _fmt2(r.mean_overall),
            _fmt2(r.equivalence_rate),
            _fmt2(r.format_compliance),
        )
    return t


def run(
    config: Annotated[Path, typer.Argument(help="Run configuration (TOML), e.g. benchmarks/demo.toml.")],
    out: Annotated[Optional[Path], typer.Option(help="Run directory (default: runs/<run.name>).")] = None,
    skip_preflight: Annotated[bool, typer.Option("--skip-preflight", help="Start without checking every model first.")] = False,
    smoke_first: Annotated[
        bool,
        typer.Option(
            "--smoke-first",
            help="Start each model and send it one system and one verdict request before the study; stop if one fails.",
        ),
    ] = False,
) -> None:
    """Run a benchmark: systems, then judges, then probes, models side by side on the device groups
    ([engine] devices); resumes where it stopped.

    Every model is checked first (architecture in the installed vLLM, modalities, weights, memory,
    serving arguments); the run does not start when one fails."""
    from dualjudge.config import load_config
    from dualjudge.studies.job import caveats, check_before_run, exit_status, require_preflight, run_job

    cfg = load_config(config)
    out = out or Path("runs") / cfg.run.name
    check_before_run(cfg, out)  # in a second, before the preflight imports vLLM
    if not skip_preflight:
        for check in require_preflight(cfg):
            if check.status == "warn":
                err_console.print(f"preflight warning, {check.model}: {'; '.join(check.reasons)}", highlight=False)
    if smoke_first:
        from dualjudge.errors import DualjudgeError
        from dualjudge.studies.smoke import smoke, smoke_failures

        results = smoke(cfg, RunDir(out).logs, lambda msg: err_console.print(msg, highlight=False))
        failed = smoke_failures(results)
        if failed:
            raise DualjudgeError(
                f"smoke test: {failed} (the study did not start; `dualjudge models check CONFIG --smoke` shows every model)"
            )
        err_console.print(f"smoke test passed: {', '.join(r.model for r in results)}", highlight=False)
    progress: RichProgress | LineProgress = RichProgress() if err_console.is_terminal else LineProgress()
    try:
        result = run_job(cfg, out, progress)
    except KeyboardInterrupt:
        progress.close()
        err_console.print(
            f"interrupted; everything finished so far is saved. Rerun `dualjudge run {config} --out {out}` to resume."
        )
        sys.exit(130)
    finally:
        progress.close()
    if cfg.judges.pointwise:
        console.print(_summary_table(result.table))
    if cfg.judges.pairwise:
        _pairwise_lines(out)
    failures = {t: f for t, f in result.report.failures.items() if f}
    console.print(
        f"requests sent: {result.report.sessions_requests}; answered from cache: {result.report.cache_hits}; "
        f"models loaded: {', '.join(result.report.models_loaded) or 'none'}"
        + (
            ""
            if result.report.models_loaded or result.report.cache_hits
            else " (everything was already done in this run directory)"
        )
    )
    if failures:
        console.print(f"failures by kind: {failures}")
    for line in result.report.truncated:
        console.print(f"truncated: {line}", markup=False, highlight=False)
    for judge, kinds in sorted(result.report.verdict_failures.items()):
        console.print(f"verdicts of {judge} not ok, by kind: {kinds}")
    tables = ("verdicts.parquet, verdicts.csv, " if cfg.judges.pointwise else "") + (
        "pairwise.parquet, pairwise.csv, " if cfg.judges.pairwise else ""
    )
    console.print(f"results: {out}/ ({tables}manifest.json, results.sqlite)")
    for caveat in caveats(cfg):
        console.print(caveat)
    code, why = exit_status(result.counts, result.report.failed_jobs)
    if code:
        err_console.print(f"{why} (exit {code})", highlight=False)
        raise typer.Exit(code)


def _jobs_table(store: Store, running: bool) -> Table | None:
    """The latest session's jobs (model, stage, device group, times), running ones included. `running`:
    whether a run holds the directory now; without one, a job that never ended was cut off (killed)."""
    import time

    from dualjudge.runs.job_log import recorded_jobs

    jobs = recorded_jobs(store)
    if not jobs:
        return None
    session = jobs[-1].session
    t = Table(title=f"jobs of session {session}")
    for col in ("model", "stage", "group", "started", "took", "loaded its model"):
        t.add_column(col, no_wrap=True)
    for j in (j for j in jobs if j.session == session):
        ended = j.ended_at
        if ended:
            took = f"{ended - j.started_at:.0f} s"
        elif running:
            took = f"running for {time.time() - j.started_at:.0f} s"
        else:
            took = "cut off (the session ended before the job did)"
        loaded = "" if ended is None else ("yes" if j.loaded else "no")
        served = f", {j.requests} requests" if j.requests is not None else ""
        stage = f"{j.stage} (replica{served})" if j.replica else j.stage
        if j.failed:
            took += f"; stopped: {j.failed}"
        t.add_row(j.model, stage, j.group or "elsewhere", time.strftime("%H:%M:%S", time.localtime(j.started_at)), took, loaded)
    return t


def status(run_dir: Annotated[Path, typer.Argument(help="A run directory.")]) -> None:
    """What is done, what failed, and how much came from the cache."""

    from dualjudge.storage.lock import is_running
    from dualjudge.storage.store import WORK_TABLES, load_run_store
    from dualjudge.storage.truncation import Truncation

    store = load_run_store(run_dir)
    try:
        t = Table(title=f"run {run_dir}")
        for col in ("table", "ok", "parse_failure", "error"):
            t.add_column(col)
        for table in WORK_TABLES:
            c = store.counts(table)
            t.add_row(table, str(c.get("ok", 0)), str(c.get("parse_failure", 0)), str(c.get("error", 0)))
        console.print(t)
        kinds = store.error_kinds("answers")
        if kinds:
            console.print(f"answers not ok, by kind: {kinds}")
        for judge, kinds in sorted(store.error_kinds_by("verdicts", "judge_model").items()):
            console.print(f"verdicts of {judge} not ok, by kind: {kinds}")
        from dualjudge.studies.manifest import read_manifest

        manifest = read_manifest(run_dir)
        if manifest is None and RunDir(run_dir).manifest.is_file():
            console.print(f"{RunDir(run_dir).manifest} is unreadable; it is rewritten at the end of the next run")
        last = manifest.last_session if manifest is not None else None
        if last is not None:
            console.print(f"last session: {last.requests_sent} requests sent, {last.cache_hits} answered from cache")
        for model, cut in sorted((manifest.truncation or {}).items() if manifest is not None else []):
            if cut.get("cut"):
                console.print(f"truncated: {Truncation(**cut).words(model)}", markup=False, highlight=False)
        jobs = _jobs_table(store, is_running(run_dir))
        if jobs is not None:
            console.print(jobs)
        console.print(f"response cache: {store.cache_size()} entries")
        config = _stored(store, run_dir)
    finally:
        store.close()
    if config is not None:
        recorded = {m: r.identity for m, r in (manifest.models.items() if manifest else ()) if r.identity}
        console.print(_left(config, run_dir, recorded), highlight=False)


def _stored(store: Store, run_dir: Path) -> RunConfig | None:
    """The run's configuration, where it can still be read (its task folder, its cards): what `status` counts."""
    from dualjudge.errors import DualjudgeError
    from dualjudge.studies.job import stored_config

    try:
        return stored_config(store, run_dir)
    except DualjudgeError:
        return None


def _left(config: RunConfig, run_dir: Path, identities: dict[str, str]) -> str:
    """The run's requests in all, the share its cache answers, and the plan's time for the rest on this machine
    (`identities`: each model's as the run recorded it, which its cache is keyed by)."""
    from dualjudge.errors import DualjudgeError
    from dualjudge.runs.estimate import estimate

    try:
        with err_console.status("counting what is left (as `dualjudge plan` counts it)"):
            est = estimate(config, run_dir, identities=identities)
    except DualjudgeError as e:
        return f"what is left cannot be counted here: {e}"
    done, total = est.cached, est.total_requests
    share = f" ({done / total:.0%})" if total else ""
    line = f"requests: {done} of {total} done{share}; {total - done} left"
    if total - done and est.seconds is not None:
        line += f", about {_duration(est.seconds + est.load_seconds)} on this machine (the plan's estimate, loads included)"
    return line


def export(run_dir: Annotated[Path, typer.Argument(help="A run directory.")]) -> None:
    """Write verdicts.parquet and verdicts.csv from the run's store."""
    from dualjudge.storage.store import load_run_store
    from dualjudge.studies.job import export_run, stored_config

    store = load_run_store(run_dir)
    try:
        table = export_run(stored_config(store, run_dir, recorded_task=True), run_dir, store)
    finally:
        store.close()
    console.print(f"wrote {len(table)} rows to {run_dir}/verdicts.parquet and verdicts.csv")


def plan(
    config: Annotated[Path, typer.Argument(help="Run configuration (TOML).")],
    out: Annotated[
        Optional[Path],
        typer.Option(help="The run directory it would use (default: runs/<run.name>); its cache and request log count."),
    ] = None,
    measured: Annotated[
        Optional[list[Path]], typer.Option(help="Another run directory whose request log times the models (repeatable).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the plan as JSON.")] = False,
    gpu: Annotated[
        Optional[str],
        typer.Option(
            help="Price the local servers on this GPU (H200, H100, A100, L40S, "
            "RTX 4090, A10G, L4) instead of this machine's devices."
        ),
    ] = None,
) -> None:
    """What a run will ask of each model, before anything loads: requests per model and stage, how many
    the cache already answers, tokens, GPU memory and an estimated wall time."""
    import json

    from dualjudge.config import load_config
    from dualjudge.runs.estimate import estimate

    cfg = load_config(config)
    for folder in measured or ():
        if not RunDir(folder).store.is_file():
            from dualjudge.errors import DualjudgeError

            raise DualjudgeError(f"--measured {folder}: not a run directory (no results.sqlite there)")
    with err_console.status(f"planning {config}: building every request the run will make"):
        est = estimate(cfg, out or Path("runs") / cfg.run.name, str(config), tuple(measured or ()), for_gpu=gpu)
    if as_json:
        console.print_json(json.dumps(est.as_dict()))
        return
    t = Table(title=f"plan: {config}")
    for col in ("model", "stage", "requests", "cached", "to send", "prompt tokens", "to prefill", "completion tokens (max)"):
        t.add_column(col, no_wrap=True, justify="left" if col in ("model", "stage") else "right")
    for r in est.rows:
        t.add_row(
            r.model,
            r.stage,
            f"{'≤ ' if r.upper_bound else ''}{r.requests}",
            str(r.cached),
            str(r.to_send),
            f"{r.prompt_tokens:,}",
            f"{r.prefill_tokens:,}",
            f"{r.completion_tokens:,}",
        )
    console.print(t)
    m = Table(title="per model")
    for col in ("model", "roles", "GPU memory", "completion tokens (expected)", "time", "one load"):
        m.add_column(col, no_wrap=True, justify="left" if col in ("model", "roles") else "right")
    for c in est.models:
        m.add_row(
            c.model,
            "+".join(c.roles),
            "elsewhere" if c.gpu_memory_gb is None else f"{c.gpu_memory_gb:g} GB",
            f"{c.expected_completion_tokens:,}",
            _duration(c.seconds),
            "-" if c.load_seconds is None else _duration(c.load_seconds),
        )
    console.print(m)
    for c in est.models:
        console.print(
            f"{c.model}: time from {c.time_basis}; expected completion tokens from {c.completion_basis}; "
            f"tokens counted by {c.tokens}" + (f"; one load: {c.load_basis}" if c.load_basis else ""),
            highlight=False,
            markup=False,
        )
    total, loads = est.seconds, est.load_seconds
    line = (
        f"total: {est.total_requests} requests, {est.cached} answered from the cache, "
        f"{est.total_requests - est.cached} to send; time {_duration(total)} of serving"
    )
    placed = est.placed
    if placed is not None and total:
        times = {1: "once", 2: "twice"}

        def loads_of(model: str, n: int) -> str:
            extra = placed.replicas.get(model, 0)
            said = f"{model} {times.get(n, f'{n} times')}"
            return said + (f" ({extra} of them a replica for a long job's work)" if extra else "")

        loaded = ", ".join(loads_of(m, n) for m, n in sorted(placed.loads.items()) if n)
        reloads = any(n - placed.replicas.get(m, 0) > 1 for m, n in placed.loads.items())
        why = "; a judge whose answers come from a model loaded after it is loaded again" if reloads else ""
        line += (
            f"; about {_duration(placed.seconds)} of wall time with the runner's schedule on {placed.groups} device "
            f"group(s), loads included ({loaded or 'no load'}{why}; what a load rests on is said per model above)"
        )
    elif total and loads:
        line += f", {_duration(loads)} of loading (each model once; what a load rests on is said per model above)"
    console.print(line, highlight=False)
    for note in est.notes:
        console.print(f"note: {note}", highlight=False)


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


def view(
    run_dir: Annotated[Path, typer.Argument(help="A run directory.")],
    screenshot: Annotated[
        bool,
        typer.Option(
            "--screenshot", help="Also save RUN/explorer.png, taken with Debian's chromium (headless) when it is installed."
        ),
    ] = False,
) -> None:
    """Write RUN/explorer.html: every answer with its image or text, the reference, the judges'
    verdicts and reasoning and its probes, filtered and sorted in the browser (one file, works offline)."""
    from dualjudge.report.explorer import write_explorer
    from dualjudge.storage.store import load_run_store

    store = load_run_store(run_dir)
    try:
        path = write_explorer(run_dir, store)
    finally:
        store.close()
    console.print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB); open it in a browser")
    if screenshot:
        from dualjudge.report.browser import find_chromium
        from dualjudge.report.browser import screenshot as take

        browser = find_chromium()
        png = run_dir / "explorer.png"
        if browser is None:
            console.print("no screenshot: chromium is not installed (Debian: apt-get install chromium)")
        elif take(path, png, browser):
            console.print(f"wrote {png}")
        else:
            console.print(f"no screenshot: {browser} wrote nothing")


def reproduce(
    run_dir: Annotated[Path, typer.Argument(help="A finished run directory.")],
    sample: Annotated[int, typer.Option(help="How many of its stored requests to send again.", min=1)] = 50,
    seed: Annotated[int, typer.Option(help="Seed of the sample.", min=0)] = 0,
    concurrency: Annotated[
        Optional[int],
        typer.Option(help="Requests in flight per model (default: 1, or 4 where the run sent one at a time).", min=1),
    ] = None,
    logs: Annotated[Optional[Path], typer.Option(help="Where the servers' logs go (default: a temporary folder).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
) -> None:
    """Send a seeded sample of a finished run's requests again, cache bypassed, with its models started as the run
    started them, at another concurrency; report the share of byte-identical answers and verdicts, the verdicts
    whose parsed values changed, and what the run's manifest and this machine differ in. Writes nothing into the
    run. Exit 0 when everything matched, 4 when something differed."""
    import json

    from dualjudge.studies.reproduce import reproduce as run_reproduce

    result = run_reproduce(
        run_dir, sample, seed, concurrency, logs, note=lambda line: err_console.print(line, highlight=False, markup=False)
    )
    if as_json:
        console.print_json(json.dumps(result.as_dict()))
    else:
        _print_reproduction(result)
    if not result.matched:
        raise typer.Exit(4)


def _share_line(what: str, identical: int, sent: int) -> str:
    if not sent:
        return f"{what}: none in this sample"
    return f"{what} byte-identical: {identical} of {sent} ({identical / sent:.0%})"


def _print_reproduction(result: Reproduction) -> None:
    answers, sent_answers = result.share("answer")
    verdicts, sent_verdicts = result.share("verdict")
    lines = [
        f"{result.run}: {len(result.compared)} of its {result.requests} stored requests sent again (seed {result.seed}), "
        f"{result.concurrency} in flight per model (the run: {', '.join(f'{m} {c}' for m, c in result.run_concurrency.items())})",
        result.regeneration,
        _share_line("answers", answers, sent_answers),
        _share_line("verdicts", verdicts, sent_verdicts),
    ]
    for c in result.changed:
        what = (
            "failed: " + (c.error or "no text")
            if c.again is None
            else ("values changed" if c.values_changed else "text changed, values the same")
        )
        lines.append(f"  {c.kind} by {c.model} ({c.stage}) on {c.variant_id}, {c.system_model} {c.strategy}: {what}; {c.link}")
    lines += [f"left out: {x}" for x in result.left_out]
    lines.append("this machine differs from the run's manifest in: " + ("; ".join(result.differences) or "nothing recorded"))
    if result.matched:
        lines.append(f"everything sent again matched ({len(result.compared)} requests)")
    else:
        lines.append("something differed (exit 4)")
    for line in lines:
        console.print(line, highlight=False, soft_wrap=True)
