"""What makes the engine ExecEval-compatible: its runtimes, commands and limits (`compat.py`),
its output comparator (`compare.py`), the table of every runtime against its toolchain
(`runtime_table.py`) and its HTTP API, `/api/execute_code` (`api.py`)."""
