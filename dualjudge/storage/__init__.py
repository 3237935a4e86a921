"""Storage: the run's SQLite store with its content-addressed cache, its typed rows and keys, the run lock."""
