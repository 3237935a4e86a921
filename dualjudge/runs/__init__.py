"""Runs: SQLite store with a content-addressed cache, planner, resumable runner, manifest, export."""
