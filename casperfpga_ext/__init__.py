"""casperfpga_ext: casperfpga-compatible control of the casper400g 400GbE core.

`fhg_regmap` is the register map generated from the core's SystemRDL description;
`addressing` parses MAC/IP/port values in the forms casperfpga users write.
"""

from . import addressing, fhg_regmap

__all__ = ["addressing", "fhg_regmap"]
