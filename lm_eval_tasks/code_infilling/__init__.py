"""Sourcegraph multi-line infilling tasks: data, FIM prompts, stitching and grading glue."""
