"""The analysis of a verdict table, in rooms by what they estimate:

- pointwise/: pointwise judges' self-preference (the calibrated index, its decomposition and diagnostics) and the
  paper's tables;
- pairwise/: pairwise judges' self-preference (a Davidson-Bradley-Terry fit) and their leaderboard;
- board/: the calibrated leaderboard of systems;
- reliability/: agreement between and within judges, the human check;
- bias_probes/: the order, padding and self-recognition probes read back;
- shared/: what they all use (the table, result types, the bootstrap, the judge calibration);
- simulated/: planted tables for tests and benchmarks.

summary.py runs them all on one table and returns the summary (summary.json).
"""
