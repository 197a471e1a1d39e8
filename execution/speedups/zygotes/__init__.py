"""Tests forked from one pre-initialised interpreter per program: CPython (`cpython.py`,
`cpython_zygote.c`), PyPy (`pypy.py`, `pypy_zygote.c`) and Ruby (`ruby.py`, `ruby_zygote.c`),
their shared frame protocol (`zygote_protocol.h`) and seam (`seam.py`, `zygote_seam.h`), and the
strategies that choose them (`strategy.py`)."""
