"""`dualjudge rubric clarify RUN`: the label-free rubric clarification experiment, with its control."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from dualjudge.cli.common import console, err_console

app = typer.Typer(rich_markup_mode=None, help="Judge rubrics: the rubric clarification experiment.", no_args_is_help=True)


@app.command("clarify")
def clarify(
    run_dir: Annotated[Path, typer.Argument(help="A run directory (its judges score with the rubric).")],
    editor: Annotated[str, typer.Option(help="The model card that rewrites clauses (local or hosted).")],
    k: Annotated[int, typer.Option(help="Clauses to clarify (and as many for the control).")] = 2,
    dev_share: Annotated[float, typer.Option(help="Share of each group (of signs, or a task's) in the development split.")] = 0.5,
    seed: Annotated[
        Optional[int], typer.Option(help="Seed of the split, the control draw and the editor (default: the run's).")
    ] = None,
) -> None:
    """Rank the rubric's clauses by the judges' disagreement on a development split of the items, have an
    editor rewrite the most contested ones (and, as the control, as many random others), then score the
    test split with the original, clarified and control rubrics and report agreement between judges,
    with humans (when labels were imported) and self-preference under each. Resumes when rerun."""
    from dualjudge.cli.run import RichProgress
    from dualjudge.studies.clarify import ClarifyOptions
    from dualjudge.studies.clarify import clarify as run_clarify

    progress = RichProgress()
    try:
        record = run_clarify(run_dir, ClarifyOptions(editor, k, dev_share, seed), progress)
    except KeyboardInterrupt:
        progress.close()
        err_console.print(
            f"interrupted; rerun `dualjudge rubric clarify {run_dir} --editor {editor}` with the same options to resume."
        )
        sys.exit(130)
    finally:
        progress.close()
    console.print(f"development signs: {', '.join(record.split['dev'])}; test: {', '.join(record.split['test'])}")
    console.print(f"clarified: {', '.join(record.selected)}; control: {', '.join(record.control)}")
    for arm in ("clarified", "control"):
        if arm not in record.rubrics:
            problems = [p for a in record.editor.attempts if a.arm == arm for p in a.problems]
            console.print(f"{arm} rubric not made: the editor broke its structure on every try ({'; '.join(problems)})")
    console.print(f"rubrics and diffs: {run_dir}/rubrics/; result: {run_dir}/report.md (Rubric clarification)")
