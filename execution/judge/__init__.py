"""Judging many programs: the `Engine` (policy, caches, backends, workers; `engine.py`), job files
in and results out (`jobfile.py`, `jsonl.py`, `batch.py`) and the progress bar (`progress.py`)."""
