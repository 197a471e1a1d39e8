"""`code-exec`: the engine's command line (`main.py`): run, batch, doctor, serve."""
