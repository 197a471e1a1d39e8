"""The Ruby zygote (`ruby_zygote.c`): built once per source and interpreter into the cache,
linked with the very libruby the interpreter loads and compiled against the headers of the same
Ruby (package ruby-dev), so that it is the interpreter the cold command runs with one seam added
(the script's first open, zygote_seam.h).

The binary lives alone in a folder named by its content hash, which a sandbox shows as a
`SharedFolder`; the sandbox init executes it with the cold command's argv (see launcher.c, frame
words Z and W, the contract in zygote.c and the differences in ruby_zygote.c).
"""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

from ..startup import RUBY_SEAM
from .seam import build_seam_zygote, seam_library

ZYGOTE_SOURCE = Path(__file__).with_name("ruby_zygote.c")
#: what Ruby's own main calls (main.c: the locale, then the interpreter's four steps), which the
#: zygote calls too
ENTRIES = {
    "setlocale",
    "ruby_sysinit",
    "ruby_init_stack",
    "ruby_init",
    "ruby_options",
    "ruby_run_node",
    "__stack_chk_fail",
}
#: what the interpreter says of its own build (read with the interpreter itself, no RubyGems)
_RBCONFIG = (
    'require "json"; require "rbconfig"; c = RbConfig::CONFIG; puts JSON.dump(%w[RUBY_PROGRAM_VERSION ruby_version '
    'rubyhdrdir rubyarchhdrdir].to_h { |k| [k, c[k].to_s] }.merge("description" => RUBY_DESCRIPTION))'
)

_lock = threading.Lock()
_built: dict[str, tuple[Path | None, str]] = {}


def zygote_binary(interpreter: str) -> tuple[Path | None, str]:
    """The zygote of the Ruby at `interpreter` (an absolute path), built once and cached:
    (path, "") or (None, why it cannot be had here, e.g. no headers of that Ruby)."""
    with _lock:
        if interpreter not in _built:
            _built[interpreter] = _build(interpreter)
        return _built[interpreter]


def _header_version(archhdr: str, hdr: str) -> str:
    """RUBY_API_VERSION of the headers (ruby/version.h), as `RbConfig`'s ruby_version spells it."""
    found: dict[str, str] = {}
    for folder in (archhdr, hdr):
        path = Path(folder, "ruby", "version.h")
        if path.is_file():
            for line in path.read_text(errors="replace").splitlines():
                parts = line.split()
                if len(parts) == 3 and parts[0] == "#define" and parts[1].startswith("RUBY_API_"):
                    found[parts[1]] = parts[2]
    keys = ("RUBY_API_VERSION_MAJOR", "RUBY_API_VERSION_MINOR", "RUBY_API_VERSION_TEENY")
    return ".".join(found.get(k, "?") for k in keys)


def _build(interpreter: str) -> tuple[Path | None, str]:
    library, why = seam_library(interpreter, ENTRIES, "libruby")
    if library is None:
        return None, why
    try:
        proc = subprocess.run(
            [interpreter, "--disable-gems", "-e", _RBCONFIG],
            capture_output=True,
            text=True,
            timeout=60,
        )
        conf = json.loads(proc.stdout)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        return None, f"{interpreter} did not describe its build: {exc}"
    hdr, archhdr = conf["rubyhdrdir"], conf["rubyarchhdrdir"]
    if not Path(hdr, "ruby.h").is_file() or not Path(archhdr, "ruby", "config.h").is_file():
        return None, f"no headers of {interpreter} in {hdr} (package ruby-dev)"
    if _header_version(archhdr, hdr) != conf["ruby_version"]:
        return None, f"headers in {hdr} are not those of {interpreter} {conf['ruby_version']}"
    # the variable the prelude's last statement looks up: one name for both (startup.py)
    flags = [f"-I{archhdr}", f"-I{hdr}", f'-DSEAM_VARIABLE="{RUBY_SEAM}"']
    return build_seam_zygote(
        "ruby", ZYGOTE_SOURCE, interpreter, library, conf["description"], flags
    )
