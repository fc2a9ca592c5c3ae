"""Verification code of casper400g (a checkout only; not part of the installed package).

``models/`` (pure-Python models of the DCMAC, the user ports, golden frames and the RX
filter, with thin cocotb adapters), the cocotb harnesses of the core and the register
block (:mod:`.core_harness`, :mod:`.regs_harness`), the simulated AXI4-Lite window behind
the KATCP board server (:mod:`.sim_bus`), the cocotb benches that the demo and the TX
benchmark run (``cocotb_*.py``), and ``softroce/``, a QEMU VM running Linux's own RoCEv2
stack (``rdma_rxe``) that judges RoCEv2 frames (README.md there).
"""
