"""The remote backend: its client (`client.py`), the wire format both sides share
(`protocol.py`) and the judge server's side, `/api/judge` and `/api/info` (`judge_api.py`)."""
