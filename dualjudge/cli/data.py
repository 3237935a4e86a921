"""`dualjudge data ...`: check a task; build and inspect the uk-signs testbed."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from dualjudge.cli.common import console, csv_list, err_console, floats
from dualjudge.errors import DualjudgeError

app = typer.Typer(
    rich_markup_mode=None,
    help="Check a task (yours or a built-in one); build and inspect the uk-signs testbed.",
    no_args_is_help=True,
)
DEFAULT_TESTBED = Path("testbed")


@app.command("build")
def data_build(
    out: Annotated[Path, typer.Option(help="Output folder for images and the manifest.")] = DEFAULT_TESTBED,
    size: Annotated[int, typer.Option(help="Image size in pixels (square).", min=32, max=2048)] = 512,
    seed: Annotated[int, typer.Option(help="Global seed for the random occluders.", min=0, max=2**63 - 1)] = 0,
    signs: Annotated[Optional[str], typer.Option(help="Comma-separated TSRGD codes (default: all 30).")] = None,
    visibilities: Annotated[Optional[str], typer.Option(help="Comma-separated levels, e.g. 1.0,0.5,0.1.")] = None,
    modes: Annotated[Optional[str], typer.Option(help="Comma-separated: random_block,bottom_up.")] = None,
    images: Annotated[Optional[Path], typer.Option(help="Folder of artwork named by TSRGD code, used instead of renders.")] = None,
) -> None:
    """Render (or import), occlude and describe the variants; write PNGs and variants.csv/.parquet."""
    from dualjudge.tasks.signs import build_sign_variants
    from dualjudge.variants.occlusion import MODES, VISIBILITIES

    for option, value in (("--signs", signs), ("--modes", modes), ("--visibilities", visibilities)):
        if value is not None and not csv_list(value):
            raise DualjudgeError(f"{option} names nothing; leave it out to take every one")
    with Progress(
        TextColumn("building variants"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err_console, transient=True
    ) as bar:
        task = bar.add_task("build", total=None)
        frame = build_sign_variants(
            out,
            size=size,
            seed=seed,
            codes=csv_list(signs),
            visibilities=floats(visibilities, "--visibilities") or VISIBILITIES,
            modes=csv_list(modes) or MODES,
            images_dir=images,
            progress=lambda done, total: bar.update(task, completed=done, total=total),
        )
    console.print(
        f"wrote {len(frame)} variants of {frame['sign_code'].nunique()} signs to {out}/ (variants.csv, variants.parquet, images/)"
    )


@app.command("sheet")
def data_sheet(
    testbed: Annotated[Path, typer.Option(help="A folder made by `dualjudge data build`.")] = DEFAULT_TESTBED,
    out: Annotated[Optional[Path], typer.Option(help="PNG file to write (default: TESTBED/contact_sheet.png).")] = None,
) -> None:
    """Draw a contact sheet of all variants, to look at."""
    from dualjudge.tasks.signs import contact_sheet

    path = contact_sheet(testbed, out or testbed / "contact_sheet.png")
    console.print(f"wrote {path}")


@app.command("task")
def data_task(
    task: Annotated[str, typer.Argument(help="A task folder, or a built-in task's name (uk-signs, uk-signs-applied).")],
) -> None:
    """Check a task (every item, image, label and prompt file, as a run would) and say what it holds."""
    from rich.table import Table

    from dualjudge.tasks.registry import BUILTIN, builtin_task, task_at
    from dualjudge.tasks.task import plural

    found = builtin_task(task) if task in BUILTIN else task_at(Path(task))
    table = Table(title=f"task {found.name}: {len(found.items)} {plural(found.noun)} ({' and '.join(found.modalities)})")
    table.add_column("id")
    texts = any(i.text for i in found.items)  # what the systems are asked (the question): shown where items have it
    if texts:
        table.add_column(found.noun, overflow="fold")
    table.add_column("label")
    table.add_column("group")
    table.add_column("reference", overflow="fold")
    for item in found.items[:5]:
        table.add_row(item.id, *([item.text or "-"] if texts else []), item.label or "-", item.cluster, item.reference)
    console.print(table)
    if found.label and found.answer is not None:
        labels = f"{found.label}: a value matching {found.answer} (scored by exact match against each item's label)"
    elif found.label:
        labels = f"{found.label}: {', '.join(found.label_ids)}"
    else:
        labels = "none (answers end freely)"
    groups = len({i.cluster for i in found.items})
    meta = sorted({k for i in found.items for k, _ in i.metadata})
    seen = (
        "the judges see each item's text beside the reference"
        if any(i.shown_to_judges for i in found.items)
        else ("the judges see the reference, not the item")
    )
    console.print(f"domain: {found.domain}\nquestion: {found.question}\nfinal line: {labels}\n{seen}")
    console.print(f"bootstrap clusters: {groups} ({plural(found.unit)}); metadata: {', '.join(meta) or 'none'}")
    console.print(f"sha256: {found.sha256 or 'built in (pinned by the installed package)'}")
