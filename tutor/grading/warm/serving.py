"""The warm server's asyncio side: its socket, its kernel pools, its requests (server.py
is the process's entry, which takes the lock and starts the fork server before this loads).

A request is "verify this exercise with this code": the same verification entry point as
an in-process ``check`` (verify_in_fresh_kernel), given the server's pool; or "run this
predict card's code" for the quiz (run_predict in a fresh kernel of the pool).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tutor.grading.warm import protocol as p

if TYPE_CHECKING:
    from tutor.engine.pool import KernelPool

log = logging.getLogger("tutor.warm")

IDLE_POLL = 5.0


class WarmServer:
    def __init__(self, data: Path, digest: str, idle: float) -> None:
        self.data = data
        self.digest = digest
        self.idle = idle
        self.active = 0
        self.last = time.monotonic()
        self.pools: dict[str | None, KernelPool] = {}
        self.stopping = asyncio.Event()
        self.quiet = asyncio.Event()  # set while no request is under way
        self.quiet.set()
        self.server: asyncio.AbstractServer | None = None

    def pool(self, device: str | None) -> KernelPool:
        pool = self.pools.get(device)
        if pool is None:
            from tutor.engine.pool import KernelPool
            from tutor.grading.verify import KERNELS_PER_VERIFICATION

            # Both kernels of a verification (the learner's and the judge's) wait warm.
            pool = self.pools[device] = KernelPool(device=device, size=KERNELS_PER_VERIFICATION)
        return pool

    async def serve(self) -> None:
        path = p.socket_path(self.data)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # left by a server that was killed: we hold the lock now
        old = os.umask(0o077)  # only this user may connect
        try:
            self.server = await asyncio.start_unix_server(self.handle, path=str(path), limit=p.MAX_LINE)
        finally:
            os.umask(old)
        # The first spare (and its fork server, which imports torch) starts at once: a cold
        # check's request is already on its way.
        await self.pool(None).start()
        # Idle while the fork server warms up (seconds): load what recording the first verdict
        # needs (the progress store's modules and schema) now, not after that verdict.
        prepared = asyncio.ensure_future(asyncio.to_thread(_open_store, self.data))
        watch = asyncio.ensure_future(self._watch_idle())
        await self.stopping.wait()
        watch.cancel()
        await asyncio.gather(prepared, return_exceptions=True)
        await self.quiet.wait()  # requests under way are answered first
        await asyncio.gather(*(pool.shutdown() for pool in self.pools.values()), return_exceptions=True)

    def stop(self) -> None:
        if self.server is not None and not self.stopping.is_set():
            self.server.close()
            with contextlib.suppress(FileNotFoundError):
                p.socket_path(self.data).unlink()  # under the lock: a successor binds after we exit
        self.stopping.set()

    async def _watch_idle(self) -> None:
        while True:
            await asyncio.sleep(min(IDLE_POLL, self.idle))
            if not p.socket_path(self.data).exists():
                log.info("the socket is gone (the data dir was moved or removed): stopping")
                self.stop()
                return
            if not self.active and time.monotonic() - self.last > self.idle:
                log.info("idle for %g s: stopping", self.idle)
                self.stop()
                return

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.active += 1
        self.quiet.clear()
        try:
            reply = await self._answer(reader)
            if reply is not None:
                writer.write(p.encode(reply))
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away
        except Exception as exc:  # one bad request must not end the server
            log.exception("request failed")
            with contextlib.suppress(Exception):
                writer.write(p.encode({"error": f"the warm server failed: {exc}", "exit_code": 2}))
                await writer.drain()
        finally:
            self.active -= 1
            if not self.active:
                self.quiet.set()
            self.last = time.monotonic()
            writer.close()

    async def _answer(self, reader: asyncio.StreamReader) -> dict | None:
        try:
            request = p.decode(await reader.readline())
        except ValueError as exc:  # LimitOverrunError is a ValueError too
            return {"error": f"a bad request to the warm server ({exc})", "exit_code": 2}
        if request.get("digest") != self.digest:
            self.stop()  # a client of other code: it starts a server of its own
            return {"stale": True, "digest": self.digest}
        op = request.get("op")
        if op == "ping":
            return {"digest": self.digest, "pid": os.getpid()}
        if op == "quit":
            self.stop()
            return {"ok": True}
        work = {"verify": self.verify, "predict": self.predict}.get(str(op))
        if work is None:
            return {"error": f"the warm server has no operation {op!r}", "exit_code": 2}
        # Do it, unless the client hangs up first (ctrl+c): then the code is stopped.
        task = asyncio.ensure_future(work(request))
        hangup = asyncio.ensure_future(reader.read(1))
        await asyncio.wait({task, hangup}, return_when=asyncio.FIRST_COMPLETED)
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            return None
        hangup.cancel()
        return task.result()

    async def verify(self, request: dict[str, Any]) -> dict:
        from tutor.errors import TutorError
        from tutor.grading.attempts import record_attempt
        from tutor.grading.verify import verify_in_fresh_kernel
        from tutor.packs import torchneed
        from tutor.packs.catalog import Catalog
        from tutor.packs.trust import TrustStore, needs_trust

        try:
            # On the loop's thread, not a worker's: loading validates the packs' Python with
            # the ast module, and CPython 3.11's AST conversion is not thread-safe (two threads
            # converting at once fail with "AST constructor recursion depth mismatch"); another
            # request's verification parses on this thread meanwhile. A load takes tens of ms.
            catalog = Catalog.load(list(request.get("packs") or []))
            ref = catalog.find_exercise(str(request["target"]))
            torchneed.require(ref.lesson)
            if needs_trust(ref.pack):
                store = TrustStore(self.data)
                if not store.is_trusted(ref.pack):
                    if not request.get("trust"):
                        return {"needs_trust": True}
                    store.trust(ref.pack)
            code = str(request["code"])
            device = request.get("device")
            verdict = await verify_in_fresh_kernel(
                ref.exercise, code, device=device, timeout=request.get("timeout"), pool=self.pool(device)
            )
        except TutorError as exc:
            return {"error": str(exc), "exit_code": exc.exit_code}
        warning = (
            await asyncio.to_thread(record_attempt, self.data, ref, code, verdict) if request.get("record") else None
        )
        return {"exercise": ref.key, "pack": ref.pack.id, "verdict": verdict.to_json(), "warning": warning}

    async def predict(self, request: dict[str, Any]) -> dict:
        """A predict card's code run in a fresh kernel (the quiz): what it printed and its key."""
        from dataclasses import asdict

        from tutor.grading.predict import DEFAULT_TIMEOUT, run_predict

        pool = self.pool(request.get("device"))
        kernel = await pool.take()
        try:
            outcome = await run_predict(kernel, str(request["code"]), timeout=request.get("timeout") or DEFAULT_TIMEOUT)
        finally:
            pool.give_back(kernel)
        return {"predict": asdict(outcome)}


def _open_store(data: Path) -> None:
    from tutor.progress.store import ProgressStore

    try:
        ProgressStore.open(data).close()
    except Exception:  # a store that cannot open now is reported by the attempt that needs it
        log.info("the progress store could not be opened ahead of the first attempt", exc_info=True)


def serve(data: Path, digest: str, idle: float) -> None:
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s warm[{os.getpid()}] %(levelname)s %(message)s")
    log.info("serving %s", data)
    asyncio.run(WarmServer(data, digest, max(1.0, idle)).serve())
