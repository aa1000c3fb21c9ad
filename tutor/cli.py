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
from pathlib import Path
from typing import Any, NoReturn

from tutor import __version__
from tutor.checks.vocabulary import DEVICES
from tutor.errors import TutorError
from tutor.paths import ENV_HOME

# subcommand path -> "module:function" in tutor.commands
HANDLERS = {
    ("open",): "tui:run",
    ("list",): "listing:run",
    ("check",): "check:run",
    ("watch",): "watch:run",
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
    ("show",): "show:run",
    ("docs",): "docs:run",
    ("completion",): "completion:run",
    ("serve",): "serve:run",
}

COMPLETION_SHELLS = ("bash", "zsh", "fish")
# An exercise of the built-in pack (tests/test_cli.py keeps it real).
EXAMPLE_EXERCISE = "tensors/features-and-labels"
GLOBAL_OPTIONS_NOTE = "--pack, --data-dir, --device, --kernel and --gateway work here too (see ptfund-tutor --help)."


def _global_options(parser: argparse.ArgumentParser, *, top: bool) -> None:
    # Subparsers use SUPPRESS defaults so an option given before the subcommand is not
    # overwritten by the subparser's default (argparse's usual pitfall). They accept the
    # global options but leave them out of their help: `ptfund-tutor --help` lists them once.
    default = (lambda v: v) if top else (lambda v: argparse.SUPPRESS)
    shown = (lambda h: h) if top else (lambda h: argparse.SUPPRESS)
    parser.add_argument(
        "--pack",
        action="append",
        metavar="DIR",
        default=default([]),
        help=shown("also load the instructor pack in DIR (repeatable)"),
    )
    parser.add_argument(
        "--data-dir",
        metavar="DIR",
        default=default(None),
        help=shown("where progress is kept (also $PTFUND_TUTOR_HOME; default: the platform's user data dir)"),
    )
    parser.add_argument(
        "--device",
        choices=DEVICES,
        default=default(None),
        help=shown("run learner code on this device (default: detected)"),
    )
    parser.add_argument(
        "--kernel",
        metavar="CONNECTION_FILE",
        default=default(None),
        help=shown("attach to an existing Jupyter kernel instead of starting one"),
    )
    parser.add_argument(
        "--gateway",
        metavar="URL",
        default=default(None),
        help=shown(
            "start kernels on this Jupyter Kernel Gateway or Enterprise Gateway "
            "(also $PTFUND_TUTOR_GATEWAY; token from $PTFUND_TUTOR_GATEWAY_TOKEN)"
        ),
    )


def _at_least_one(text: str) -> int:
    """--jobs and --limit: checked by argparse, so a bad value is answered before anything loads."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"needs a whole number of at least 1, not {text!r}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"needs a number of seconds above 0, not {text!r}")
    return value


def _exercise_id(text: str) -> str:
    rest = text.rpartition(":")[2]
    lesson, sep, exercise = rest.partition("/")
    if not (sep and lesson and exercise):
        raise argparse.ArgumentTypeError(f"{text!r} is not an exercise id: write LESSON/EXERCISE")
    return text


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2 (docs/architecture.md: command line)
        option, sep, rest = message.partition(": needs ")
        if sep and option.startswith("argument "):  # "--jobs needs ...", not "argument --jobs: needs ..."
            message = f"{option.removeprefix('argument ')} needs {rest}"
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
        p = parent.add_parser(name, help=help, description=help, epilog=GLOBAL_OPTIONS_NOTE)
        p.set_defaults(command_parser=p)  # so _check_arguments can answer as this subcommand
        _global_options(p, top=False)
        return p

    p = add("list", "list packs, lessons and exercises with their status")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = add("check", "run FILE as your solution of an exercise, then its checks (exit 0 pass, 1 fail)")
    p.add_argument(
        "target",
        metavar="LESSON/EXERCISE",
        type=_exercise_id,
        help=f"exercise id, e.g. {EXAMPLE_EXERCISE} (PACK:LESSON/EXERCISE when ids clash)",
    )
    p.add_argument("--file", required=True, metavar="FILE", help="the Python file with your code")
    p.add_argument("--json", action="store_true", help="print the verdict as JSON")
    p.add_argument(
        "--timeout", type=_seconds, default=None, metavar="SECONDS", help="time limit (default: the exercise's)"
    )
    p.add_argument("--trust", action="store_true", help="trust the exercise's pack (its Python runs on this machine)")

    p = add("watch", "exercise files in DIR, checked each time you save one; a pass moves on to the next")
    p.add_argument(
        "dir", nargs="?", default="ptfund-exercises", metavar="DIR", help="the folder (default: ./ptfund-exercises)"
    )
    p.add_argument("--lesson", metavar="LESSON", help="only this lesson's exercises")
    p.add_argument(
        "--poll", action="store_true", help="poll for changes (automatic on NFS and other network file systems)"
    )
    p.add_argument("--trust", action="store_true", help="trust the packs in use (their Python runs on this machine)")

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
        "--jobs",
        type=_at_least_one,
        default=None,
        metavar="N",
        help="verify N files at once (default: up to 4, one per core)",
    )
    p.add_argument("--out", metavar="CSV", help="write the gradebook as CSV to this file")
    p.add_argument("--json", action="store_true", help="print every verdict with its checks and messages as JSON")
    p.add_argument(
        "--report",
        metavar="DIR",
        help="also write the class report (pass rates, mistakes ranked, time and attempts) "
        "as DIR/report.md, report.html and report.json",
    )
    p.add_argument(
        "--lesson", action="append", metavar="LESSON", help="grade only this lesson's exercises (repeatable)"
    )
    p.add_argument(
        "--timeout",
        type=_seconds,
        default=None,
        metavar="SECONDS",
        help="time limit per file (default: the exercise's)",
    )
    p.add_argument(
        "--gradescope",
        metavar="DIR",
        help="grade the one submission in DIR/submission and write DIR/results/results.json (DIR: usually /autograder)",
    )
    p.add_argument(
        "--no-cache", dest="cache", action="store_false", help="verify every file again, ignoring cached verdicts"
    )
    p.add_argument(
        "--hidden-checks",
        choices=("marked", "all"),
        default="marked",
        help="the hidden checks, which the learners' results count without describing: marked, those the pack "
        "hides (default); all, every check not marked hidden: false",
    )
    p.add_argument(
        "--reveal", action="store_true", help="describe hidden checks in full (after the deadline); see docs/grading.md"
    )
    p.add_argument("--trust", action="store_true", help="trust the packs in use (their Python runs on this machine)")

    p = add("quiz", "answer due recall cards, line by line (works with piped stdin)")
    p.add_argument("--lesson", metavar="LESSON", help="only cards of this lesson")
    p.add_argument("--limit", type=_at_least_one, metavar="N", help="at most N cards")

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
        "--jobs", type=_at_least_one, default=None, metavar="N", help="test N exercises at once (default: one per core)"
    )
    pt.add_argument("--json", action="store_true", help="print JSON")
    pt.add_argument(
        "--mutants",
        choices=("off", "summary", "all"),
        default="summary",
        help="run mutants of every reference solution, which the checks must fail: off; summary (the default: "
        "counts per exercise and each survivor, a weak check, which makes the run fail); all (every mutant)",
    )
    pt.add_argument("--trust", action="store_true", help="trust the pack (its Python runs on this machine)")
    add("schema", "print the JSON Schema of pack files (for editors)", psub)

    add("doctor", "versions, device, data dir and kernel start time")

    p = add("show", "print a lesson's intuition, or an exercise's prompt, as plain text (for screen readers and pipes)")
    p.add_argument(
        "target", metavar="LESSON[/EXERCISE]", help=f"a lesson id, or an exercise id such as {EXAMPLE_EXERCISE}"
    )

    p = add("docs", "print the documentation that ships with ptfund-tutor (with no TOPIC: the list of topics)")
    p.add_argument("topic", nargs="?", metavar="TOPIC", help="a topic from the list, e.g. grading")

    p = add("completion", "print a shell completion script (see README: Shell completion)")
    p.add_argument("shell", choices=COMPLETION_SHELLS, metavar="SHELL", help="bash, zsh or fish")
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


def _check_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """What argparse cannot say alone, still answered before any command module is imported."""
    parser = getattr(args, "command_parser", parser)
    if args.command == "grade":
        if args.kernel:
            parser.error(
                "grade gives every file a fresh kernel, so it cannot use one --kernel; "
                "use --gateway URL to run its kernels elsewhere"
            )
        if not args.submissions and not args.gradescope:
            parser.error("grade needs SUBMISSIONS (a folder of learner folders) or --gradescope DIR")
        if args.submissions and args.gradescope:
            parser.error("grade takes SUBMISSIONS or --gradescope DIR, not both")
        if args.report and args.gradescope:
            parser.error("--report is for a class (SUBMISSIONS); --gradescope grades one submission")
    if args.kernel and (args.gateway or os.environ.get("PTFUND_TUTOR_GATEWAY")):
        parser.error("--kernel and --gateway both say where kernels run: give one of them")
    for pack in args.pack:
        if not os.path.isdir(os.path.expanduser(pack)):
            what = "not a folder" if os.path.exists(os.path.expanduser(pack)) else "no such folder"
            parser.error(f"--pack {pack}: {what} (a pack is a folder with pack.yaml)")


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
    if not url.startswith(("http://", "https://")):
        raise TutorError(f"the gateway URL {url!r} must start with http:// or https://")


# Global and check options that take a value: the early scan below must skip their values.
_VALUED = frozenset({"--pack", "--data-dir", "--device", "--kernel", "--gateway", "--file", "--timeout"})


def _start_warm_server_early(argv: list[str]) -> None:
    """For a cold ``check``: start the warm server before the parser is even built.

    Its fork server imports torch, which takes seconds, and the learner waits for exactly
    that; the CLI's own imports and parsing come after, in parallel. Only for a check that
    will ask the server (not one on an attached kernel or a gateway) and whose file exists:
    a mistyped command starts nothing."""
    words, values, it = [], {}, iter(argv)
    for word in it:
        if word in ("-h", "--help", "--version"):
            return
        name, eq, value = word.partition("=")
        if name in _VALUED:
            values[name] = value if eq else next(it, "")
        elif not word.startswith("-"):
            words.append(word)
    if words[:1] != ["check"] or values.get("--kernel") or values.get("--gateway"):
        return
    if os.environ.get("PTFUND_TUTOR_GATEWAY") or not os.path.isfile(values.get("--file") or ""):
        return
    from tutor.grading.warm.client import start_early
    from tutor.paths import data_dir

    try:
        start_early(data_dir(values.get("--data-dir")))
    except Exception:  # only a head start: the request starts the server as it always did
        pass


def main(argv: list[str] | None = None) -> int:
    _start_warm_server_early(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if "_ARGCOMPLETE" in os.environ:  # the shell asks for completions (tutor/commands/completion.py)
        import argcomplete

        argcomplete.autocomplete(parser)
    args = parser.parse_args(argv)
    _check_arguments(parser, args)
    if args.data_dir:
        # --data-dir is $PTFUND_TUTOR_HOME for this run: the caches under it follow too.
        os.environ[ENV_HOME] = str(Path(args.data_dir).expanduser().resolve())
    try:
        _use_gateway(args)
        key = _handler_key(args)
        module_name, func_name = HANDLERS[key].split(":")
        module = importlib.import_module(f"tutor.commands.{module_name}")
        return int(getattr(module, func_name)(args) or 0)
    except TutorError as exc:
        from tutor.escape import for_terminal

        print(f"ptfund-tutor: {for_terminal(str(exc))}", file=sys.stderr)
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
