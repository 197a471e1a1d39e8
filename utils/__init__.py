"""Helpers shared by every benchmark: data access, settings, pass@k, code extraction."""
