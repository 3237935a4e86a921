"""The study's stages, one module each: its step (what the runner asks), its count (what `dualjudge plan`
says it will ask) and its token bound (what the schedule and the placement simulation weigh). runs/study.py
lists them in order."""
