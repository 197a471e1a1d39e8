"""Version of the judging semantics: bump it whenever a change could alter a verdict, so that
cached results from an older engine are never served."""

ENGINE_VERSION = "2"
