"""The dualjudge command line: parse arguments, call the library, print. No logic lives here."""

from __future__ import annotations

import sqlite3
import sys
import traceback

import typer

try:  # typer >= 0.20 vendors click; older releases use the click package
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover
    from click import exceptions as click_errors  # type: ignore[no-redef]  # the same module, another path

from dualjudge.cli.common import err_console
from dualjudge.errors import DualjudgeError

app = typer.Typer(
    rich_markup_mode=None,
    help=(
        "Does an LLM judge favour answers of its own model family? Dual-judge studies (a 0-10 quality judge and a "
        "strict equivalence judge) across model families, on UK traffic signs or any reference-based task of your own."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

from dualjudge.cli import analysis, data, models, rubric, run  # noqa: E402

app.add_typer(data.app, name="data")
app.add_typer(models.app, name="models")
app.command("run")(run.run)
app.command("plan")(run.plan)
app.command("status")(run.status)
app.command("export")(run.export)
app.command("view")(run.view)
app.command("reproduce")(run.reproduce)
app.command("analyze")(analysis.analyze)
app.add_typer(analysis.stats_app, name="stats")
app.add_typer(analysis.human_app, name="human")
app.add_typer(rubric.app, name="rubric")


def _one_line(message: str) -> None:
    err_console.print(f"error: {' '.join(message.split())}", highlight=False, markup=False, soft_wrap=True)


def main() -> None:
    """Entry point. User errors (bad options, bad input, unusable paths) print one line and exit 2;
    an unexpected exception keeps its traceback and says it is a bug."""
    try:
        code = app(standalone_mode=False)  # returns the code of a typer.Exit instead of exiting
        if isinstance(code, int) and code:
            sys.exit(code)
    except DualjudgeError as e:
        _one_line(str(e))
        sys.exit(2)
    except click_errors.NoArgsIsHelpError as e:
        err_console.print(e.ctx.get_help() if e.ctx else str(e), highlight=False, markup=False)
        sys.exit(2)
    except click_errors.UsageError as e:
        command = e.ctx.command_path if e.ctx else "dualjudge"
        _one_line(f"{command}: {e.format_message().replace('Value error, ', '')} (see {command} --help)")
        sys.exit(2)
    except typer.Abort:
        err_console.print("interrupted")
        sys.exit(130)
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)
    except (OSError, sqlite3.Error) as e:
        from dualjudge.storage.store import fault_line

        fault = fault_line(e)
        if fault is not None:  # the disk full, a damaged or locked store: below the protocol, said in one line
            _one_line(fault[0])
            sys.exit(fault[1])
        if not isinstance(e, OSError) or e.filename is None:
            traceback.print_exc()
            _one_line("this is a bug in dualjudge, not in your input; please report it with the traceback above")
            sys.exit(1)
        _one_line(f"{e.filename}: {e.strerror or e}")  # a file or folder the user named
        sys.exit(2)
    except Exception:
        traceback.print_exc()
        _one_line("this is a bug in dualjudge, not in your input; please report it with the traceback above")
        sys.exit(1)


if __name__ == "__main__":
    main()
