"""casperfpga_ext: casperfpga-compatible control of the casper400g 400GbE core.

`fhg_regmap` is the register map generated from the core's SystemRDL description;
`addressing` parses MAC/IP/port values in the forms casperfpga users write; `transport`
reaches the board's devices (mmap or KATCP; big-endian words, as casperfpga's ``?read``); `fpg`
reads and writes .fpg headers; `gbe` is the core with casperfpga's Gbe API; `fpga` ties
them together; importing the package registers the core with casperfpga when casperfpga
is installed (``CASPERFPGA_REGISTERED``); `tap` answers ARP and ICMP echo in software
through the core's CPU buffers (``FourHundredGbe.tap_start``). The KATCP server that runs
on the board is a package of its own, ``casper400g_board_server``.
"""

from . import addressing, fhg_regmap
from .fpg import FpgBlock, FpgDevice, FpgHeader, GbeInfo, find_gbes, parse_fpg, write_fpg_header
from .fpga import DeviceContainer, Fpga, register_on_import, register_with_casperfpga
from .gbe import FourHundredGbe, ReadBackError
from .tap import Tap, TapError
from .transport import KatcpError, KatcpTransport, MmapTransport, Transport, read_uint, write_uint

__version__ = "0.1.0"

# casperfpga builds FourHundredGbe for every xps:fourhundred_gbe block (fpga.gbes.gbe0).
CASPERFPGA_REGISTERED = register_on_import()

__all__ = [
    "CASPERFPGA_REGISTERED",
    "DeviceContainer",
    "FourHundredGbe",
    "FpgBlock",
    "FpgDevice",
    "FpgHeader",
    "Fpga",
    "GbeInfo",
    "KatcpError",
    "KatcpTransport",
    "MmapTransport",
    "ReadBackError",
    "Tap",
    "TapError",
    "Transport",
    "__version__",
    "addressing",
    "fhg_regmap",
    "find_gbes",
    "parse_fpg",
    "read_uint",
    "register_with_casperfpga",
    "write_fpg_header",
    "write_uint",
]
