"""The checkout's tools around the digital twin (``casper400g_twin``, which installs with
the toolflow): the live chain of the example design into a capture, checked against its
golden model (:mod:`.chain`, as the demo, the notebook and the tests run it), the soak
(:mod:`.soak`) and the twin's benchmark (:mod:`.bench`).
"""
