"""casper400g_board_server: the KATCP server that runs on the board.

casperfpga talks KATCP to a server on the board; on the Versal this package plays that
part (the ``casper400g-board-server`` command, :mod:`.cli`): `server` maps the PL's AXI
window (``/dev/mem``, a UIO device, or a regular file) and serves the ``?register``
devices of a ``.fpg`` (tcpborphserver's requests, bounded by a ``ServerPolicy``);
`sensors` are each 400GbE core's link state and counters as KATCP sensors; `katcp_lines`
cuts the byte stream into lines. It runs on the Pythons a board has (3.8 and later), on
the standard library and ``casperfpga_ext`` (the register map, ``.fpg`` parsing, the
mmap transport).
"""

from .server import BoardServer, ClockedWindow, MmapWindow, RequestError, ServerPolicy, Window

__version__ = "0.1.0"

__all__ = [
    "BoardServer",
    "ClockedWindow",
    "MmapWindow",
    "RequestError",
    "ServerPolicy",
    "Window",
    "__version__",
]
