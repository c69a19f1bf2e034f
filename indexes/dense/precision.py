"""The default embedding precision: bf16 where the CPU has AMX, int8 where it has VNNI, else fp32.

Embedding is almost all of an index build's time, and the CPU's matrix instructions decide
which precision is fast. The choice is made at run time (not at install time: a wheel or
container travels between machines), once per process:

- ``bf16`` where the CPU has AMX (``amx_bf16``): OpenVINO runs the fp32 file with bfloat16
  matrix products on the AMX tiles. On a Xeon with AMX it embedded about 4x as many chunks
  per CPU-second as ``SentenceTransformer.encode`` and its vectors keep a cosine of 0.9999
  and more to fp32's (int8's: about 0.995), so it is both the fastest and the most
  faithful of the fast paths measured (``eval/bench_build.py``, ``eval/check_precision.py``).
- ``int8`` where the CPU has int8 dot products but no AMX (AVX-512 VNNI, AVX-VNNI): ONNX
  Runtime's fused, dynamically quantised model (:mod:`indexes.dense.onnx_export`), about
  twice fp32's speed there.
- ``fp32`` elsewhere (older x86, ARM), where both would be emulated.

The flags come from ``/proc/cpuinfo`` on Linux (it lists what both the CPU and the kernel
support: AMX needs the kernel to save its registers); elsewhere from numpy's own run-time
CPU dispatch table, the one portable probe already installed, which knows AVX-512 VNNI (and
not AMX, so such machines get ``int8``).

The default only decides *new* indexes. The precision an index was built with is recorded in
its manifest (``IndexSettings.precision``), and a reopened index embeds its queries at that
precision on any machine: int8 and bf16 run everywhere (emulated where the instructions are
missing: slower, and OpenVINO then computes bf16 in float32, which moves a vector by less
than bf16 itself does), and mixing precisions between documents and queries would move
every score.
"""

from __future__ import annotations

import functools
import importlib
import logging
import sys
from pathlib import Path
from typing import Literal

__all__ = [
    "CPUINFO",
    "FAST_BF16_FLAGS",
    "FAST_INT8_FLAGS",
    "PRECISIONS",
    "Precision",
    "cpu_flags",
    "default_precision",
    "fast_bf16",
    "fast_int8",
]

logger = logging.getLogger(__name__)

Precision = Literal["fp32", "int8", "bf16"]
"""The precisions an index can embed at (``SentenceTransformerEmbedder``'s ``precision``)."""

PRECISIONS: tuple[Precision, ...] = ("fp32", "int8", "bf16")
"""Every :data:`Precision`, the first being the reference."""

FAST_BF16_FLAGS = frozenset({"amx_bf16"})
"""``/proc/cpuinfo`` flags of the x86 tiles that multiply bfloat16 matrices (AMX)."""

FAST_INT8_FLAGS = frozenset({"avx512_vnni", "avx_vnni", "amx_int8"})
"""``/proc/cpuinfo`` flags of x86 instructions that multiply int8 in hardware."""

CPUINFO = Path("/proc/cpuinfo")


@functools.cache
def fast_int8() -> bool:
    """Whether this CPU has int8 dot-product instructions (VNNI or AMX); probed once."""
    found = sorted(cpu_flags() & FAST_INT8_FLAGS)
    logger.debug("int8 instructions on this CPU: %s", found or "none")
    return bool(found)


@functools.cache
def fast_bf16() -> bool:
    """Whether this CPU multiplies bfloat16 matrices in hardware (AMX); probed once."""
    return bool(cpu_flags() & FAST_BF16_FLAGS)


def default_precision() -> Precision:
    """``"bf16"`` on CPUs with AMX (:func:`fast_bf16`), else ``"int8"`` on CPUs with fast
    int8 math (:func:`fast_int8`), else ``"fp32"``."""
    if fast_bf16():
        return "bf16"
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
