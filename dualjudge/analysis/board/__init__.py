"""The leaderboard: the systems' calibrated scores with rank intervals (leaderboard.py, ranks.py), a disconnected
table's blocks (connectivity.py), one model under two names (duplicates.py), the items every system answered."""
