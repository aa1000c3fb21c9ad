"""Which backend a kernel session runs on: chosen once (``backend_name``), by name, from
one small registry (``BACKENDS``), as jupyter_client's provisioner factory picks a
provisioner by the name a kernelspec gives.

A new place for kernels is a ``KernelBackend`` subclass (backend.py) in a module of its
own, one entry here, and one branch in ``backend_name``. Each factory imports its module
only when called: a session that never uses the gateway never imports its client.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from tutor.engine.errors import EngineError

if TYPE_CHECKING:  # pragma: no cover
    from tutor.engine.backend import KernelBackend
    from tutor.engine.session import KernelSession


def _local(session: KernelSession, *, fork: bool) -> KernelBackend:
    from tutor.engine.kernelenv import kernel_env
    from tutor.engine.local import LocalBackend

    return LocalBackend(
        env=kernel_env(session.extra_env),
        cwd=session.cwd,
        preload_torch=session.preload_torch,
        fork=fork,
        confinement=session.confinement,
    )


def _attached(session: KernelSession) -> KernelBackend:
    from tutor.engine.attached import AttachedBackend

    assert session.connection_file is not None  # backend_name chose "attached" for it
    return AttachedBackend(session.connection_file, interrupt_grace=session.interrupt_grace)


def _gateway(session: KernelSession) -> KernelBackend:
    from tutor.engine.gateway_backend import GatewayBackend

    assert session.gateway is not None  # backend_name chose "gateway" for it
    return GatewayBackend(session.gateway)


BACKENDS: dict[str, Callable[[KernelSession], KernelBackend]] = {
    # A local ipykernel forked by the fork server (a new process when the server cannot
    # be used: launch.py's ForkProvisioner says why).
    "fork": lambda session: _local(session, fork=True),
    # A local ipykernel started as a new process.
    "spawn": lambda session: _local(session, fork=False),
    # An existing kernel reached through its connection file (--kernel).
    "attached": _attached,
    # A kernel on a Jupyter Kernel or Enterprise Gateway (--gateway).
    "gateway": _gateway,
}


def backend_name(session: KernelSession) -> str:
    """The one place a session's backend is chosen: an attached kernel over a gateway over
    a local kernel; the launcher experiment (preload_torch) needs a command line, so a new
    process."""
    if session.connection_file:
        return "attached"
    if session.gateway:
        return "gateway"
    return "spawn" if session.preload_torch else "fork"


def make_backend(name: str, session: KernelSession) -> KernelBackend:
    factory = BACKENDS.get(name)
    if factory is None:
        raise EngineError(f"There is no kernel backend {name!r}; there are: {', '.join(BACKENDS)}.")
    return factory(session)
