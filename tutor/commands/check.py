"""``check LESSON/EXERCISE --file FILE [--json]``: exit 0 pass, 1 fail, 2 usage, unreadable
input or a broken exercise (an authoring error: the pack's fault, not the learner's)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import TYPE_CHECKING

from tutor.errors import TutorError

if TYPE_CHECKING:
    from tutor.grading.verdict import Verdict
    from tutor.packs.catalog import ExerciseRef
    from tutor.packs.loader import Pack


def run(args: argparse.Namespace) -> int:
    from tutor.grading.code_size import read_code_file
    from tutor.grading.verify import verify_in_fresh_kernel
    from tutor.packs.catalog import Catalog

    code = read_code_file(args.file)
    from tutor.progress.status import language_setting

    catalog = Catalog.load(args.pack, language=language_setting(args.data_dir))
    ref = catalog.find_exercise(args.target)
    require_trust(ref.pack, args)
    verdict = asyncio.run(
        verify_in_fresh_kernel(
            ref.exercise, code, device=args.device, connection_file=args.kernel, timeout=args.timeout
        )
    )
    if args.json:
        print(json.dumps({"exercise": ref.key, "pack": ref.pack.id, **verdict.to_json()}, indent=2), flush=True)
    else:
        print(f"{ref.key}: {verdict.feedback()}", flush=True)
    _record(args, ref, code, verdict)
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
    try:
        from tutor.paths import data_dir
        from tutor.progress.store import ProgressStore

        store = ProgressStore.open(data_dir(args.data_dir))
        try:
            store.record_attempt(ref.pack.id, ref.key, passed=verdict.passed, code=code, content_hash=ref.content_hash)
        finally:
            store.close()
    except Exception as exc:  # a full disk, a read-only or odd data dir, a newer database: all the same to the learner
        reason = (exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)) or type(exc).__name__
        reason = " ".join(reason.split())
        print(f"ptfund-tutor: warning: this attempt was not saved ({reason}); the verdict stands", file=sys.stderr)
