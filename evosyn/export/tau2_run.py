"""τ²-bench's own CLI over an exported task set: ``python -m evosyn.export.tau2_run DIR ARGS``.

τ²-bench's ``tau2`` command offers only the task sets in its registry, which it fills at
import. This launcher registers the set exported to ``DIR`` (``evosyn export tau2``) and then
hands ``ARGS`` to ``tau2.cli.main`` unchanged, except that ``run`` gets ``--domain`` and
``--task-set-name`` from the export when they are not given.
"""

from __future__ import annotations

import sys
from pathlib import Path

from evosyn.export.tau2 import Tau2ExportError, register_task_set


def tau2_argv(folder: Path, args: list[str]) -> list[str]:
    """Register the set in ``folder``; the argv (without the program) for τ²-bench's CLI."""
    manifest = register_task_set(folder)
    if args[:1] != ["run"]:
        return args
    extra = []
    if not any(a == "--domain" or a.startswith("--domain=") for a in args):
        extra += ["--domain", manifest.domain]
    if not any(a == "--task-set-name" or a.startswith("--task-set-name=") for a in args):
        extra += ["--task-set-name", manifest.name]
    return [*args, *extra]


def main(argv: list[str] | None = None) -> None:
    """Run τ²-bench's CLI with the exported task set registered."""
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        print(__doc__)
        raise SystemExit(0 if args else 2)
    try:
        rest = tau2_argv(Path(args[0]), args[1:])
    except Tau2ExportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    from tau2.cli import main as tau2_main

    sys.argv = ["tau2", *rest]
    tau2_main()


if __name__ == "__main__":
    main()
