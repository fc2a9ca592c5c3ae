// SPDX-License-Identifier: GPL-3.0-or-later
// The 400GbE block's RTL: fhg_core and everything below it, the start-up configuration
// (fhg_gbe_boot) and the DCMAC link bring-up (fhg_link_bringup) that the yellow block places
// beside it. The one source list: the yellow block, the simulations (casper400g_dev/sim.py),
// the Yosys estimate (mlib_devel_400g/synth.py) and the lint read it, and Verilator takes it
// as is (`verilator -F fhg_core.f`). One path per line, relative to this file; packages
// before the modules that import them.

regs/fhg_regs_pkg.sv
rx/fhg_rx_pkg.sv
tx/fhg_icrc_pkg.sv
tx/fhg_tx_buf_pkg.sv
common/fhg_bus_pkg.sv
regs/fhg_regs.sv

fhg_core.sv
fhg_gbe_boot.sv

cdc/fhg_sync_bits.sv
cdc/fhg_cdc_snapshot.sv
cdc/fhg_pulse_sync.sv
cdc/fhg_cfg_sync.sv
cdc/fhg_cdc_delta.sv
cdc/fhg_async_fifo.sv

stats/fhg_stats_rx.sv
stats/fhg_stats_tx.sv
stats/fhg_stats_rate.sv

common/fhg_ram_sdp.sv
common/fhg_ram_tdp.sv
common/fhg_mpush_fifo.sv

tx/fhg_tx_path.sv
tx/fhg_tx_ctl_arb.sv
tx/fhg_tx_header.sv
tx/fhg_tx_csum_tree.sv
tx/fhg_tx_packer.sv
tx/fhg_tx_intake.sv
tx/fhg_tx_writer.sv
tx/fhg_tx_cpu.sv
tx/fhg_tx_icrc.sv
tx/fhg_rdma_ctl.sv
tx/fhg_rdma_tx.sv
tx/fhg_rdma_sf.sv
tx/fhg_rdma_framer.sv
tx/fhg_rdma_writer.sv

rx/fhg_rx_path.sv
rx/fhg_rx_unpack.sv
rx/fhg_rx_lane.sv
rx/fhg_rx_lane_fifo.sv
rx/fhg_rx_merge.sv
rx/fhg_rx_frame_fifo.sv
rx/fhg_rx_cpu.sv
rx/fhg_arp_responder.sv
rx/fhg_rx_rdma_credit.sv

link/fhg_link_bringup.sv
