"""casperfpga_ext's blocking code and KATCP board server against the simulated core.

Runs inside the simulator (cocotb). Two ways to reach the core's AXI4-Lite slave from
blocking code, both carrying the transport contract (32-bit big-endian words):

* ``SimTransport``: called from a cocotb ``bridge`` thread; each access waits for the
  simulation through ``resume``. For API code run directly by a test.
* ``SimWindow``: the ``Window`` a ``BoardServer`` serves, callable from any thread (the
  server's event loop thread). Accesses go into a thread-safe queue; ``serve()``, run in
  a ``bridge`` thread, carries them out in simulation. While it waits for a request the
  simulator is paused (bridge threads hold it), so simulated time advances only with the
  accesses and whatever the test awaits itself.

``ServerThread`` runs a ``BoardServer`` on localhost with its own asyncio loop, serving
the board as casperfpga expects one: the core (``gbe0``, and each of its registers and
regions by name, ``gbe0_gmac_reg_tx_packet_count`` …, as the yellow block lists them)
and a sys_block (``SysBlockModel``: board id, revision, scratchpad; its clock counter
advances at the user clock in wall time, as board-server's ``ClockedWindow`` does for a
window without one).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from cocotb.task import resume
from cocotbext.axi import AxiLiteMaster, AxiResp

from casper400g_board_server.server import BoardServer, ClockedWindow
from casperfpga_ext import fhg_regmap as regmap
from casperfpga_ext.fpg import GBE_TAG, FpgBlock, FpgDevice, write_fpg
from casperfpga_ext.transport import WORD_BYTES, check_access

DEVICE = "gbe0"
# Where the .fpg of the simulated design puts the core: the board's bus address does not
# reach the simulation, device offsets do (the core's slave decodes from 0).
DEVICE_ADDRESS = 0xA4010000
SYS_ADDRESS = DEVICE_ADDRESS + regmap.BLOCK_SIZE
# A big-endian board for casperfpga: board id not 0, top byte 0 (see casperfpga_ext/README).
BOARD_ID = 0x400
SYS_REGISTERS = {  # name: (offset in the sys_block, value after reset)
    "sys_board_id": (0x00, BOARD_ID),
    "sys_rev": (0x04, 0x00000001),
    "sys_rev_rcs": (0x0C, 0x00000001),
    "sys_scratchpad": (0x10, 0),
    "sys_clkcounter": (0x14, 0),
}
USER_CLK_HZ = 390.625e6


class AxiWords:
    """Whole-word AXI4-Lite accesses of the core's register slave, big-endian words."""

    def __init__(self, axi: AxiLiteMaster) -> None:
        self.axi = axi
        self.accesses = 0

    async def read(self, offset: int, size: int) -> bytes:
        out = bytearray()
        for address in range(offset, offset + size, WORD_BYTES):
            resp = await self.axi.read(address, WORD_BYTES)
            if resp.resp != AxiResp.OKAY:
                raise OSError(f"AXI read {address:#x}: {resp.resp!r}")
            # AXI byte lanes are little-endian; the transport contract is big-endian words.
            out += int.from_bytes(resp.data, "little").to_bytes(WORD_BYTES, "big")
            self.accesses += 1
        return bytes(out)

    async def write(self, offset: int, data: bytes) -> None:
        for k in range(0, len(data), WORD_BYTES):
            value = int.from_bytes(data[k : k + WORD_BYTES], "big")
            resp = await self.axi.write(offset + k, value.to_bytes(WORD_BYTES, "little"))
            if resp.resp != AxiResp.OKAY:
                raise OSError(f"AXI write {offset + k:#x}: {resp.resp!r}")
            self.accesses += 1


# The core and each of its registers and regions by name (as the yellow block lists them
# in the .fpg): name -> (offset in the core, size in bytes).
CORE_DEVICES: dict[str, tuple[int, int]] = {
    DEVICE: (0, regmap.BLOCK_SIZE),
    **{f"{DEVICE}_{d.name}": (d.offset, d.nbytes) for d in regmap.DEVICES.values()},
}


def _locate(device_name: str, offset: int, size: int) -> int:
    """The access's offset in the core's register slave."""
    where = CORE_DEVICES.get(device_name)
    if where is None:
        raise ValueError(f"unknown device {device_name!r}")
    check_access(device_name, where[1], offset, size)
    return where[0] + offset


class SimTransport:
    """The Transport protocol over the simulated bus; call it from a bridge thread."""

    def __init__(self, axi: AxiLiteMaster) -> None:
        self.bus = AxiWords(axi)

    @property
    def accesses(self) -> int:
        return self.bus.accesses

    def read(self, device_name: str, size: int, offset: int = 0) -> bytes:
        return resume(self.bus.read)(_locate(device_name, offset, size), size)

    def blindwrite(self, device_name: str, data: bytes, offset: int = 0) -> None:
        resume(self.bus.write)(_locate(device_name, offset, len(data)), bytes(data))

    def listdev(self) -> list[str]:
        return list(CORE_DEVICES)

    def is_connected(self) -> bool:
        return True


class SimWindow:
    """A board server's window onto the simulated core, served by ``serve()``.

    ``timeout`` (seconds of wall time) bounds how long an access waits to be served.
    """

    def __init__(self, axi: AxiLiteMaster, timeout: float = 60.0) -> None:
        self.bus = AxiWords(axi)
        self.timeout = timeout
        self._requests: queue.Queue[tuple[str, int, Any, Future[bytes]]] = queue.Queue()

    def _submit(self, op: str, offset: int, arg: Any) -> bytes:
        done: Future[bytes] = Future()
        self._requests.put((op, offset, arg, done))
        try:
            return done.result(self.timeout)
        except (TimeoutError, concurrent.futures.TimeoutError):  # distinct before 3.11
            raise OSError(f"the simulation did not serve a {op} within {self.timeout} s") from None

    def read(self, device_name: str, size: int, offset: int = 0) -> bytes:
        return self._submit("read", _locate(device_name, offset, size), size)

    def blindwrite(self, device_name: str, data: bytes, offset: int = 0) -> None:
        self._submit("write", _locate(device_name, offset, len(data)), bytes(data))

    def listdev(self) -> list[str]:
        return list(CORE_DEVICES)

    def serve(self, done: Callable[[], bool], limit_s: float = 120.0) -> int:
        """Carry out queued accesses until ``done()``; call from a bridge thread.

        Returns the number of requests served; raises TimeoutError after ``limit_s``.
        """
        read, write = resume(self.bus.read), resume(self.bus.write)
        served = 0
        deadline = time.monotonic() + limit_s
        while not done():
            if time.monotonic() > deadline:
                raise TimeoutError(f"serving the board server: not done after {limit_s} s")
            try:
                op, offset, arg, result = self._requests.get(timeout=0.005)
            except queue.Empty:
                continue
            try:
                result.set_result(read(offset, arg) if op == "read" else write(offset, arg) or b"")
            except Exception as exc:  # handed to the server, which replies `fail`
                result.set_exception(exc)
            served += 1
        return served


class SysBlockModel:
    """A CASPER sys_block's registers, one device each; only the scratchpad is writable."""

    def __init__(self) -> None:
        self.values = {name: value for name, (_, value) in SYS_REGISTERS.items()}

    def read(self, device_name: str, size: int, offset: int = 0) -> bytes:
        check_access(device_name, WORD_BYTES, offset, size)
        return self.values[device_name].to_bytes(WORD_BYTES, "big")

    def blindwrite(self, device_name: str, data: bytes, offset: int = 0) -> None:
        check_access(device_name, WORD_BYTES, offset, len(data))
        if device_name != "sys_scratchpad":
            raise OSError(f"{device_name} is read-only (the sys_block answers SLVERR)")
        self.values[device_name] = int.from_bytes(data, "big")


class BoardWindow:
    """The simulated board's bus: ``gbe0`` on the simulated core, the sys_block modelled."""

    def __init__(self, core: SimWindow) -> None:
        self.core, self.sys = core, SysBlockModel()

    def read(self, device_name: str, size: int, offset: int = 0) -> bytes:
        if device_name in SYS_REGISTERS:
            return self.sys.read(device_name, size, offset)
        return self.core.read(device_name, size, offset)

    def blindwrite(self, device_name: str, data: bytes, offset: int = 0) -> None:
        if device_name in SYS_REGISTERS:
            self.sys.blindwrite(device_name, data, offset)
        else:
            self.core.blindwrite(device_name, data, offset)

    def listdev(self) -> list[str]:
        return [*self.core.listdev(), *SYS_REGISTERS]


def write_design_fpg(directory: Path, params: dict[str, str] | None = None) -> Path:
    """An .fpg describing the simulated design: one 400GbE core, ``gbe0``, with its
    registers by name (as the yellow block lists them), and the sys_block registers every
    CASPER design has."""
    path = Path(directory) / "sim_core.fpg"
    devices = [FpgDevice(n, DEVICE_ADDRESS + o, s) for n, (o, s) in CORE_DEVICES.items()]
    for name, (offset, _) in SYS_REGISTERS.items():
        devices.append(FpgDevice(name, SYS_ADDRESS + offset, WORD_BYTES))
    write_fpg(
        path,
        devices,
        [FpgBlock(DEVICE, GBE_TAG, params or {"port": "7148"})],
        b"simulated design: no bitstream",
    )
    return path


class ServerThread:
    """A ``BoardServer`` for the simulated board (``window``'s core and a sys_block) on
    127.0.0.1 (a free port), in its own thread."""

    def __init__(self, window: SimWindow, fpg_params: dict[str, str] | None = None) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="sim-board-")
        fpg = write_design_fpg(Path(self._tmp.name), fpg_params)
        self.board = BoardWindow(window)
        board = ClockedWindow(self.board, USER_CLK_HZ)  # type: ignore[arg-type]
        self.server = BoardServer(board, host="127.0.0.1", port=0, fpg=fpg)
        self._started = threading.Event()
        self._error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="board-server", daemon=True)

    @property
    def port(self) -> int:
        return self.server.port

    def start(self) -> int:
        self._thread.start()
        if not self._started.wait(10) or self._error is not None:
            raise RuntimeError(f"the board server did not start: {self._error}")
        return self.port

    def _run(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            await self.server.start()
            self._started.set()
            await self._stop.wait()
            await self.server.close()

        try:
            asyncio.run(main())
        except BaseException as exc:
            self._error = exc
            self._started.set()

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)
        self._tmp.cleanup()
