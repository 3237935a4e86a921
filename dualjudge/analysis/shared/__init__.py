"""What every estimate shares: the verdict table and its reader (table.py), the result types (results.py), the
scale and the option choices, the task's words, the sign-cluster bootstrap (bootstrap.py) and the judge
calibration the pointwise index and the leaderboard fit (calibration.py), the declared statistics."""
