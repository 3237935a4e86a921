"""Engines (vLLM server, in-process transformers + Outlines), model cards and weight fetching."""
