"""Developer tooling of casper400g (a checkout only; part of no distribution).

Register-map generation (:mod:`.regs_gen`) and the Simulink copies of the blocks'
interfaces (:mod:`.simulink_gen`, both through :mod:`.generated`), the Verilator/cocotb
simulation runner (:mod:`.sim`), the demo (:mod:`.demo`, :mod:`.demo_toolflow`,
:mod:`.toolflow_sim`), the TX benchmark (:mod:`.bench_tx`), the tools around the twin
(:mod:`.twin`: the live chain, the soak, the benchmark) and the Octave design API
(``octave/``). Its command line is ``python -m casper400g_dev`` (:mod:`.cli`).
"""
