"""``check LESSON/EXERCISE --file FILE [--json]``: exit 0 pass, 1 fail, 2 usage, unreadable
input or a broken exercise (an authoring error: the pack's fault, not the learner's)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING

from tutor.errors import TutorError
from tutor.escape import for_terminal

if TYPE_CHECKING:
    from tutor.grading.verdict import Verdict
    from tutor.packs.catalog import ExerciseRef
    from tutor.packs.loader import Pack


def run(args: argparse.Namespace) -> int:
    from tutor.grading.code_size import read_code_file

    code = read_code_file(args.file)
    warm = _warm_check(args, code)
    if warm is not None:
        return warm
    import asyncio  # here, not at the top: a warm check (above) never needs it

    from tutor.grading.verify import verify_in_fresh_kernel
    from tutor.packs import torchneed
    from tutor.packs.catalog import Catalog
    from tutor.progress.status import language_setting

    catalog = Catalog.load(args.pack, language=language_setting(args.data_dir))
    ref = catalog.find_exercise(args.target)
    torchneed.require(ref.lesson)
    require_trust(ref.pack, args)
    verdict = asyncio.run(
        verify_in_fresh_kernel(
            ref.exercise, code, device=args.device, connection_file=args.kernel, timeout=args.timeout
        )
    )
    _show(args, ref.key, ref.pack.id, verdict)
    _record(args, ref, code, verdict)
    return _exit_code(verdict)


def _warm_check(args: argparse.Namespace, code: str) -> int | None:
    """The verdict from the warm server (docs/warm-server.md); None where the check runs in
    this process instead: an attached or gateway kernel, no server, a pack still to trust."""
    from pathlib import Path

    from tutor.grading.warm.client import verdict_reply, verdict_request
    from tutor.paths import data_dir

    if args.kernel or args.gateway or os.environ.get("PTFUND_TUTOR_GATEWAY"):
        return None
    packs = [str(Path(d).expanduser().resolve()) for d in args.pack]
    message = verdict_request(args.target, code, packs=packs, device=args.device, timeout=args.timeout)
    reply = verdict_reply(data_dir(args.data_dir), {**message, "trust": args.trust, "record": True})
    if reply is None:
        return None
    exercise, pack, verdict, warning = reply
    _show(args, exercise, pack, verdict)
    if warning:
        print(warning, file=sys.stderr)
    return _exit_code(verdict)


def _show(args: argparse.Namespace, exercise: str, pack: str, verdict: Verdict) -> None:
    if args.json:
        print(json.dumps({"exercise": exercise, "pack": pack, **verdict.to_json()}, indent=2), flush=True)
    else:
        print(f"{exercise}: {for_terminal(verdict.feedback())}", flush=True)  # learner output: inert


def _exit_code(verdict: Verdict) -> int:
    if verdict.status == "authoring-error":
        return 2
    return 0 if verdict.passed else 1


def require_trust(pack: Pack, args: argparse.Namespace) -> None:
    """Pack code from outside the built-in set runs only once the learner trusts the pack (``check``, ``grade``, ``pack test``)."""
    from tutor.packs.trust import TrustStore, needs_trust
    from tutor.paths import data_dir

    if not needs_trust(pack):
        return
    store = TrustStore(data_dir(args.data_dir))
    if store.is_trusted(pack):
        return
    if args.trust or _ask_trust(pack):
        store.trust(pack)
        return
    raise TutorError(
        f"pack {pack.id} ({pack.source}) contains Python that would run on this machine; "
        "if you trust its author, run again with --trust"
    )


def _ask_trust(pack: Pack) -> bool:
    """On a terminal the learner answers; with no terminal (CI, a pipe) nothing is assumed."""
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        return False
    print(
        f"Pack {pack.id} ({pack.source}) contains Python that will run on this machine.\n"
        "Trust it only if you trust where it came from. Trust it? [y/N] ",
        end="",
        file=sys.stderr,
        flush=True,
    )
    try:
        answer = sys.stdin.readline()
    except (OSError, KeyboardInterrupt):
        return False
    return answer.strip().lower() in ("y", "yes")


def _record(args: argparse.Namespace, ref: ExerciseRef, code: str, verdict: Verdict) -> None:
    """Attempts from the CLI count as progress too; a store problem must not hide the verdict,
    and must not pass silently either: one line on stderr says the attempt was not saved."""
    from tutor.grading.attempts import record_attempt
    from tutor.paths import data_dir

    warning = record_attempt(data_dir(args.data_dir), ref, code, verdict)
    if warning:
        print(warning, file=sys.stderr)
