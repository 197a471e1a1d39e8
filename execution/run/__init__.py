"""Judging one program in its sandbox: the build plan carried out, compile, each test, the verdict
(`runner.py`), and how an output is compared with the expected ones (`compare.py`; ExecEval's
own rule is `execeval/compare.py`)."""
