"""Entry point ``ptfund-tutor``.

Only argparse and the standard library at import time: ``list`` must never pay for torch,
and the TUI must paint before torch is imported anywhere. Each subcommand lives in
``tutor.commands.<name>`` and is imported only when it runs.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Any, NoReturn

from tutor import __version__
from tutor.checks.vocabulary import DEVICES
from tutor.errors import TutorError

# subcommand path -> "module:function" in tutor.commands
HANDLERS = {
    ("open",): "tui:run",
    ("list",): "listing:run",
    ("check",): "check:run",
    ("grade",): "grade:run",
    ("quiz",): "quiz:run",
    ("progress",): "progress:run_show",
    ("progress", "export"): "progress:run_export",
    ("progress", "import"): "progress:run_import",
    ("progress", "set"): "progress:run_set",
    ("progress", "optimize"): "optimize:run",
    ("pack", "new"): "pack:run_new",
    ("pack", "validate"): "pack:run_validate",
    ("pack", "test"): "pack:run_test",
    ("pack", "schema"): "pack:run_schema",
    ("doctor",): "doctor:run",
    ("serve",): "serve:run",
}


def _global_options(parser: argparse.ArgumentParser, *, top: bool) -> None:
    # Subparsers use SUPPRESS defaults so an option given before the subcommand is not
    # overwritten by the subparser's default (argparse's usual pitfall).
    default = (lambda v: v) if top else (lambda v: argparse.SUPPRESS)
    parser.add_argument(
        "--pack",
        action="append",
        metavar="DIR",
        default=default([]),
        help="also load the instructor pack in DIR (repeatable)",
    )
    parser.add_argument(
        "--data-dir",
        metavar="DIR",
        default=default(None),
        help="where progress is kept (also $PTFUND_TUTOR_HOME; default: the platform's user data dir)",
    )
    parser.add_argument(
        "--device",
        choices=DEVICES,
        default=default(None),
        help="run learner code on this device (default: detected)",
    )
    parser.add_argument(
        "--kernel",
        metavar="CONNECTION_FILE",
        default=default(None),
        help="attach to an existing Jupyter kernel instead of starting one",
    )
    parser.add_argument(
        "--gateway",
        metavar="URL",
        default=default(None),
        help="start kernels on this Jupyter Kernel Gateway or Enterprise Gateway "
        "(also $PTFUND_TUTOR_GATEWAY; token from $PTFUND_TUTOR_GATEWAY_TOKEN)",
    )


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2 (docs/architecture.md: command line)
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="ptfund-tutor",
        description="A terminal tutor for PyTorch fundamentals: lessons, live exercises, recall quizzes.",
        epilog="With no command, opens the terminal app.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    _global_options(parser, top=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    def add(name: str, help: str, parent: Any = sub) -> argparse.ArgumentParser:
        p = parent.add_parser(name, help=help, description=help)
        _global_options(p, top=False)
        return p

    p = add("list", "list packs, lessons and exercises with their status")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = add("check", "run FILE as your solution of an exercise, then its checks (exit 0 pass, 1 fail)")
    p.add_argument(
        "target",
        metavar="LESSON/EXERCISE",
        help="exercise id, e.g. tensors/make-a-tensor (PACK:LESSON/EXERCISE when ids clash)",
    )
    p.add_argument("--file", required=True, metavar="FILE", help="the Python file with your code")
    p.add_argument("--json", action="store_true", help="print the verdict as JSON")
    p.add_argument(
        "--timeout", type=float, default=None, metavar="SECONDS", help="time limit (default: the exercise's)"
    )
    p.add_argument("--trust", action="store_true", help="trust the exercise's pack (its Python runs on this machine)")

    p = add(
        "grade",
        "verify every learner's files in fresh kernels and write a gradebook (see docs/grading.md)",
    )
    p.add_argument(
        "submissions",
        nargs="?",
        metavar="SUBMISSIONS",
        help="folder with one folder per learner (LESSON/EXERCISE.py files) or learners' progress exports (NAME.json)",
    )
    p.add_argument(
        "--jobs", type=int, default=None, metavar="N", help="verify N files at once (default: up to 4, one per core)"
    )
    p.add_argument("--out", metavar="CSV", help="write the gradebook as CSV to this file")
    p.add_argument("--json", action="store_true", help="print every verdict with its checks and messages as JSON")
    p.add_argument(
        "--lesson", action="append", metavar="LESSON", help="grade only this lesson's exercises (repeatable)"
    )
    p.add_argument(
        "--timeout", type=float, default=None, metavar="SECONDS", help="time limit per file (default: the exercise's)"
    )
    p.add_argument(
        "--gradescope",
        metavar="DIR",
        help="grade the one submission in DIR/submission and write DIR/results/results.json (DIR: usually /autograder)",
    )
    p.add_argument(
        "--no-cache", dest="cache", action="store_false", help="verify every file again, ignoring cached verdicts"
    )
    p.add_argument("--trust", action="store_true", help="trust the packs in use (their Python runs on this machine)")

    p = add("quiz", "answer due recall cards, line by line (works with piped stdin)")
    p.add_argument("--lesson", metavar="LESSON", help="only cards of this lesson")
    p.add_argument("--limit", type=int, metavar="N", help="at most N cards")

    p = add("progress", "show progress; export or import it")
    p.add_argument("--json", action="store_true", help="print JSON")
    psub = p.add_subparsers(dest="progress_command", metavar="ACTION", parser_class=_Parser)
    pe = add("export", "write all progress to FILE as versioned JSON (or, with --anki, an Anki deck)", psub)
    pe.add_argument("file", metavar="FILE")
    pe.add_argument(
        "--anki", action="store_true", help="write an Anki deck (.apkg) of every card of the loaded packs instead"
    )
    pe.add_argument("--reviews", action="store_true", help="with --anki: include your review history")
    pe.add_argument("--trust", action="store_true", help="with --anki: trust the packs whose predict cards run code")
    pi = add("import", "merge progress from FILE (idempotent; validated before writing)", psub)
    pi.add_argument("file", metavar="FILE")
    ps = add("set", "change a setting: desired_retention, new_cards_per_day or language", psub)
    ps.add_argument("name", metavar="NAME")
    ps.add_argument("value", metavar="VALUE", help="a number, or a language tag such as de ('' for each pack's own)")
    po = add("optimize", "fit the scheduler's FSRS parameters to your review log (runs in a kernel)", psub)
    po.add_argument("--dry-run", action="store_true", help="show the predicted change without keeping it")
    po.add_argument("--restore", action="store_true", help="go back to the parameters used before the last optimize")

    p = add("pack", "create, validate and test lesson packs")
    psub = p.add_subparsers(dest="pack_command", metavar="ACTION", parser_class=_Parser)
    pn = add("new", "scaffold a small working pack in DIR", psub)
    pn.add_argument("dir", metavar="DIR")
    pn.add_argument(
        "--package", action="store_true", help="make a Python project (pyproject.toml) that pip installs as a pack"
    )
    pv = add("validate", "report every problem in the pack in DIR as FILE:LINE:COL: field: message", psub)
    pv.add_argument("dir", metavar="DIR")
    pt = add("test", "prove every exercise and card of the pack in DIR with real torch", psub)
    pt.add_argument("dir", metavar="DIR")
    for sp in (pv, pt):
        sp.add_argument(
            "--no-cache",
            dest="cache",
            action="store_false",
            help="parse every lesson again, ignoring the lesson cache of unchanged lessons",
        )
    pt.add_argument("--lesson", metavar="LESSON", help="only this lesson")
    pt.add_argument(
        "--jobs", type=int, default=None, metavar="N", help="test N exercises at once (default: one per core)"
    )
    pt.add_argument("--json", action="store_true", help="print JSON")
    pt.add_argument("--trust", action="store_true", help="trust the pack (its Python runs on this machine)")
    add("schema", "print the JSON Schema of pack files (for editors)", psub)

    add("doctor", "versions, device, data dir and kernel start time")

    p = add("serve", "serve the app to web browsers (textual-serve; see docs/serve.md)")
    p.add_argument(
        "--host", default=None, help="address to listen on (default 127.0.0.1, or the JupyterHub service's address)"
    )
    p.add_argument(
        "--port", type=int, default=None, help="port to listen on (default 8000, or the JupyterHub service's port)"
    )
    p.add_argument(
        "--auth",
        choices=("token", "jupyterhub", "none"),
        default=None,
        help="who may connect: whoever has the token it prints (default), JupyterHub's signed-in users "
        "(run as a Hub service), or anyone (none: loopback addresses only)",
    )
    p.add_argument("--public-url", metavar="URL", default=None, help="the URL browsers reach it at (behind a proxy)")
    return parser


def _handler_key(args: argparse.Namespace) -> tuple[str, ...]:
    command = args.command or "open"
    if command == "progress" and getattr(args, "progress_command", None):
        return (command, args.progress_command)
    if command == "pack":
        if not getattr(args, "pack_command", None):
            raise TutorError("pack needs an action: new, validate, test or schema (see ptfund-tutor pack --help)")
        return (command, args.pack_command)
    return (command,)


def _use_gateway(args: argparse.Namespace) -> None:
    """Every kernel the command starts (the app's, check's, grade's) goes through the
    gateway: sessions read its URL from the environment."""
    if not (args.gateway or os.environ.get("PTFUND_TUTOR_GATEWAY")):
        return
    from tutor.engine.gateway import ENV_URL

    if args.gateway:
        os.environ[ENV_URL] = args.gateway
    url = os.environ[ENV_URL]
    if args.kernel:
        raise TutorError("--kernel and --gateway both say where kernels run: give one of them")
    if not url.startswith(("http://", "https://")):
        raise TutorError(f"the gateway URL {url!r} must start with http:// or https://")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        _use_gateway(args)
        key = _handler_key(args)
        module_name, func_name = HANDLERS[key].split(":")
        module = importlib.import_module(f"tutor.commands.{module_name}")
        return int(getattr(module, func_name)(args) or 0)
    except TutorError as exc:
        print(f"ptfund-tutor: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("ptfund-tutor: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # e.g. `ptfund-tutor list | head`: not an error worth a traceback.
        try:
            # Stays open for the rest of the process: whatever prints next goes nowhere.
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        except OSError:
            pass
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
