"""The one language registry: every runtime's commands, limits and aliases (`languages.toml`,
read by `registry.py`), and the toolchains that provide them (`toolchains.py`, `toolchains.txt`)."""
