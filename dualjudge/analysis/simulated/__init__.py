"""Simulated verdict tables with planted effects (simulate.py) and what a table beside planted.json planted."""
