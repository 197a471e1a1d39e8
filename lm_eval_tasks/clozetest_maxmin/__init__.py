"""CodeXGLUE ClozeTest-maxmin as lm-eval tasks (see README.md in this folder)."""
