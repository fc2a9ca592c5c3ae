"""The example design's generated top.v simulated whole (generic400g platform): host bus,
interconnect, start-up configuration, software registers, packet generator (example stream
and tone, the tone against verification/tone_model.py), core and the DCMAC model. One
simulation, one pytest result per cocotb test."""

from __future__ import annotations

import pytest

from casper400g_dev import checkout, sim, toolflow_sim

COCOTB_MODULE = checkout.VERIFICATION_DIR / f"{toolflow_sim.COCOTB_MODULE}.py"
NAMES = sim.cocotb_test_names(COCOTB_MODULE)


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, sim.TestOutcome]:
    build = toolflow_sim.build_example(tmp_path_factory.mktemp("top"))
    dut = toolflow_sim.compile_top(build)
    return sim.run(
        dut,
        toolflow_sim.COCOTB_MODULE,
        COCOTB_MODULE.parent,
        extra_env=toolflow_sim.env(toolflow_sim.config(build)),
    )


def test_every_cocotb_test_was_collected() -> None:
    assert set(NAMES) == {
        "bus_errors_and_read_only_registers",
        "sends_the_example_stream",
        "sends_the_tone",
    }


@pytest.mark.parametrize("name", NAMES)
def test_generated_top(outcomes: dict[str, sim.TestOutcome], name: str) -> None:
    sim.assert_passed(outcomes, name)
