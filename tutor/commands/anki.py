"""``progress export --anki FILE.apkg``: every card of the loaded packs as an Anki deck.

A predict card's answer is what its code prints now, so the keys are computed in a kernel
(this process never imports torch), one fresh namespace per card as in the quiz; a pack
from outside the built-in set runs its code only once trusted (``--trust`` or a yes).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tutor.errors import TutorError

if TYPE_CHECKING:
    from tutor.packs.catalog import CardRef


def run_export_anki(args: argparse.Namespace) -> int:
    from tutor.commands.check import require_trust
    from tutor.grading.anki import write_deck
    from tutor.packs.catalog import Catalog
    from tutor.progress import ProgressStore

    if args.file == "-":
        raise TutorError("an Anki deck is a file: give a FILE.apkg, not -")
    target = Path(args.file).expanduser()
    with ProgressStore.open(args.data_dir) as store:
        if store.notice:
            print(f"ptfund-tutor: {store.notice}", file=sys.stderr)
        catalog = Catalog.load(args.pack, language=store.settings().language or None)
        reviews = store.reviews() if args.reviews else []
    for problem in catalog.problems:
        print(f"ptfund-tutor: {problem}", file=sys.stderr)
    refs = list(catalog.cards())
    if not refs:
        raise TutorError("the loaded packs have no cards to export")
    predict = [r for r in refs if r.card.type == "predict"]
    for pack in {id(r.pack): r.pack for r in predict}.values():
        require_trust(pack, args)
    keys = asyncio.run(predict_keys(predict, device=args.device, connection_file=args.kernel)) if predict else {}
    try:
        summary = write_deck(target, refs, keys, reviews)
    except OSError as exc:
        raise TutorError(f"cannot write {target}: {exc.strerror or exc}") from None
    history = f" and {summary.reviews} review{'s' * (summary.reviews != 1)}" if args.reviews else ""
    print(
        f"Exported {summary.notes} card{'s' * (summary.notes != 1)} in {summary.decks} "
        f"deck{'s' * (summary.decks != 1)}{history} to {target}. Importing it again into Anki updates these notes."
    )
    return 0


async def predict_keys(refs: list[CardRef], *, device: str | None, connection_file: str | None) -> dict[str, str]:
    """qualified card id -> the key the card's code produced in a kernel. A card whose code
    did not finish keeps its stored key, and the learner is told."""
    from tutor.engine import KernelPool, KernelSession
    from tutor.grading.review import PredictKernels

    keys: dict[str, str] = {}
    # Each card in a fresh kernel, as a quiz runs it (tutor.grading.review).
    attached = KernelSession(device=device, connection_file=connection_file) if connection_file else None
    try:
        if attached is not None:
            await attached.start()
            kernels = PredictKernels(attached=attached)
        else:
            kernels = PredictKernels(KernelPool(device=device, size=1))
        try:
            for ref in refs:
                assert ref.card.type == "predict"  # only predict cards come here
                outcome = await kernels.predict(ref.card.code)
                if outcome.ok:
                    keys[ref.qualified] = outcome.key
                else:
                    print(
                        f"ptfund-tutor: {ref.qualified}: {outcome.problem} (its stored answer is exported)",
                        file=sys.stderr,
                    )
        finally:
            await kernels.shutdown()
    except Exception as exc:  # no kernel: one sentence, nothing written
        raise TutorError(f"cannot run the predict cards' code in a kernel: {exc}") from None
    finally:
        if attached is not None:
            try:
                await attached.shutdown()
            except Exception:
                pass
    return keys
