"""The engine's caches, below one folder (`files.cache_root`): judged results (`results.py`),
compiled programs (`compiles.py`), and how anything is written there whole or not at all
(`files.py`)."""
