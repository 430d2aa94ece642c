"""Runs several `ducklake` command lines in its own process, one after another on one Spark session (a cluster's
driver starts once, not once per command), as `main()` runs them for a user.

Input: a JSON list of argument lists as the only argument; output: one `{"code", "err"}` per command (stderr, or
with `--debug` the traceback that escaped `main`) as one JSON list on the last stdout line.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import traceback
from typing import Any


def main(argv: list[str]) -> int:
    """Run every command line; report each one's exit code and what it wrote to stderr."""
    from ducklake_cli.cli.app import main as ducklake

    results: list[dict[str, Any]] = []
    for args in json.loads(argv[0]):
        err = io.StringIO()
        code = 0
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                ducklake(args)
            except SystemExit as exc:
                code = int(exc.code or 0)
            except BaseException:  # what escapes `main` (`--debug`), printed as the interpreter would print it
                traceback.print_exc()
                code = 1
        results.append({"code": code, "err": err.getvalue()})
    sys.stdout.write("\n" + json.dumps(results) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
