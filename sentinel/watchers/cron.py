"""Five-field cron expressions (minute hour day-of-month month day-of-week), local time.

    Cron.parse("*/5 9-17 * * 1-5").next_after(time.time()) -> the next matching minute, as epoch seconds

Each field takes `*`, `N`, `A-B`, `*/S`, `A-B/S` and comma lists; day-of-week 0 and 7 are Sunday.
When both day fields are restricted, either matching is enough (as in cron).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

FIELDS = (("minute", 0, 59), ("hour", 0, 23), ("day-of-month", 1, 31), ("month", 1, 12), ("day-of-week", 0, 7))
HORIZON_MIN = 366 * 24 * 60


def _field(text: str, name: str, low: int, high: int) -> frozenset[int]:
    values: set[int] = set()
    for part in text.split(","):
        span, _, step_text = part.partition("/")
        try:
            step = int(step_text) if step_text else 1
            if span == "*":
                start, end = low, high
            elif "-" in span:
                start, end = (int(x) for x in span.split("-", 1))
            else:
                start = end = int(span)
        except ValueError:
            raise ValueError(f"cron {name} field {text!r} is not a number, range, list or step") from None
        if step < 1 or not low <= start <= end <= high:
            raise ValueError(f"cron {name} field {text!r} is outside {low}-{high}")
        values.update(range(start, end + 1, step))
    return frozenset(values)


@dataclass(frozen=True)
class Cron:
    minute: frozenset[int]
    hour: frozenset[int]
    dom: frozenset[int]
    month: frozenset[int]
    dow: frozenset[int]
    dom_any: bool
    dow_any: bool

    @classmethod
    def parse(cls, text: str) -> "Cron":
        parts = text.split()
        if len(parts) != 5:
            raise ValueError(f"cron {text!r} needs 5 fields (minute hour day-of-month month day-of-week)")
        sets = [_field(p, name, lo, hi) for p, (name, lo, hi) in zip(parts, FIELDS)]
        dow = frozenset(d % 7 for d in sets[4])
        return cls(sets[0], sets[1], sets[2], sets[3], dow, parts[2] == "*", parts[4] == "*")

    def _day(self, when: dt.datetime) -> bool:
        dom, dow = when.day in self.dom, (when.isoweekday() % 7) in self.dow
        if self.dom_any or self.dow_any:
            return dom and dow
        return dom or dow

    def next_after(self, t: float) -> float:
        when = dt.datetime.fromtimestamp(t).replace(second=0, microsecond=0) + dt.timedelta(minutes=1)
        for _ in range(HORIZON_MIN):
            if when.month in self.month and self._day(when) and when.hour in self.hour and when.minute in self.minute:
                return when.timestamp()
            when += dt.timedelta(minutes=1)
        raise ValueError("cron expression matches no minute within a year")
