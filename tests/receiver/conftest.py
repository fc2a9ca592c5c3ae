"""Shared helpers of the receiver tests."""

from __future__ import annotations

import sys
from pathlib import Path

# The fault-schedule helper lives next to the tests; make it importable by name.
sys.path.insert(0, str(Path(__file__).resolve().parent))
