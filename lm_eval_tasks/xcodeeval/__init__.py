"""xCodeEval as lm-eval tasks: its task kinds and sampling protocols (`kinds`), raw files and joins
(`data`), lm-eval documents (`documents`), judging choices (`judging`), pass@k tables (`metrics`),
answer parsing (`parsing`), lm-eval hooks (`hooks`) and the scoring CLI (`score`). What every
benchmark shares lives in `utils`."""
