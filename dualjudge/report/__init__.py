"""Markdown and self-contained HTML reports with matplotlib figures."""
