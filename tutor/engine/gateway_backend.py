"""A kernel on a Jupyter Kernel Gateway or Enterprise Gateway (``--gateway URL``): started,
interrupted, restarted and deleted over the gateway's REST API, reached over its websocket
(gateway.py). Liveness is the gateway's own news of the kernel, then its answers."""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any, cast

from tutor.engine.backend import Probed
from tutor.engine.errors import EngineError

if TYPE_CHECKING:  # pragma: no cover
    from tutor.engine.connection import Connection
    from tutor.engine.gateway import GatewayClient, GatewayConnection

log = logging.getLogger("tutor.engine")


class GatewayBackend(Probed):
    def __init__(self, url: str):
        super().__init__()
        self.url = url
        self.client: GatewayClient | None = None
        self.kernel_id: str | None = None  # the kernel's id on the gateway
        self.conn: GatewayConnection | None = None  # the websocket of the current kernel

    async def open(self, kernel_id: str | None = None) -> Connection:
        """A kernel on the gateway (a new one unless ``kernel_id``) and its websocket."""
        from tutor.engine.gateway import ENV_KERNEL, GatewayClient, GatewayConnection

        if self.client is None:
            self.client = GatewayClient(self.url)
        if kernel_id is None:
            kernel_id = await self.client.start_kernel(os.environ.get(ENV_KERNEL) or None)
        self.kernel_id = kernel_id
        self.conn = conn = GatewayConnection(self.client, kernel_id)
        await conn.open()
        return cast("Connection", conn)  # the same shape (send, register, ping, close)

    def wire_fault(self) -> str | None:
        return self.conn.fault if self.conn is not None else None

    def lost(self, conn: Connection) -> str | None:
        lost = getattr(conn, "lost", None)  # what the gateway said about its kernel
        if not lost:
            return None
        return "replaced" if lost == "restarting" else "gone"

    async def interrupt(self, conn: Connection) -> None:
        if self.client is not None and self.kernel_id:
            await self.client.interrupt(self.kernel_id)

    async def restart(self, conn: Connection, already_dead: bool, report: dict[str, Any]) -> Connection:
        """The gateway restarts the kernel (REST); one that died was already restarted by the
        gateway's own nanny, or is gone, and then a new kernel replaces it."""
        await conn.close()
        self.kernel_session = None
        gw, kernel_id = self.client, self.kernel_id
        assert gw is not None
        if kernel_id is not None and not already_dead:
            try:
                await gw.restart(kernel_id)
            except EngineError:
                log.debug("gateway restart failed; starting a new kernel", exc_info=True)
            else:
                return await self.open(kernel_id)
        model = await gw.kernel(kernel_id) if kernel_id else None
        if model is not None and model.get("execution_state") != "dead":
            return await self.open(kernel_id)
        if kernel_id:
            await gw.delete(kernel_id)
        self.kernel_id = None
        return await self.open()

    async def close(self) -> None:
        gw, kernel_id, self.kernel_id = self.client, self.kernel_id, None
        if gw is not None and kernel_id is not None:
            try:
                await gw.delete(kernel_id)
            except EngineError:
                log.debug("gateway kernel delete failed", exc_info=True)
