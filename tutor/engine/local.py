"""A local ipykernel the tutor starts and owns: forked by the fork server where it can be,
else a new process (launch.py). Being its parent (or its server's client), the tutor polls
the process for its exit status and interrupts it with SIGINT, as jupyter_client does."""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Any

from tutor.engine.backend import KernelBackend
from tutor.engine.connection import Connection
from tutor.engine.errors import EngineError

if TYPE_CHECKING:  # pragma: no cover
    from tutor.engine.confine import Confinement
    from tutor.engine.launch import TutorKernelManager

log = logging.getLogger("tutor.engine")


class LocalBackend(KernelBackend):
    def __init__(
        self,
        *,
        env: dict[str, str],
        cwd: str | None,
        preload_torch: bool,
        fork: bool = True,
        confinement: Confinement | None = None,
    ):
        self.env = env
        self.cwd = cwd
        self.preload_torch = preload_torch
        self.fork = fork and not preload_torch  # the launcher experiment needs a command line
        # The working directory asked for stays usable in a confined kernel.
        self.confinement = confinement.writing(cwd) if confinement is not None and cwd else confinement
        self.km: TutorKernelManager | None = None
        self._log_file: Any = None

    @property
    def launcher(self) -> str | None:
        return self.km.launcher if self.km is not None else None

    async def open(self) -> Connection:
        from tutor.engine.launch import TutorKernelManager
        from tutor.engine.logs import log_file_path

        km = TutorKernelManager(preload_torch=self.preload_torch, fork=self.fork, confinement=self.confinement)
        self.km = km
        self.log_path = log_file_path(uuid.uuid4().hex)
        # Kept open for the kernel until close(); a local temp file opens at once.
        self._log_file = open(self.log_path, "ab")  # noqa: SIM115, ASYNC230
        kwargs: dict[str, Any] = {"env": self.env, "stdout": self._log_file, "stderr": self._log_file}
        if self.cwd:
            kwargs["cwd"] = self.cwd
        try:
            await km.start_kernel(**kwargs)
        except OSError as exc:  # no such working directory, no interpreter, no file descriptors
            why = f"{exc.strerror}: {exc.filename}" if exc.strerror and exc.filename else str(exc)
            raise EngineError(f"The Python kernel could not be started: {why}.") from None
        return self._connect()

    def _connect(self) -> Connection:
        assert self.km is not None
        conn = Connection(self.km.client())
        conn.start()
        return conn

    async def exit_status(self, conn: Connection, force: bool = False) -> int | str | None:
        provisioner = self.km.provisioner if self.km is not None else None
        if provisioner is None or not provisioner.has_process:
            return "gone"
        return await provisioner.poll()

    def returncode(self) -> int | None:
        process = getattr(getattr(self.km, "provisioner", None), "process", None)
        return None if process is None else process.returncode

    async def interrupt(self, conn: Connection) -> None:
        if self.km is not None and self.km.has_kernel:
            await self.km.interrupt_kernel()

    async def restart(self, conn: Connection, already_dead: bool, report: dict[str, Any]) -> Connection:
        await conn.close()
        assert self.km is not None
        # now=True: a kernel that ignores interrupts would also ignore a polite shutdown.
        await self.km.restart_kernel(now=True)
        return self._connect()

    async def close(self) -> None:
        km, self.km = self.km, None
        if km is not None:
            try:
                await km.shutdown_kernel(now=True)
            except Exception:
                log.debug("kernel shutdown failed", exc_info=True)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        if self.log_path is not None:
            try:
                self.log_path.unlink()
            except OSError:
                pass
            self.log_path = None

    def start_failure(self) -> str:
        tail = ""
        if self.log_path and self.log_path.exists():
            try:
                lines = self.log_path.read_text(errors="replace").strip().splitlines()
                errors = [line for line in lines if "Error" in line or "error" in line]
                tail = (errors or lines or [""])[-1].strip()
            except OSError:
                pass
        sentence = super().start_failure()[:-1]
        return sentence + (f": {tail[:300]}" if tail else "") + "."
