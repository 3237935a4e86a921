"""The dualjudge command line: parse arguments, call the library, print. No logic lives here."""

from __future__ import annotations

import sys

import typer

from dualjudge.cli.common import err_console
from dualjudge.errors import DualjudgeError

app = typer.Typer(help="Dual-judge evaluation of VLMs on UK traffic signs, with cross-family self-preference.",
                  no_args_is_help=True, pretty_exceptions_enable=False)

from dualjudge.cli import analysis, data, models, run  # noqa: E402

app.add_typer(data.app, name="data")
app.add_typer(models.app, name="models")
app.command("run")(run.run)
app.command("status")(run.status)
app.command("export")(run.export)
app.command("analyze")(analysis.analyze)
app.add_typer(analysis.stats_app, name="stats")
app.add_typer(analysis.human_app, name="human")


def main() -> None:
    """Entry point: user errors print one line and exit 2, never a traceback."""
    try:
        app()
    except DualjudgeError as e:
        err_console.print(f"error: {e}", highlight=False, markup=False, soft_wrap=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
