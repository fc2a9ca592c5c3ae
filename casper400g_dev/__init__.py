"""Developer tooling of casper400g (a checkout only; not part of the installed package).

Register-map generation (:mod:`.regs_gen`), the Verilator/cocotb simulation runner
(:mod:`.sim`), the demo (:mod:`.demo`, :mod:`.demo_toolflow`, :mod:`.toolflow_sim`), the TX
benchmark (:mod:`.bench_tx`) and the Octave design API (``octave/``). The ``casper400g``
CLI imports these lazily for its developer subcommands.
"""
