"""The judge probes read back: presentation order and padding (probes.py) and self-recognition (recognition.py)."""
