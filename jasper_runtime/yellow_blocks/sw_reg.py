"""``xps:sw_reg``: a 32-bit software register, from or to the processor.

Gateways: ``<fullname>_user_data_out`` (From Processor, driven by software) or
``<fullname>_user_data_in`` (To Processor, read by software). One AXI4-Lite word named
by ``unique_name``; HDL ``fhg_sw_reg`` (crosses between the bus and the user clock).
"""

from typing import Any, ClassVar

from memory import Register

from .yellow_block import YellowBlock
from .yellow_block_typecodes import TYPECODE_SWREG

IO_DIRS = ("From Processor", "To Processor")


class sw_reg(YellowBlock):
    # The Simulink mask's field description travels to casperfpga in ?meta lines, which
    # builds the register's fields from mode/names/bitwidths/arith_types/bin_pts.
    PARAMETERS: ClassVar[dict[str, Any]] = {
        "io_dir": "From Processor",
        "init_val": 0,
        "mode": "one value",
        "names": "reg",
        "bitwidths": 32,
        "arith_types": 0,
        "bin_pts": 0,
    }

    def initialize(self) -> None:
        self.typecode = TYPECODE_SWREG
        self.io_dir = str(self.blk.get("io_dir", "From Processor"))
        self.to_processor = self.io_dir == "To Processor"
        self.add_source("fhg_toolflow/fhg_sw_reg.sv")
        self.add_source("fhg_toolflow/fhg_axil_regport.sv")
        self.add_source("fourhundred_gbe/common/fhg_bus_pkg.sv")
        self.add_source("fourhundred_gbe/cdc/fhg_cfg_sync.sv")
        self.add_source("fourhundred_gbe/cdc/fhg_cdc_snapshot.sv")
        self.add_source("fourhundred_gbe/cdc/fhg_sync_bits.sv")

    def drc(self) -> None:
        if self.io_dir not in IO_DIRS:
            raise self.error(f"io_dir {self.io_dir!r} is not one of {', '.join(IO_DIRS)}")
        try:
            value = int(self.blk.get("init_val", 0))
        except (TypeError, ValueError):
            raise self.error(f"init_val {self.blk.get('init_val')!r} is not an integer") from None
        if not 0 <= value <= 0xFFFFFFFF:
            raise self.error(f"init_val {value} does not fit 32 unsigned bits")
        if self.to_processor and value:
            raise self.error("init_val applies to From Processor registers only")
        self.init_val = value
        self._check_fields()

    def _check_fields(self) -> None:
        p = {k: self.blk.get(k, v) for k, v in self.PARAMETERS.items()}
        modes = ("one value", "fields of equal size", "fields of arbitrary size")
        if p["mode"] not in modes:
            raise self.error(f"mode {p['mode']!r} is not one of {', '.join(modes)}")
        names = str(p["names"]).strip("[] ").split()
        try:
            widths = [int(w) for w in str(p["bitwidths"]).strip("[] ").split()]
        except ValueError:
            raise self.error(f"bitwidths {p['bitwidths']!r} are not integers") from None
        if not names or not widths or any(w < 1 for w in widths):
            raise self.error(f"names {p['names']!r} / bitwidths {p['bitwidths']!r} are empty")
        if p["mode"] == "one value" and len(names) != 1:
            raise self.error(f"mode 'one value' takes one name, not {p['names']!r}")
        if len(widths) == 1:
            widths = widths * len(names)
        if len(widths) != len(names):
            raise self.error(
                f"{len(names)} field names but {len(widths)} bitwidths ({p['bitwidths']!r})"
            )
        if sum(widths) > 32:
            raise self.error(f"fields {p['names']!r} need {sum(widths)} bits, more than 32")
        self.params = p

    def meta(self) -> dict[str, str]:
        return {k: str(v) for k, v in self.params.items()}

    def gateways(self) -> list[tuple[str, str, int]]:
        if self.to_processor:
            return [("user_data_in", "in", 32)]
        return [("user_data_out", "out", 32)]

    def modify_top(self, top) -> None:  # noqa: ANN001
        mode = "r" if self.to_processor else "rw"
        top.add_axi4lite_interface(
            regname=self.unique_name,
            mode=mode,
            nbytes=4,
            default_val=self.init_val,
            memory_map=[Register(self.unique_name, offset=0, mode=mode, default_val=self.init_val)],
            typecode=self.typecode,
        )
        inst = top.get_instance(entity="fhg_sw_reg", name=self.fullname)
        inst.add_parameter("TO_PROCESSOR", "1'b1" if self.to_processor else "1'b0")
        inst.add_parameter("INIT_VAL", f"32'h{self.init_val:08x}")
        inst.add_parameter("ADDR_W", 2)
        inst.add_port("axil_clk", "axil_clk", parent_sig=False)
        inst.add_port("axil_rst_n", "axil_rst_n", parent_sig=False)
        inst.add_axi4lite_slave(self.unique_name)
        inst.add_port("user_clk", "user_clk", parent_sig=False)
        if self.to_processor:
            inst.add_port("user_data_in", f"{self.fullname}_user_data_in", width=32)
            inst.add_port("user_data_out", f"unused_{self.fullname}_out", width=32)
        else:
            inst.add_port("user_data_in", "32'h0", parent_sig=False)
            inst.add_port("user_data_out", f"{self.fullname}_user_data_out", width=32)
