"""The engine's HTTP server (`http.py`): one threading server, its admission and body limits,
serving the APIs of `execeval/api.py` and `backends/remote/judge_api.py`."""
