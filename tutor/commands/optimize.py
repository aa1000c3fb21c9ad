"""``progress optimize [--dry-run | --restore]``: FSRS parameters fitted to the learner's reviews.

fsrs's optimizer needs torch, so it runs in a kernel (tutor/progress/scheduling.py writes
the cell); this process only sends the review log and reads back the parameters. The
parameters in use before are kept (``fsrs_parameters_previous``) so ``--restore`` can go back.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from tutor.errors import TutorError

# Fitting many reviews takes a while on a small machine.
OPTIMIZE_TIMEOUT_S = 600.0


def run(args: argparse.Namespace) -> int:
    from tutor.progress import ProgressStore
    from tutor.progress.scheduling import next_interval_days

    if args.restore and args.dry_run:
        raise TutorError("--restore and --dry-run cannot be combined")
    with ProgressStore.open(args.data_dir) as store:
        if store.notice:
            print(f"ptfund-tutor: {store.notice}", file=sys.stderr)
        settings = store.settings()
        if args.restore:
            previous = settings.fsrs_parameters_previous
            if previous is None and settings.fsrs_parameters is None:
                print("The scheduler already uses fsrs's default parameters: nothing to restore.")
                return 0
            store.update_settings(fsrs_parameters=previous, fsrs_parameters_previous=settings.fsrs_parameters)
            what = "fsrs's default parameters" if previous is None else "the parameters it used before"
            print(f"Restored {what}; `progress optimize --restore` again undoes this.")
            return 0
        reviews = [(r.pack, r.item, r.rating, r.at) for r in store.reviews()]
        if not reviews:
            raise TutorError("there are no reviews yet to fit the scheduler to: answer some cards first")
        result = asyncio.run(_fit(reviews, settings.fsrs_parameters, args))
        new = tuple(float(x) for x in result["parameters"])
        retention = settings.desired_retention
        before = next_interval_days(settings.fsrs_parameters, retention)
        after = next_interval_days(new, retention)
        print(f"Fitted to {len(reviews)} review{'s' * (len(reviews) != 1)}.")
        if result.get("loss_before") is not None and result.get("loss_after") is not None:
            print(
                f"Prediction error on your reviews (log loss, lower is better): "
                f"{result['loss_before']:.4f} now, {result['loss_after']:.4f} with the new parameters."
            )
        else:
            print("Too few reviews on later days to measure how well either set predicts them.")
        print(f"A new card answered right three times is next due in {after:.1f} days (now {before:.1f} days).")
        if args.dry_run:
            print("Dry run: nothing changed.")
            return 0
        store.update_settings(fsrs_parameters=new, fsrs_parameters_previous=settings.fsrs_parameters)
    print("The new parameters schedule your next reviews; `progress optimize --restore` goes back.")
    return 0


async def _fit(reviews: list, current: tuple[float, ...] | None, args: argparse.Namespace) -> dict:
    from fsrs.scheduler import DEFAULT_PARAMETERS

    from tutor.engine import KernelSession
    from tutor.progress.scheduling import optimizer_cell, optimizer_result

    session = KernelSession(device="cpu", connection_file=args.kernel)
    try:
        await session.start()
        run = await session.execute(
            optimizer_cell(reviews, current or tuple(DEFAULT_PARAMETERS)), timeout=OPTIMIZE_TIMEOUT_S
        )
    except Exception as exc:
        raise TutorError(f"cannot start a kernel to run fsrs's optimizer: {exc}") from None
    finally:
        try:
            await session.shutdown()
        except Exception:
            pass
    result = optimizer_result(run.output)
    if result is None:
        why = run.message or (f"{run.error.ename}: {run.error.evalue}" if run.error else "it printed no result")
        raise TutorError(f"fsrs's optimizer did not finish in the kernel: {why}")
    return result
