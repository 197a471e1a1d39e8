"""xCodeEval as lm-eval tasks: documents (`docs`), answer parsing (`parsing`), lm-eval hooks
(`hooks`). Data access, execution and metric arithmetic live in `utils.xcodeeval_*`."""
