"""What the demo's and the benchmark's stages print: a model being built, a simulation job
that may fail, the TX summaries (each quantity, its value and whether it passed its check).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.console import Console
from rich.table import Table

from . import sim

Check = tuple[str, int, bool]


def print_checks(
    console: Console, title: str, rows: list[Check], goodput_bps: float, problems: list[str]
) -> int:
    """Print the table and the first problems; return how many checks failed."""
    table = Table(title=title)
    table.add_column("quantity")
    table.add_column("value", justify="right")
    table.add_column("check")
    bad = 0
    for name, value, ok in rows:
        bad += not ok
        table.add_row(name, f"{value:,}", "[green]ok" if ok else "[red]mismatch")
    table.add_row("goodput at the MAC model (Gb/s)", f"{goodput_bps / 1e9:.1f}", "")
    console.print(table)
    for p in problems[:5]:
        console.print(f"[red]{p}")
    if bad:
        console.print(f"[red bold]{bad} check(s) failed")
    return bad


def build_model(console: Console, step: str, build: Callable[[], sim.Dut]) -> sim.Dut:
    """Print ``step``, build its Verilator model (or take it from the cache) and say how long
    that took."""
    console.print(step)
    t0 = time.monotonic()
    dut = build()
    console.print(f"      ready in {time.monotonic() - t0:.1f} s")
    return dut


def run_job(
    console: Console, dut: sim.Dut, module: str, env: dict[str, str], verbose: bool
) -> dict | None:
    """:func:`sim.run_job` with its failure printed; None when the simulation failed."""
    try:
        return sim.run_job(dut, module, env, verbose=verbose)
    except sim.SimulationError as exc:
        console.print(f"[red]simulation failed: {exc}")
        return None
