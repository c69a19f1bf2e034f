"""The default embedding precision: int8 where the CPU multiplies int8 fast, else fp32.

Embedding is almost all of an index build's time. With its MatMul weights quantised to int8
(:mod:`indexes.onnx_export`), the model runs its matrix products as int8 dot products, which
the CPU does several times faster than float32 only when it has instructions for them:
AVX-512 VNNI, AVX-VNNI or AMX on x86. Elsewhere (older x86, ARM) ONNX Runtime emulates them
and int8 gains little or loses, while its vectors still move slightly; there fp32 stays.

The choice is made once per process by looking at the CPU at run time (not at install time:
a wheel or container travels between machines):

- Linux: the ``flags`` line of ``/proc/cpuinfo``, which lists what both the CPU and the
  kernel support (AMX needs the kernel to save its registers);
- elsewhere: numpy's own run-time CPU dispatch table, the one portable probe already
  installed, which knows AVX-512 VNNI.

The default only decides *new* indexes. The precision an index was built with is recorded in
its manifest (``IndexSettings.precision``), and a reopened index embeds its queries at that
precision on any machine: int8 runs everywhere, just slower where it is emulated, and mixing
precisions between documents and queries would move every score.
"""

from __future__ import annotations

import functools
import importlib
import logging
import sys
from pathlib import Path
from typing import Literal

__all__ = ["CPUINFO", "FAST_INT8_FLAGS", "Precision", "cpu_flags", "default_precision", "fast_int8"]

logger = logging.getLogger(__name__)

Precision = Literal["fp32", "int8"]
"""The precisions of the exported encoder (``onnx_export.PRECISIONS``)."""

FAST_INT8_FLAGS = frozenset({"avx512_vnni", "avx_vnni", "amx_int8"})
"""``/proc/cpuinfo`` flags of x86 instructions that multiply int8 in hardware."""

CPUINFO = Path("/proc/cpuinfo")


@functools.cache
def fast_int8() -> bool:
    """Whether this CPU has int8 dot-product instructions (VNNI or AMX); probed once."""
    found = sorted(cpu_flags() & FAST_INT8_FLAGS)
    logger.debug("int8 instructions on this CPU: %s", found or "none")
    return bool(found)


def default_precision() -> Precision:
    """``"int8"`` on CPUs with fast int8 math (:func:`fast_int8`), ``"fp32"`` elsewhere."""
    return "int8" if fast_int8() else "fp32"


def cpu_flags(cpuinfo: Path = CPUINFO) -> frozenset[str]:
    """The CPU's feature flags in ``/proc/cpuinfo``'s spelling (``avx512_vnni``...).

    Where ``cpuinfo`` cannot be read (not Linux, or a sandbox without ``/proc``), only what
    numpy's probe knows: ``avx512_vnni`` or nothing.
    """
    if sys.platform.startswith("linux"):
        try:
            with open(cpuinfo, encoding="ascii", errors="replace") as handle:
                for line in handle:
                    name, _, value = line.partition(":")
                    if name.strip() == "flags":
                        return frozenset(value.split())
        except OSError as exc:
            logger.debug("cannot read %s (%s); asking numpy", cpuinfo, exc)
    try:  # what numpy.show_runtime() prints; no stub declares it
        umath = importlib.import_module("numpy._core._multiarray_umath")
        features = dict(umath.__cpu_features__)
    except (ImportError, AttributeError, TypeError):  # pragma: no cover - numpy moved it
        return frozenset()
    return frozenset({"avx512_vnni"}) if features.get("AVX512VNNI") else frozenset()
