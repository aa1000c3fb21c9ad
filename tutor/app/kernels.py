"""The app's kernels: the live one (the learner's persistent namespace) and the warm spares
that each verification and predict card gets fresh.

The engine (jupyter_client, zmq) is imported in a thread so the UI keeps drawing while it
loads; everything after that is async on the app's event loop. No textual here: the app
hears about state through ``on_status``.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from tutor.app.status import KernelStatus
from tutor.engine.events import RunResult, StateEvent
from tutor.grading.verdict import Verdict

if TYPE_CHECKING:
    from tutor.engine.pool import KernelPool
    from tutor.engine.run import OutputCallback
    from tutor.engine.session import KernelSession
    from tutor.grading.predict import PredictOutcome
    from tutor.grading.review import PredictKernels
    from tutor.grading.verify import Verifier
    from tutor.packs import models as m

SETUP_TIMEOUT = 60.0
# How often an idle live kernel is asked whether it still lives (a process poll, or one
# control message for an attached kernel), so a kill from outside shows in the header.
WATCH_INTERVAL = 2.0


class KernelUnavailable(Exception):
    """No kernel could be had for a check: not the learner's attempt, so nothing is recorded."""


class Kernels:
    def __init__(self, device: str | None, connection_file: str | None, on_status: Callable[[KernelStatus], None]):
        self.device = device
        self.connection_file = connection_file
        self.on_status = on_status
        self.generation = 0  # bumps whenever the live namespace is new (start, restart, crash)
        self.error: str | None = None  # why the live kernel could not start
        self._live: KernelSession | None = None
        self._pool: KernelPool | None = None
        self._verifier: Verifier | None = None
        self._predict: PredictKernels | None = None  # where predict cards run
        self._started = asyncio.Event()
        self._runs = 0
        self._restarted = False
        self._status = KernelStatus("starting")
        self._watch: asyncio.Task | None = None

    # ------------------------------------------------------------ life

    async def start(self) -> None:
        self._publish(KernelStatus("starting"))
        try:
            await asyncio.to_thread(_import_engine)
            from tutor.engine import KernelPool, KernelSession
            from tutor.engine.confine import TREE_ONLY
            from tutor.grading.review import PredictKernels
            from tutor.grading.verify import KERNELS_PER_VERIFICATION, Verifier

            # The live pane keeps the learner's files and variables: only its processes
            # are bound to it (they end with it); checks get fully confined fresh kernels.
            live = self._live = KernelSession(
                device=self.device, connection_file=self.connection_file, confinement=TREE_ONLY
            )
            live.on_state = self._on_state
            if self.connection_file is None:
                # Spares for one check: the learner's kernel and the judge's, both warm.
                self._pool = KernelPool(device=self.device, size=KERNELS_PER_VERIFICATION)
                self._verifier = Verifier(self._pool, device=self.device)
                self._predict = PredictKernels(self._pool)
            else:
                # An attached kernel cannot be multiplied: checks use fresh namespaces in it.
                self._verifier = Verifier(attached=live, device=self.device)
                self._predict = PredictKernels(attached=live)
        except Exception as exc:
            self._fail(f"The kernel cannot start: {exc}")
            return
        finally:
            self._started.set()
        try:
            await live.start()
        except Exception as exc:
            self._fail(str(exc))
            return
        self.generation += 1
        self._publish(KernelStatus("ready", self._device_label()))
        self._watch = asyncio.ensure_future(self._watch_live(live))
        if self._pool is not None:
            # After the live kernel, not beside it: on two cores, both at once slow the first.
            await self._pool.start()

    async def _watch_live(self, live: KernelSession) -> None:
        while True:
            await asyncio.sleep(WATCH_INTERVAL)
            try:
                await live.notice_death()
            except Exception:  # the watch only informs: the next run finds out anyway
                pass

    async def shutdown(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
        tasks = [k.shutdown() for k in (self._live, self._pool) if k is not None]
        await asyncio.gather(*tasks, return_exceptions=True)

    def _fail(self, message: str) -> None:
        self.error = message
        self._publish(KernelStatus("dead", None, message))

    # ------------------------------------------------------------ state

    @property
    def busy(self) -> bool:
        return self._runs > 0

    def _device_label(self) -> str | None:
        info = self._live.device_info if self._live is not None else None
        return info.label() if info else None

    def _publish(self, status: KernelStatus) -> None:
        self._status = status
        self.on_status(status)

    def _on_state(self, event: StateEvent) -> None:
        state: str = event.state
        message = event.message
        if state == "restarting":
            self._restarted = True
        if state == "ready" and self._restarted:
            self._restarted = False
            self.generation += 1
            state = "restarted"
        self._publish(
            KernelStatus(
                state, self._device_label(), message or (self._status.message if state == "restarted" else None)
            )
        )

    async def _ready(self) -> KernelSession:
        await self._started.wait()
        if self._live is None:
            raise RuntimeError(self.error or "The kernel is not available.")
        return self._live

    # ------------------------------------------------------------ running code

    async def run(self, code: str, on_event: OutputCallback | None) -> RunResult:
        """Run in the live kernel, streaming events; a RunResult whatever happens."""
        self._runs += 1
        try:
            live = await self._ready()
            return await live.execute(code, on_output=on_event)
        except Exception as exc:  # the kernel could not start or come back
            return RunResult("crashed", message=str(exc))
        finally:
            self._runs -= 1

    async def prepare(self, exercise: m.Exercise) -> RunResult | None:
        """Seed as the checks do, then run the exercise's setup in the live namespace."""
        seed = (
            "from ptfund_checks.namespaces import seed_all as _ptfund_seed\n"
            f"_ptfund_seed({int(exercise.seed)})\n"
            "del _ptfund_seed\n"
        )
        code = seed + (exercise.setup or "")
        self._runs += 1
        try:
            live = await self._ready()
            return await live.execute(code, timeout=SETUP_TIMEOUT, silent=True)
        except Exception as exc:
            return RunResult("crashed", message=str(exc))
        finally:
            self._runs -= 1

    async def interrupt(self) -> None:
        if self._live is not None:
            await self._live.interrupt()

    async def restart(self) -> None:
        live = await self._ready()
        try:
            await live.restart()
        except Exception as exc:
            self._fail(str(exc))

    async def complete(self, code: str, cursor: int) -> tuple[list[str], int, int]:
        if self._live is None or self.busy:
            return [], cursor, cursor
        reply = await self._live.complete_reply(code, cursor)
        if not reply:
            return [], cursor, cursor
        return (
            list(reply.get("matches") or []),
            int(reply.get("cursor_start", cursor)),
            int(reply.get("cursor_end", cursor)),
        )

    # ------------------------------------------------------------ fresh kernels

    async def verify(self, exercise: m.Exercise, code: str, on_output: OutputCallback | None = None) -> Verdict:
        """The verdict of a fresh kernel; KernelUnavailable when none could be started.
        ``on_output`` gets the verification kernel's events as they arrive."""
        await self._started.wait()
        if self._verifier is None:
            raise KernelUnavailable(self.error or "The kernel is not available.")
        try:
            return await self._verifier.verify(exercise, code, on_output=on_output)
        except Exception as exc:
            raise KernelUnavailable(f"The code could not be checked: {exc}") from None

    async def predict(self, code: str) -> PredictOutcome:
        """A predict card's code, run as every review runs it (tutor.grading.review: a
        fresh kernel of its own); a crashed outcome when it could not run."""
        from tutor.grading.predict import outcome_from_result

        await self._started.wait()
        try:
            if self._predict is None:
                raise RuntimeError(self.error or "The kernel is not available.")
            return await self._predict.predict(code)
        except Exception as exc:
            return outcome_from_result(RunResult("crashed", message=f"The code could not run: {exc}"))


def _import_engine() -> None:
    # Everything the sessions will import on first use (jupyter_client, zmq, traitlets):
    # an import on the event loop would freeze the UI for its duration.
    for name in (
        "tutor.engine.session",
        "tutor.engine.gateway",
        "tutor.engine.pool",
        "tutor.engine.launch",
        "tutor.grading.verify",
        "tutor.grading.predict",
        "tutor.grading.review",
    ):
        importlib.import_module(name)
