"""`python -m dualjudge.cli`: the same entry point as the `dualjudge` command."""

from dualjudge.cli import main

main()
