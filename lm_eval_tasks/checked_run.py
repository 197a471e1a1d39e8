"""`code-eval run`: lm-eval's own `run` command, with every selected task built before the model.

lm-eval 0.4.13 constructs the model first and builds the tasks afterwards, and its task index
reads the YAML without running any of a task pack's code. A mistake in a task's data or settings
(ClozeTest answers that are missing, an unknown `--metadata` key, a data folder that does not
exist) therefore surfaces only after a large model has loaded onto the GPUs. This command parses
the arguments with lm-eval's own parser, builds the selected tasks exactly as lm-eval's `run`
would (same task manager, same metadata), and stops with one line and exit status 2 on the first
error; only then does it hand the same arguments to lm-eval's `run`, which builds the tasks again
(their inputs are local files or already in the datasets cache) and the model.

`--include_path` defaults to this pack's task folder.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

from lm_eval_tasks import PATH

PROG = "code-eval run"


def _with_include_path(argv: list[str]) -> list[str]:
    given = any(a == "--include_path" or a.startswith("--include_path=") for a in argv)
    return argv if given else [*argv, "--include_path", str(PATH)]


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["run"]:
        args = args[1:]
    if not args or args[0] in ("-h", "--help"):
        print(
            f"usage: {PROG} [lm_eval run arguments...]\n\n"
            "Runs `lm_eval run` with the same arguments after building every selected task,\n"
            "so a data or settings error stops the run before the model loads.\n"
            f"--include_path defaults to {PATH}. lm-eval's options: `lm_eval run --help`.",
            file=sys.stdout if args else sys.stderr,
        )
        raise SystemExit(0 if args else 2)  # as argparse does for --help

    from lm_eval._cli.harness import HarnessCLI
    from lm_eval.config.evaluate_config import EvaluatorConfig
    from lm_eval.utils import setup_logging

    setup_logging()
    saved = sys.argv
    sys.argv = ["lm-eval", "run", *_with_include_path(args)]
    try:
        parser = HarnessCLI()
        namespace = parser.parse_args()
        try:
            config = EvaluatorConfig.from_cli(namespace)
            manager = config.process_tasks(config.metadata)
            loaded = manager.load(config.tasks)
        except Exception as error:
            message = " ".join(str(error).split()) or type(error).__name__
            print(f"{PROG}: the tasks did not build, the model was not loaded: {message}",
                  file=sys.stderr)  # fmt: skip
            return 2
        logging.getLogger(__name__).info(
            "%s: %d task(s) built; starting lm-eval", PROG, len(loaded["tasks"])
        )
        parser.execute(namespace)
    finally:
        sys.argv = saved
    return 0
