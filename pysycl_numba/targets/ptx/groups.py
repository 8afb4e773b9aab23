"""Barriers, fences, sub-groups (warps) and work-group collectives for PTX.

(Definitions registered with :mod:`.builtins`.)
"""

from __future__ import annotations
