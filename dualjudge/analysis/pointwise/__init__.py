"""Pointwise judges (a score or a decision per answer): the paper's tables (dual_judge.py), the judge x answer
grid (grid.py) and the calibrated self-preference index on it (self_preference.py) with its diagnostics,
decomposition (belief.py), bounds, the pooled and difference-in-differences alternatives; SIGN_TYPE
identification, missingness, decision risk, judge designs compared and the rubric clarification experiment."""
