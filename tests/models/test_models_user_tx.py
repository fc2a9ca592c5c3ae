"""User TX port: word packing helpers and the driver's per-cycle behaviour."""

from __future__ import annotations

import random

import pytest

from verification.models.user_tx import (
    UserTxDriver,
    byte_enable_for,
    payload_to_words,
    valid_bytes,
    words_to_payload,
)

ONES = int("1" * 128, 2)


def test_first_byte_is_msb_and_byte_enable_from_msb_end():
    ((data, be),) = payload_to_words(b"\x01\x02")
    assert data >> 1016 == 0x01  # tx_data[1023:1016]
    assert (data >> 1008) & 0xFF == 0x02
    assert data & ((1 << 1008) - 1) == 0
    assert be == int("11" + "0" * 126, 2)


def test_word_boundaries():
    assert payload_to_words(bytes(128)) == [(0, ONES)]
    words = payload_to_words(bytes(range(128)) + b"\xaa")
    assert len(words) == 2
    assert words[0] == (int.from_bytes(bytes(range(128)), "big"), ONES)
    assert words[1] == (0xAA << 1016, 1 << 127)
    assert len(payload_to_words(bytes(8192))) == 64
    last = payload_to_words(bytes(8193))[-1]
    assert last[1] == 1 << 127


@pytest.mark.parametrize("n", [1, 2, 127, 128, 129, 255, 256, 1472, 8192, 8972])
def test_round_trip(n: int):
    payload = random.Random(n).randbytes(n)
    words = payload_to_words(payload)
    assert len(words) == -(-n // 128)
    assert all(be == ONES for _, be in words[:-1])
    assert words_to_payload(words) == payload


def test_helpers_reject_bad_input():
    with pytest.raises(ValueError):
        payload_to_words(b"")
    with pytest.raises(ValueError):
        words_to_payload([])
    with pytest.raises(ValueError):  # gap: not contiguous from the MSB end
        words_to_payload([(0, (1 << 127) | (1 << 125))])
    with pytest.raises(ValueError):  # contiguous but anchored at the LSB end
        words_to_payload([(0, 0b111)])
    with pytest.raises(ValueError):
        words_to_payload([(0, 0)])
    with pytest.raises(ValueError):  # partial word before the last
        words_to_payload([(0, 1 << 127), (0, ONES)])
    with pytest.raises(ValueError):
        words_to_payload([(1 << 1024, ONES)])
    with pytest.raises(ValueError):
        byte_enable_for(0)
    assert valid_bytes(int("1" * 5 + "0" * 123, 2)) == 5


# --- driver with stand-in handles --------------------------------------------------------


class Sig:
    def __init__(self, value: int = 0) -> None:
        self.value = value


class FakeCore:
    """Samples the user TX port like the core's input register would."""

    def __init__(self, prefix: str = "") -> None:
        self.p = prefix
        for port in (
            "tx_data",
            "tx_valid",
            "tx_byte_enable",
            "tx_dest_ip",
            "tx_dest_port",
            "tx_end_of_frame",
            "tx_afull",
            "user_clk",
        ):
            setattr(self, prefix + port, Sig())
        self.frames: list[tuple[bytes, int, int]] = []
        self.valid_cycles: list[int] = []
        self._words: list[tuple[int, int]] = []

    def sig(self, port: str) -> Sig:
        return getattr(self, self.p + port)

    def clock(self, cycle: int) -> None:
        if not self.sig("tx_valid").value:
            return
        self.valid_cycles.append(cycle)
        self._words.append((self.sig("tx_data").value, self.sig("tx_byte_enable").value))
        if self.sig("tx_end_of_frame").value:
            payload = words_to_payload(self._words)
            ip, port = self.sig("tx_dest_ip").value, self.sig("tx_dest_port").value
            self.frames.append((payload, ip, port))
            self._words = []


def run_driver(
    drv: UserTxDriver, core: FakeCore, cycles: int, afull: dict[int, int] | None = None
) -> None:
    for c in range(cycles):
        if afull and c in afull:
            core.sig("tx_afull").value = afull[c]
        drv.tick()  # rising edge c: the driver sets up cycle c
        core.clock(c)  # rising edge c + 1: the core samples cycle c


def test_driver_back_to_back():
    core = FakeCore("blk_")
    drv = UserTxDriver(core, "blk_", start=False)
    jobs = [
        (random.Random(i).randbytes(n), 0x0A000000 + i, 4000 + i)
        for i, n in enumerate([1, 128, 129, 1000, 8192])
    ]
    for j in jobs:
        drv.send_nowait(*j)
    total_words = sum(-(-len(p) // 128) for p, _, _ in jobs)
    run_driver(drv, core, total_words + 5)
    assert core.frames == jobs
    assert core.valid_cycles == list(range(total_words))  # no bubble anywhere
    assert drv.stats.frames == 5 and drv.stats.words == total_words
    assert drv.pending == 0


def test_driver_dest_only_valid_with_end_of_frame():
    core = FakeCore()
    drv = UserTxDriver(core, start=False)
    drv.send_nowait(bytes(300), 0x0A000002, 1234)
    seen = []
    for c in range(3):
        drv.tick()
        seen.append((core.tx_end_of_frame.value, core.tx_dest_ip.value, core.tx_dest_port.value))
        core.clock(c)
    assert seen[2] == (1, 0x0A000002, 1234)
    assert all(eof == 0 and ip != 0x0A000002 and port != 1234 for eof, ip, port in seen[:2])


def test_driver_stops_between_frames_while_afull():
    core = FakeCore()
    drv = UserTxDriver(core, start=False)
    for i in range(3):
        drv.send_nowait(bytes([i]) * 384, i, i)  # 3 words each
    # afull rises during the first frame, stays high for 10 cycles
    run_driver(drv, core, 30, afull={1: 1, 11: 0})
    assert [f[1] for f in core.frames] == [0, 1, 2]
    # frame 0 is finished (cycles 0-2); frame 1 waits until afull has been seen low
    assert core.valid_cycles[:3] == [0, 1, 2]
    assert core.valid_cycles[3] == 11
    assert drv.stats.afull_cycles == 8


def test_driver_random_idles_are_seeded():
    def trace(seed: int) -> tuple[list[int], list[tuple[bytes, int, int]]]:
        core = FakeCore()
        drv = UserTxDriver(core, idle_prob=0.3, seed=seed, start=False)
        for i in range(6):
            drv.send_nowait(random.Random(i).randbytes(100 + 150 * i), i, i)
        run_driver(drv, core, 200)
        return core.valid_cycles, core.frames

    a, frames = trace(1)
    assert trace(1)[0] == a and trace(2)[0] != a
    n_words = sum(-(-(100 + 150 * i) // 128) for i in range(6))
    assert len(a) == n_words
    # with p = 0.3 there must be gaps, including inside frames
    assert a[-1] + 1 > n_words
    assert [f[0] for f in frames] == [random.Random(i).randbytes(100 + 150 * i) for i in range(6)]


def test_driver_idle_only_between_frames():
    core = FakeCore()
    drv = UserTxDriver(core, idle_prob=0.5, idle_in_frame=False, seed=3, start=False)
    for i in range(5):
        drv.send_nowait(bytes(600), i, i)  # 5 words
    run_driver(drv, core, 200)
    v = core.valid_cycles
    assert len(v) == 25
    for k in range(5):
        words = v[5 * k : 5 * k + 5]
        assert words == list(range(words[0], words[0] + 5))


def test_driver_rejects_bad_destination():
    drv = UserTxDriver(FakeCore(), start=False)
    with pytest.raises(ValueError):
        drv.send_nowait(b"x", 1 << 32, 1)
    with pytest.raises(ValueError):
        drv.send_nowait(b"x", 1, 65536)
    with pytest.raises(ValueError):
        drv.send_nowait(b"", 1, 1)


def test_driver_restarts_a_frame_cut_by_reset():
    core = FakeCore()
    rst = Sig(0)
    drv = UserTxDriver(core, reset=rst, start=False)
    payload = bytes(range(256)) * 2  # 4 words
    drv.send_nowait(payload, 9, 9)
    drv.tick()
    core.clock(0)
    drv.tick()
    core.clock(1)
    rst.value = 1
    drv.tick()
    assert core.tx_valid.value == 0
    rst.value = 0
    core._words = []  # what the reset flushed inside the core
    run_driver(drv, core, 6)
    assert core.frames == [(payload, 9, 9)]
