"""The sandbox: one isolated environment per program, a fresh process per command.

`command.py` builds and runs it (`Sandbox`, `run_command`) with its C side `launcher.c`, which
`launcher.py` builds into the cache (through `c_binary.py`, which builds every C program of the
engine). What its callers share with it is in `outcome.py`; the layers this host can give are
probed once by `host_probe.py`; what a sandbox shows of the host's files is `view.py`; its uids
`uids.py`, its cgroups `cgroups.py` (v1 and v2), the removal of trees `fstree.py`, and what
killed engines left behind is cleared by `cleanup.py`."""
