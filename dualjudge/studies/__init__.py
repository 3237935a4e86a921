"""Whole studies: a run under its lock (job), its export and manifest, the smoke test, the rubric
clarification experiment."""
