"""How many CPUs this process may use."""
from __future__ import annotations

import os


def usable_cpus() -> int:
    """The CPUs this process may run on: honours container and `taskset` limits where the OS
    tells them (Linux), else every CPU of the machine."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1
