"""Execution pass@k in 11 languages: the sandboxed, multi-language counterpart of `code_eval`.

Load it offline by path (no Hub access): `evaluate.load(str(utils.evaluate_metrics.CODE_EXEC_PATH))`
(`code-eval metric-path` prints the path). Like `code_eval`, it refuses to run until
the environment variable HF_ALLOW_CODE_EVAL is "1".
"""

import datasets
import evaluate

from code_eval_taskpack.utils.evaluate_metrics.execution_passk import (
    compute,
    require_opt_in,
    with_default_limits,
)

_DESCRIPTION = """
Judges every candidate program against stdin/stdout tests with the code-eval-taskpack engine (C,
C++, C#, Go, Java, JavaScript, Kotlin, PHP, Python, Ruby, Rust; sandboxed, parallel, cached) and
reports pass@k with the unbiased estimator, averaged over problems.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: one list of candidate programs (strings) per problem.
    references: one mapping per problem: `language` (e.g. "Python 3", "GNU C++17", "Rust"),
        `tests` (a list of {"input": str, "output": [str, ...]}: any listed output is accepted),
        `time_limit_s` (default 2, multiplied by the runtime's factor), `memory_limit_mb`
        (default 256).
    k: the k values (default [1, 10, 100]); only k <= the fewest candidates of a problem is reported.
    num_workers: engine workers (default: CPUs).
    comparator: "default" or "execeval" (ExecEval's output comparison).
    cache: "default" (the engine's result cache), None (judge afresh) or a directory.
Returns:
    {"pass@k": float per reported k, "verdicts": per problem the verdict of each candidate,
     "details": per problem the verdict records, "infra_errors": engine failures (not counted)}
Example:
    >>> import os; os.environ["HF_ALLOW_CODE_EVAL"] = "1"
    >>> m = evaluate.load(path)
    >>> m.compute(predictions=[["print(int(input())*2)"]],
    ...           references=[{"language": "Python 3", "tests": [{"input": "2", "output": ["4"]}]}],
    ...           k=[1])["pass@1"]
    1.0
"""

_CITATION = """
@misc{code_eval_taskpack,
  title = {code-eval-taskpack: code benchmarks for lm-evaluation-harness with a sandboxed engine}
}
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class CodeExec(evaluate.Metric):
    def _info(self):  # type: ignore[no-untyped-def]
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {
                    "predictions": datasets.Sequence(datasets.Value("string")),
                    "references": {
                        "language": datasets.Value("string"),
                        "tests": [
                            {
                                "input": datasets.Value("string"),
                                "output": datasets.Sequence(datasets.Value("string")),
                            }
                        ],
                        "time_limit_s": datasets.Value("float64"),
                        "memory_limit_mb": datasets.Value("int64"),
                    },
                }
            ),
        )

    # `datasets` needs every field of every reference; fill the optional limits first.
    def compute(self, *, predictions=None, references=None, **kwargs):  # type: ignore[no-untyped-def,override]
        """Judge every candidate and return pass@k and the verdicts."""
        return super().compute(
            predictions=predictions, references=with_default_limits(references), **kwargs
        )

    def add_batch(self, *, predictions=None, references=None, **kwargs):  # type: ignore[no-untyped-def,override]
        """Add candidates and references to be judged by `compute`."""
        return super().add_batch(
            predictions=predictions, references=with_default_limits(references), **kwargs
        )

    def _compute(  # type: ignore[no-untyped-def]
        self, predictions, references, k=(1, 10, 100), num_workers=None, comparator="default",
        cache="default",
    ):  # fmt: skip
        require_opt_in()
        return compute(predictions, references, k, num_workers, comparator, cache)
