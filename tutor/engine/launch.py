"""Starting a local ipykernel without an installed kernelspec.

The kernel runs with this very interpreter, so the learner gets the torch the tutor was
installed with, whatever kernelspecs (or none) the machine has.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import pathlib
import signal
import sys
from typing import Any

import zmq.asyncio
from jupyter_client.connect import KernelConnectionInfo
from jupyter_client.kernelspec import KernelSpec
from jupyter_client.provisioning import LocalProvisioner

from tutor.engine import confine
from tutor.engine._jupyter_compat import ExitWaitKernelManager
from tutor.engine.connection import fast_reconnect
from tutor.engine.kernelenv import fork_refusal, kernel_env

log = logging.getLogger("tutor.engine")

# An alternative launcher (preload_torch=True): ipykernel_launcher plus torch imported in a
# background thread from the first instant, to overlap ipykernel's own start-up. Measured
# (benchmarks/engine.py) it gains nothing: both halves hold the GIL nearly all the time, so
# it is off by default and kept for machines where that may differ.
LAUNCHER = r"""
import sys, threading
if sys.path and sys.path[0] in ("", "."):
    del sys.path[0]  # as ipykernel_launcher does; IPython adds the cwd back later
def _ptfund_import_torch():
    try:
        import torch  # noqa: F401
    except BaseException:
        pass  # the boot code imports it again and reports the error in one sentence
threading.Thread(target=_ptfund_import_torch, name="ptfund-import-torch", daemon=True).start()
from ipykernel import kernelapp
kernelapp.launch_new_instance()
"""

KERNEL_NAME = "ptfund-python"


def kernel_argv(preload_torch: bool = False) -> list[str]:
    if preload_torch:
        return [sys.executable, "-c", LAUNCHER, "-f", "{connection_file}"]
    return [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]


def make_kernel_spec(preload_torch: bool = False) -> KernelSpec:
    return KernelSpec(
        argv=kernel_argv(preload_torch),
        name=KERNEL_NAME,
        display_name="Python (ptfund-tutor)",
        language="python",
        interrupt_mode="signal",
        metadata={"debugger": False},
    )


def shared_context() -> zmq.asyncio.Context:
    """One zmq context for the kernels this process starts and their clients. jupyter_client
    gives each manager and each client a context of its own, and every context starts (and
    on closing stops) threads of its own: two contexts per fresh kernel."""
    return zmq.asyncio.Context.instance()


class TutorKernelManager(ExitWaitKernelManager):
    """An AsyncKernelManager whose kernel spec is built in memory, not looked up on disk.
    With ``fork=True`` its kernels come from the fork server when it can be used."""

    def __init__(
        self,
        *args: Any,
        preload_torch: bool = False,
        fork: bool = False,
        confinement: confine.Confinement | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("context", shared_context())
        super().__init__(*args, **kwargs)
        self._tutor_spec = make_kernel_spec(preload_torch)
        self.kernel_name = KERNEL_NAME
        if fork:
            import uuid

            self.kernel_id = str(uuid.uuid4())
            self.provisioner = ForkProvisioner(kernel_id=self.kernel_id, kernel_spec=self._tutor_spec, parent=self)
            self.provisioner.confinement = confinement

    @property
    def launcher(self) -> str:
        """Which launcher started the current kernel (FORK or SPAWN), with why not the
        fork server when it was not."""
        launcher = getattr(self.provisioner, "launcher", SPAWN)
        refusal = getattr(self.provisioner, "refusal", None)
        return f"{launcher} ({refusal})" if launcher == SPAWN and refusal else launcher

    @property
    def kernel_spec(self) -> KernelSpec:
        return self._tutor_spec

    def client(self, **kwargs: Any) -> Any:
        """A client whose sockets retry a refused connection within milliseconds: a fresh
        kernel binds its ports a moment after the client connects, and zmq's default first
        retry (100 ms) would otherwise be most of a forked kernel's start."""
        if "context" not in kwargs:
            kwargs["context"] = self.context
            fast_reconnect(self.context.sockopts)
        return super().client(**kwargs)

    async def wait_for_exit(self, pollinterval: float = 0.1) -> None:
        """Wait for the killed kernel to end: told by the fork server, or polled every 10 ms
        (jupyter_client polls every 100 ms, which every shutdown would pay)."""
        from tutor.engine.forkclient import ForkedProcess

        process = getattr(self.provisioner, "process", None)
        if isinstance(process, ForkedProcess):
            if process.poll() is None:
                await _shielded(process.server.exited(process.pid))
            return
        await super().wait_for_exit(pollinterval=min(pollinterval, 0.01))


# ---------------------------------------------------------------- which launcher

FORK = "fork server"
SPAWN = "new process"


class ForkProvisioner(LocalProvisioner):
    """A LocalProvisioner whose kernels are forked by the fork server (forkserver.py)
    instead of started as new processes; falls back to a new process when the server is
    unavailable. ``launcher`` says which one started the current kernel, ``refusal`` why
    the fork server was not used. With a ``confinement`` (confine.py), its kernels enter
    it before they run anything: a forked one in the fork server, a new process through
    ``python -m tutor.engine.confine``; ``scratch`` is the current kernel's scratch
    directory."""

    launcher = SPAWN
    refusal: str | None = None
    confinement: confine.Confinement | None = None
    scratch: str | None = None
    _own_scratch: str | None = None  # made here for a new process, so removed here

    async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> KernelConnectionInfo:
        from tutor.engine.forkclient import ForkedProcess, ForkServerUnavailable, shared_server

        self.refusal = fork_refusal()
        assert self.parent is not None  # the kernel manager that made this provisioner
        if self.refusal is None and self.connection_info.get("curve_publickey"):
            # A forked kernel binds before it is asked for, so it cannot take keys from the manager.
            self.refusal = "the kernel manager encrypts connections (CurveZMQ)"
        if self.refusal is None:
            try:
                server = shared_server(kernel_env())
                await server.wait_ready()
                out = kwargs.get("stdout")
                spawned = server.spawn(
                    self.parent.connection_file,
                    dict(kwargs.get("env") or kernel_env()),
                    str(kwargs["cwd"]) if kwargs.get("cwd") else None,
                    getattr(out, "name", None) if out is not None else None,
                    self.confinement.to_json() if self.confinement is not None else None,
                )
                try:
                    kernel = await _shielded(spawned)
                except asyncio.CancelledError:
                    spawned.add_done_callback(_kill_unclaimed)  # forked for nobody now
                    raise
            except ForkServerUnavailable as exc:
                self.refusal = str(exc)
            else:
                self.process = ForkedProcess(server, kernel.pid)  # type: ignore[assignment]  # quacks like Popen
                self.pid = self.pgid = kernel.pid  # the kernel leads a process group of its own
                self.cwd = kwargs.get("cwd", pathlib.Path.cwd())
                self.launcher = FORK
                self.scratch = kernel.scratch
                self._use_kernel_ports(kernel.connection)
                return self.connection_info
        log.info("kernel started as a new process: %s", self.refusal)
        self.launcher = SPAWN
        if self.confinement is not None and os.name == "posix":  # it execs: POSIX only
            self.scratch = self._own_scratch = confine.make_scratch(self.confinement)
            cmd = confine.launcher_argv(self.confinement, self.scratch) + cmd
        return await super().launch_kernel(cmd, **kwargs)

    async def cleanup(self, restart: bool = False) -> None:
        await super().cleanup(restart=restart)
        scratch, self._own_scratch = self._own_scratch, None
        confine.remove_scratch(scratch)

    def _use_kernel_ports(self, connection: dict[str, Any]) -> None:
        """The forked kernel bound ports of its own choosing (nothing can take them between
        picking and binding): they, and its key, are the connection from now on (the
        kernel manager writes them to its connection file). The ports picked for it go
        back to jupyter_client's cache."""
        from jupyter_client.connect import LocalPortCache

        if self.ports_cached:
            cache = LocalPortCache.instance()
            for name in ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port"):
                port = self.connection_info.get(name)
                if isinstance(port, int) and port:
                    cache.return_port(port)
            self.ports_cached = False  # what cleanup would return is the kernel's, not the cache's
        info: dict[str, Any] = dict(connection)
        info["key"] = str(info.get("key", "")).encode()
        self.connection_info = info  # type: ignore[assignment]  # the fields of a connection file

    async def wait(self) -> int | None:
        """As LocalProvisioner's, but told of the exit by the fork server, not by polling
        every 100 ms (shutting a kernel down would take that long)."""
        from tutor.engine.forkclient import ForkedProcess

        process = self.process
        if not isinstance(process, ForkedProcess):
            return await super().wait()
        if process.poll() is None:  # (poll forgets an exit it reports: ask it first)
            await _shielded(process.server.exited(process.pid))
        status = process.poll()
        self.process = None
        return status


async def _shielded(fut: concurrent.futures.Future) -> Any:
    """Await a fork server future; a cancelled waiter leaves the future alone (it is shared:
    the server's ready future, or the reply the reader thread will still deliver)."""
    return await asyncio.shield(asyncio.wrap_future(fut))


def _kill_unclaimed(fut: concurrent.futures.Future) -> None:
    if not fut.cancelled() and fut.exception() is None:
        try:
            os.killpg(fut.result().pid, signal.SIGKILL)
        except OSError:
            pass
