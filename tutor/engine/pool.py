"""A warm spare kernel, so verifying an exercise in a fresh process costs no kernel start.

``take()`` hands out a spare that is fully started (torch imported, checks injected) and
starts the next spare in the background: at once in a batch (a known demand), and for a
person once the kernels taken are back, so that no spare's start slows the verification
someone is waiting for. The caller owns the taken kernel until it
hands it back with ``give_back()``, which shuts it down in the background; ``shutdown()``
waits for those shutdowns, so no kernel is left half-stopped when the event loop ends.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any

from tutor.engine.errors import DeviceUnavailable, EngineError
from tutor.engine.session import KernelSession

log = logging.getLogger("tutor.engine")

TAKE_ATTEMPTS = 3  # a spare that died while waiting is replaced; this many tries at most
WARM_UP = "import ptfund_checks as _ptfund\n_ptfund.warm_up(globals().get('DEVICE'))\ndel _ptfund\n"


async def warm_up(session: KernelSession, timeout: float = 60) -> None:
    """Pay the check library's one-time costs in a started kernel (torch's first meta-device
    op imports sympy and torch._dynamo, ~1.5 s; a GPU's context), so no verification pays
    them. A kernel forked onto the CPU has nothing left to pay: its fork server paid it
    (torch._dynamo aside, in its first kernels: lazydynamo.py)."""
    from tutor.engine.launch import FORK

    if session.launcher == FORK and session.device_info is not None and session.device_info.kind == "cpu":
        return
    r = await session.execute(WARM_UP, silent=True, timeout=timeout)
    if r.status != "ok":  # not the learner's doing: nothing of theirs has run yet
        why = f"{r.error.ename}: {r.error.evalue}" if r.error else r.message or r.status
        log.warning("A kernel's warm-up did not finish (%s): its first verification pays torch's first-use costs.", why)


# A spare verifies a trivial exercise in both roles while it waits (ptfund_checks.judge.rehearse):
# what a forked kernel's first verification would pay (pages copied on first write) is paid here.
REHEARSE = "__import__('ptfund_checks.judge').judge.rehearse()\n"


async def rehearse(session: KernelSession, timeout: float = 60) -> None:
    await session.execute(REHEARSE, silent=True, timeout=timeout)


def usable_cores() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


class KernelPool:
    def __init__(
        self,
        device: str | None = None,
        size: int = 1,
        cwd: str | os.PathLike | None = None,
        extra_env: dict[str, str] | None = None,
        demand: int | None = None,
        **session_options: Any,
    ) -> None:
        """``demand``: how many kernels will be taken in all, when the caller knows (a
        batch of verifications); no spare is started that nobody would take. A pool of
        ``size`` > 1 serves that many kernels working side by side: each gets its share of
        this machine's cores for torch's threads (unless ``threads`` says otherwise)."""
        if size < 1:
            raise ValueError("a kernel pool needs size >= 1")
        if size > 1:
            session_options.setdefault("threads", max(1, usable_cores() // size))
        self.device = device
        self.size = size
        self.demand = demand
        self.cwd = cwd
        self.extra_env = extra_env
        self.session_options = session_options
        self._spares: list[KernelSession] = []
        self._prepared: dict[KernelSession, asyncio.Task] = {}
        self._disposals: set[asyncio.Task] = set()
        self._closed = False
        self._out: set[KernelSession] = set()  # kernels taken and not yet given back

    def _spawn(self) -> KernelSession:
        session = KernelSession(device=self.device, cwd=self.cwd, extra_env=self.extra_env, **self.session_options)
        session.start_soon()
        # A spare that waits for a person (no demand known: the app, the warm server) rehearses;
        # in a batch the next spare is taken at once, and rehearsing would only add work.
        rehearsing = self.demand is None
        self._prepared[session] = asyncio.get_running_loop().create_task(self._prepare(session, rehearsing))
        self._spares.append(session)
        return session

    async def _prepare(self, session: KernelSession, rehearsing: bool) -> None:
        """Start and warm up while the spare waits, not while a learner does. A spare
        already taken by then (a cold start: the request came before its kernel) is not
        rehearsed: rehearsing pays both roles' first pass, its verification only its own."""
        await session.start()
        await warm_up(session)
        if rehearsing and session in self._spares:
            await rehearse(session)

    async def _ready(self, session: KernelSession) -> None:
        task = self._prepared.pop(session, None)
        if task is None:
            await session.start()
            return
        try:
            await task
        except EngineError:
            raise
        except Exception:
            await session.start()

    def _wanted(self) -> int:
        """How many spares should be warming now. A pool that waits for a person (no
        demand known) starts none while a kernel it handed out is still in use: a spare's
        start (a fork, ipykernel's start, a rehearsal) beside a verification takes cores
        from it, and the person waits for that verification, not for the next one."""
        if self.demand is None:
            return 0 if self._in_use() else self.size
        return min(self.size, max(self.demand, 0))

    def _in_use(self) -> bool:
        # A taker may also shut its kernel down itself rather than give it back.
        self._out = {s for s in self._out if s.state not in ("stopped", "dead")}
        return bool(self._out)

    def _refill(self) -> None:
        while len(self._spares) < self._wanted():
            self._spawn()

    async def start(self) -> None:
        """Begin warming spares; returns at once (``ready()`` waits for one)."""
        self._closed = False
        self._refill()

    async def ready(self) -> None:
        """Wait until the next spare is started (raises if it cannot start)."""
        if not self._spares:
            await self.start()
        if not self._spares:  # past the demand: asked for anyway
            self._spawn()
        session = self._spares[0]
        task = self._prepared.get(session)
        await (asyncio.shield(task) if task is not None else session.start())

    async def settled(self) -> None:
        """Wait until every spare is warm and every kernel handed back has stopped: nothing
        of the pool's own is then using the cores (a benchmark's clock starts after this)."""
        await asyncio.gather(*(asyncio.shield(t) for t in list(self._prepared.values())), return_exceptions=True)
        await self.drain()

    async def take(self) -> KernelSession:
        """A started kernel of one's own; the next spare starts warming as it is handed out."""
        if self._closed:
            raise EngineError("The kernel pool is shut down.")
        last_error: Exception | None = None
        for _ in range(TAKE_ATTEMPTS):
            if not self._spares:
                self._spawn()
            session = self._spares.pop(0)
            alive = False
            try:
                await self._ready(session)
                alive = await session.is_alive()
            except EngineError as exc:
                last_error = exc
            finally:
                if alive:
                    self._out.add(session)
                    if self.demand is not None:
                        self.demand -= 1
                # Refill only now: on two cores a second start beside this one slows it.
                if not self._closed:
                    self._refill()
            if alive:
                return session
            await session.shutdown()
            if isinstance(last_error, DeviceUnavailable):
                raise last_error  # no retry can make the device appear
        raise last_error or EngineError("No kernel could be started.")

    def give_back(self, session: KernelSession) -> None:
        """Shut a taken kernel down in the background: the caller (a verdict) need not
        wait for a process to exit. ``shutdown()`` waits for it."""
        task = asyncio.get_running_loop().create_task(session.shutdown(), name="ptfund-kernel-dispose")
        self._disposals.add(task)
        task.add_done_callback(self._disposed)
        self._out.discard(session)
        if not self._closed:
            self._refill()

    def _disposed(self, task: asyncio.Task) -> None:
        self._disposals.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.debug("a kernel's shutdown failed: %s", task.exception())

    async def drain(self) -> None:
        """Wait until every kernel handed back has stopped."""
        while self._disposals:
            await asyncio.wait(list(self._disposals))

    async def shutdown(self) -> None:
        """Stop the spares and wait for kernels handed back (kernels still taken belong
        to their takers)."""
        self._closed = True
        spares, self._spares = self._spares, []
        for task in self._prepared.values():
            task.cancel()
        self._prepared.clear()
        await asyncio.gather(*(s.shutdown() for s in spares), return_exceptions=True)
        await self.drain()

    async def fan_out(self, jobs: int, worker: Callable[[], Awaitable[None]]) -> None:
        """Run ``jobs`` copies of ``worker`` (each takes kernels from this pool), then shut
        the pool down. The first failure (no kernel can be started) ends the run."""
        try:
            await self.start()
            tasks = [asyncio.ensure_future(worker()) for _ in range(jobs)]
            try:
                done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
                for task in done:
                    task.result()
            finally:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
        finally:
            await self.shutdown()  # waits for the kernels handed back, too
