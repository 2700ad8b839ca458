"""Small statistics for the benchmark: medians, IQRs, and a stable clock."""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence

import attrs

__all__ = ["Sample", "cpu", "iqr", "median", "now"]

now = time.perf_counter
cpu = time.process_time


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def iqr(values: Sequence[float]) -> float:
    """The interquartile range (Q3 - Q1); 0 for fewer than two values."""
    if len(values) < 2:
        return 0.0
    q1, _q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q3 - q1


@attrs.define
class Sample:
    """Per-operation times (seconds) from repeated runs of one row on one stack."""

    values: list[float] = attrs.field(factory=list[float])

    def add(self, value: float) -> None:
        self.values.append(value)

    @property
    def median(self) -> float:
        return median(self.values) if self.values else float("nan")

    @property
    def spread(self) -> float:
        """IQR relative to the median (the row's noise)."""
        if not self.values or self.median == 0:
            return float("nan")
        return iqr(self.values) / self.median
