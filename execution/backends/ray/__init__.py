"""The Ray backend: the driver's side (`cluster.py`, `batch.py`, `dispatch.py`), the judging
node's (`node.py`) and the cluster token (`auth.py`)."""
