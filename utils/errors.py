"""The project's one error type for bad input data (defined by the engine, which reads input files
of its own and depends on nothing else of the project)."""

from code_eval_taskpack.execution.errors import DataError

__all__ = ["DataError"]
