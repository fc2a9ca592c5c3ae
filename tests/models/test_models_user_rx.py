"""User RX port monitor: reassembly rules, rx_ack patterns, overrun handling."""

from __future__ import annotations

import random
from collections import deque

import pytest

from verification.models.user_rx import (
    AckPattern,
    RxDatagram,
    RxWordAssembler,
    UserRxMonitor,
    UserRxProtocolError,
)
from verification.models.user_tx import ALL_BYTES, payload_to_words

META = (0x0A000002, 4000, 0x0A000001, 7148)


def feed(
    asm: RxWordAssembler, payload: bytes, meta: tuple[int, int, int, int] = META, bad: bool = False
) -> RxDatagram | None:
    words = payload_to_words(payload)
    out = None
    for i, (data, be) in enumerate(words):
        last = i == len(words) - 1
        out = asm.word(data, be, int(last), int(bad and last), *meta, cycle=i)
        assert (out is not None) == last
    return out


@pytest.mark.parametrize("n", [1, 127, 128, 129, 255, 256, 8192, 8193])
def test_reassembles_exact_payload(n: int):
    p = random.Random(n).randbytes(n)
    d = feed(RxWordAssembler(), p)
    assert d is not None
    assert d.payload == p and (d.src_ip, d.src_port, d.dst_ip, d.dst_port) == META
    assert not d.bad and d.words == -(-n // 128)


def test_first_byte_is_msb_of_word():
    asm = RxWordAssembler()
    d = asm.word(0xAB << 1016, 1 << 127, 1, 0, *META)
    assert d is not None and d.payload == b"\xab"


def test_bad_flag_on_last_word():
    d = feed(RxWordAssembler(), b"x" * 300, bad=True)
    assert d is not None and d.bad


def test_metadata_change_inside_datagram_raises():
    asm = RxWordAssembler()
    words = payload_to_words(bytes(300))
    asm.word(*words[0], 0, 0, *META)
    with pytest.raises(UserRxProtocolError, match="metadata"):
        asm.word(*words[1], 0, 0, META[0], META[1], META[2], META[3] + 1)
    # Each field counts, also on the final word.
    for k in range(4):
        asm = RxWordAssembler()
        asm.word(*words[0], 0, 0, *META)
        asm.word(*words[1], 0, 0, *META)
        changed = list(META)
        changed[k] ^= 1
        with pytest.raises(UserRxProtocolError):
            asm.word(*words[2], 1, 0, *changed)


def test_next_datagram_may_change_metadata():
    asm = RxWordAssembler()
    feed(asm, b"a" * 10)
    d = feed(asm, b"b" * 10, (1, 2, 3, 4))
    assert d is not None and (d.src_ip, d.src_port, d.dst_ip, d.dst_port) == (1, 2, 3, 4)


def test_byte_enable_rules():
    asm = RxWordAssembler()
    with pytest.raises(UserRxProtocolError, match="before the last"):
        asm.word(0, ALL_BYTES >> 1 << 1, 0, 0, *META)
    with pytest.raises(UserRxProtocolError, match="contiguous"):
        RxWordAssembler().word(0, 0b101 << 125, 1, 0, *META)
    # no byte enabled: only as the single word of an empty datagram (UDP length 8)
    empty = RxWordAssembler().word(0, 0, 1, 0, *META)
    assert empty is not None and empty.payload == b"" and empty.words == 1
    asm = RxWordAssembler()
    asm.word(*payload_to_words(bytes(200))[0], 0, 0, *META)
    with pytest.raises(UserRxProtocolError, match="selects no byte"):
        asm.word(0, 0, 1, 0, *META)


def test_bad_without_eof():
    w = payload_to_words(bytes(200))
    with pytest.raises(UserRxProtocolError, match="rx_bad_frame"):
        RxWordAssembler().word(*w[0], 0, 1, *META)
    assert RxWordAssembler(strict_bad=False).word(*w[0], 0, 1, *META) is None


def test_ack_patterns():
    assert [AckPattern().next() for _ in range(5)] == [1] * 5
    t = AckPattern("throttle", on=2, off=3)
    assert [t.next() for _ in range(10)] == [1, 1, 0, 0, 0, 1, 1, 0, 0, 0]
    r1 = AckPattern("random", prob=0.3, seed=5)
    r2 = AckPattern("random", prob=0.3, seed=5)
    s1 = [r1.next() for _ in range(10_000)]
    assert s1 == [r2.next() for _ in range(10_000)]
    assert abs(sum(s1) / len(s1) - 0.3) < 0.02
    j = AckPattern("throttle", on=4, off=4, jitter=True, seed=1)
    sj = [j.next() for _ in range(10_000)]
    assert 0.35 < sum(sj) / len(sj) < 0.65
    with pytest.raises(ValueError):
        AckPattern("sometimes")
    with pytest.raises(ValueError):
        AckPattern("random", prob=0.0)


# --- adapter with stand-in handles ------------------------------------------------------


class Sig:
    def __init__(self, value: int = 0) -> None:
        self.value = value


NAMES = [
    "rx_data",
    "rx_valid",
    "rx_byte_enable",
    "rx_source_ip",
    "rx_source_port",
    "rx_dest_ip",
    "rx_dest_port",
    "rx_end_of_frame",
    "rx_bad_frame",
    "rx_ack",
    "rx_overrun",
    "rx_overrun_ack",
]


class FakeCore:
    """A first-word-fall-through FIFO of words in front of the monitor."""

    def __init__(self, prefix: str = "") -> None:
        for n in NAMES:
            setattr(self, prefix + n, Sig())
        self.p = prefix
        self.words: deque[tuple[int, ...]] = deque()

    def sig(self, n: str) -> Sig:
        return getattr(self, self.p + n)

    def load(self, payload: bytes, meta: tuple[int, int, int, int], bad: bool) -> None:
        ws = payload_to_words(payload)
        for i, (d, be) in enumerate(ws):
            last = i == len(ws) - 1
            self.words.append((d, be, int(last), int(bad and last), *meta))

    def present(self) -> None:
        if not self.words:
            self.sig("rx_valid").value = 0
            return
        d, be, eof, bad, sip, sport, dip, dport = self.words[0]
        for n, v in zip(NAMES[:9], (d, 1, be, sip, sport, dip, dport, eof, bad), strict=True):
            self.sig(n).value = v

    def edge(self, ack: int) -> None:
        if self.words and ack:
            self.words.popleft()

    def cycle(self, mon: UserRxMonitor) -> None:
        self.present()
        ack = self.sig("rx_ack").value  # what the monitor drove for this cycle
        mon.sample()  # rising edge: the monitor takes the word and sets the next rx_ack
        self.edge(ack)


@pytest.mark.parametrize("ack", ["always", "random", "throttle"])
def test_monitor_with_back_pressure(ack: str):
    core = FakeCore("eth_")
    mon = UserRxMonitor(core, "eth_", Sig(), ack=ack, seed=3, start=False)
    rng = random.Random(2)
    sent = []
    for i in range(60):
        p = rng.randbytes(rng.randint(1, 1000))
        meta = (rng.randrange(1 << 32), rng.randrange(1 << 16), 0x0A000001, 7148)
        core.load(p, meta, i % 5 == 0)
        sent.append((p, meta, i % 5 == 0))
    for _ in range(20_000):
        core.cycle(mon)
        if not core.words:
            break
    got = [(d.payload, (d.src_ip, d.src_port, d.dst_ip, d.dst_port), d.bad) for d in mon.datagrams]
    assert got == sent
    st = mon.stats
    assert st.datagrams == 60 and st.bad_frames == 12
    assert (st.held_cycles > 0) == (ack != "always")


def test_monitor_pulses_overrun_ack():
    core = FakeCore()
    mon = UserRxMonitor(core, clock=Sig(), start=False)
    ovr = core.sig("rx_overrun")
    oack = core.sig("rx_overrun_ack")
    seen = []
    for cyc in range(12):
        ovr.value = int(2 <= cyc < 7)
        mon.sample()
        seen.append(oack.value)
    # High for one cycle, low for one, while the flag stays up; never without it.
    assert seen == [0, 0, 1, 0, 1, 0, 1, 0, 0, 0, 0, 0]
    assert mon.stats.overrun_events == 1 and mon.stats.overrun_cycles == 5
    quiet = FakeCore()
    off = UserRxMonitor(quiet, clock=Sig(), start=False, auto_overrun_ack=False)
    quiet.sig("rx_overrun").value = 1
    for _ in range(4):
        off.sample()
        assert quiet.sig("rx_overrun_ack").value == 0
    assert off.stats.overrun_events == 1 and off.stats.overrun_cycles == 4


def test_monitor_reset_discards_partial_datagram():
    core = FakeCore()
    rst = Sig(0)
    mon = UserRxMonitor(core, clock=Sig(), reset=rst, start=False)
    core.load(bytes(300), META, False)
    core.cycle(mon)
    rst.value = 1
    mon.sample()
    assert core.sig("rx_ack").value == 0
    rst.value = 0
    core.words.clear()
    core.load(b"fresh", META, False)
    for _ in range(4):
        core.cycle(mon)
    assert [d.payload for d in mon.datagrams] == [b"fresh"]
