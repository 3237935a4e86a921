"""Pairwise judges: A-versus-B verdicts in both orders, read from the pairwise table (table.py), fitted by a
Bradley-Terry model with ties (Davidson), a strength per system and, per judge, a decisiveness, a first-position
effect and an own-family term (model.py), and reported per judge and as a leaderboard (estimate.py)."""
