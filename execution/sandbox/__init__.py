"""The sandbox: one isolated environment per program, a fresh process per command
(`command.py`, with `launcher.c` inside it). What its callers share with it is in `outcome.py`;
the host's layers in `host_probe.py`; the filesystem view, uids, cgroups and clean-up each in
its own module."""
