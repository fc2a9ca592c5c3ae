"""Verification models for the 400GbE core.

Each model has a pure-Python core (usable from plain pytest, no simulator) and, where it
talks to RTL, a thin cocotb adapter. cocotb is imported only by the adapters, so the cores
work in an environment without the simulation extras.

* :mod:`.dcmac_tx` - DCMAC 400G TX client interface: protocol checker, line-rate pacer,
  reference segment packer, cocotb monitor.
* :mod:`.user_tx` - the core's user TX port: word packing helpers and a cocotb driver.
* :mod:`.frames` - golden UDP/IPv4 frames (scapy), next-hop MAC selection, the example
  stream's payload and throughput formulas.
* :mod:`.roce` - RoCEv2 RDMA WRITE frames (BTH/RETH/ImmDt/ICRC): builder, checker with a
  reason per rejection, WRITE ONLY splitting at the path MTU, line goodput.
* :mod:`.dcmac_rx` - DCMAC 400G RX client interface: segment packer (two SOPs per cycle,
  FCS kept or stripped, err, line-rate pacing), bus reassembly, cocotb driver.
* :mod:`.user_rx` - the core's user RX port: datagram reassembly, rx_ack patterns, cocotb
  monitor.
* :mod:`.rx_expect` - independent model of the RX filter (docs/design/core.md §3) with per-reason
  verdicts, and a labelled random frame mix.
* :mod:`.dcmac_regs` - DCMAC register port, latching status registers, GT reset-done flags
  and a link partner, with an AXI4-Lite slave adapter: the counterpart of fhg_link_bringup.
"""
