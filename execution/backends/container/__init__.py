"""The container backend: its client on the host (`backend.py`), the judge agent inside the
container (`agent.py`) and the container's seccomp profile (`seccomp_profile.py`)."""
