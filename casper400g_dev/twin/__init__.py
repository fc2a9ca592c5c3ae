"""The digital twin: a design's generated ``top.v`` run as a live 400GbE board.

``casper400g twin <builddir>`` Verilates the design with the C++ harness (``harness/``:
clocks, AXI4-Lite master, the DCMAC model of ``verification/models/cpp/``, network ports,
the link's fault model) — :mod:`.build`; runs it as a subprocess driven over a control
socket — :mod:`.harness`; serves its bus over KATCP with ``board-server`` so casperfpga
configures it as a board (``?progdev`` of the design's ``.fpg`` starts the twin of that
design) — :mod:`.board`; and gives its MAC a real network interface, a TAP device in a
network namespace of its own (UDP tunnel or pcap without privileges) — :mod:`.netns`.
"""
