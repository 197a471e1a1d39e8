"""Reports and leaderboard runs over lm-eval output folders.

Modules, one concern each: `benchmarks` (per-benchmark facts, as data), `results` (reading
lm-eval output folders and logged samples), `table` (the leaderboard table and its normalised
average), `figures` (PNG charts), `markdown` (the written report), `report` (the command),
`leaderboard` (the resumable batch runner) and `demo` (the ChatGPT-programs cross-check).
"""
