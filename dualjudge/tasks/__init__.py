"""Tasks: what a study asks about. A task is its items (each with a reference), its words and its label
vocabulary; uk-signs and uk-signs-applied are built in, any other is a folder (folder.py)."""
