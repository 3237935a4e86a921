"""What an analysis writes into its output folder, checked before the analysis starts."""

ANALYSIS_FILES = ("summary.json", "report.md", "report.html")
ANALYSIS_FOLDERS = ("figures",)
