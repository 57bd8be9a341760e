"""Module-scope device memory read from a cubin's ELF symbol table, with no GPU and no driver.

A program's `__device__` variables live outside every buffer the harness owns: they are allocated
when the module is loaded, they survive from one launch to the next, and a plan's scratch
allowance does not see them. The judge counts them against that allowance before anything is
loaded (engine/contract/limits.py), and the GPU worker puts the writable ones back to their loaded
values before every run that must be independent (engine/gpu/device_state.py).

NVRTC's cubins are ELF64 little-endian: `__device__` variables are STT_OBJECT symbols in the
`.nv.global` section (zero-initialised, no bytes in the file, so a 64 GiB array costs the cubin
nothing) or `.nv.global.init` (initialised); `__constant__` ones are in `.nv.constant<N>`, which a
kernel cannot write. A section's header can understate what its symbols span (a 2^36-byte array
left `.nv.global`'s size at 44 bytes with NVRTC 13), so sizes come from the symbols themselves.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from cuda_llm.engine.contract.limits import ModuleMemory

_ELF_MAGIC = b"\x7fELF"
_ELFCLASS64 = 2
_ELFDATA2LSB = 1
_SHT_SYMTAB = 2
_STT_OBJECT = 1
_SECTION = struct.Struct("<IIQQQQIIQQ")  # Elf64_Shdr
_SYMBOL = struct.Struct("<IBBHQQ")  # Elf64_Sym
# Sections whose variables a kernel may write: `__device__` ones, zero-filled or initialised.
WRITABLE_PREFIX = ".nv.global"
# Two variables compiled in front of every program (engine/compile/nvrtc.py), one in each writable
# section: plain `__device__` variables, which the driver's cuModuleGetGlobal is known to locate,
# so each section's place is found through them whatever the program's own variables are called
# (printf's strings are `$str`, assert's `__unnamed_1`; NVRTC gives every variable local binding in
# a whole-program compile). Named lines of their own, so no diagnostic is read as the candidate's.
ANCHORS = ("cuda_llm_state_anchor_zero", "cuda_llm_state_anchor_init")
STATE_ANCHORS = (
    f'#line 1 "cuda-llm-state.h"\n__device__ unsigned char {ANCHORS[0]};\n__device__ unsigned char {ANCHORS[1]} = 1;\n'
)


class CubinError(ValueError):
    """The bytes are not a cubin this reader understands (not ELF64 little-endian, or cut short)."""


@dataclass(frozen=True)
class ModuleVariable:
    """One module-scope variable of a cubin."""

    name: str  # the ELF symbol (C++-mangled inside a namespace): what cuModuleGetGlobal looks up
    section: str  # ".nv.global", ".nv.global.init", ".nv.constant3", ...
    offset: int  # within its section
    size_bytes: int

    @property
    def writable(self) -> bool:
        return self.section.startswith(WRITABLE_PREFIX)


def _cstring(data: bytes, start: int) -> str:
    end = data.find(b"\0", start)
    if end < 0:
        raise CubinError("a name runs past the end of the cubin")
    return data[start:end].decode(errors="replace")


def module_variables(cubin: bytes) -> tuple[ModuleVariable, ...]:
    """Every module-scope variable (STT_OBJECT symbol) of the cubin, in symbol-table order.
    Raises CubinError when the bytes are not an ELF64 little-endian object."""
    if len(cubin) < 64 or cubin[:4] != _ELF_MAGIC:
        raise CubinError("not an ELF file")
    if cubin[4] != _ELFCLASS64 or cubin[5] != _ELFDATA2LSB:
        raise CubinError("not a 64-bit little-endian ELF file")
    try:
        (shoff,) = struct.unpack_from("<Q", cubin, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
        sections = [_SECTION.unpack_from(cubin, shoff + i * shentsize) for i in range(shnum)]
        names_at = sections[shstrndx][4]
        section_names = [_cstring(cubin, names_at + s[0]) for s in sections]
        found: list[ModuleVariable] = []
        for sec in sections:
            if sec[1] != _SHT_SYMTAB:
                continue
            strings_at = sections[sec[6]][4]
            for j in range(sec[5] // _SYMBOL.size):
                st_name, info, _other, shndx, value, size = _SYMBOL.unpack_from(cubin, sec[4] + j * _SYMBOL.size)
                if info & 0xF != _STT_OBJECT or not 0 < shndx < len(sections):
                    continue
                section = section_names[shndx]
                if not section.startswith(".nv."):
                    continue  # the symbol table's own bookkeeping
                found.append(ModuleVariable(_cstring(cubin, strings_at + st_name), section, value, size))
    except (struct.error, IndexError) as exc:
        raise CubinError(f"the cubin is cut short ({exc})") from None
    return tuple(found)


def device_variables(cubin: bytes) -> tuple[ModuleVariable, ...]:
    """The writable (`__device__`) variables: what survives between launches."""
    return tuple(v for v in module_variables(cubin) if v.writable)


def module_device_bytes(cubin: bytes) -> int:
    """Device memory the module's `__device__` variables take when it is loaded: each writable
    section as far as its symbols reach."""
    reach: dict[str, int] = {}
    for v in device_variables(cubin):
        reach[v.section] = max(reach.get(v.section, 0), v.offset + v.size_bytes)
    return sum(reach.values())


def largest_variables(cubin: bytes, count: int = 3) -> tuple[ModuleVariable, ...]:
    """The `count` largest `__device__` variables, largest first (for a message naming them)."""
    own = [v for v in device_variables(cubin) if v.name not in ANCHORS]
    return tuple(sorted(own, key=lambda v: -v.size_bytes)[:count])


def module_memory(cubin: bytes) -> ModuleMemory:
    """What the module's `__device__` variables take, in the form the plan's limits count
    (engine/contract/limits.py). Raises CubinError for bytes this reader cannot read."""
    return ModuleMemory(module_device_bytes(cubin), tuple((v.name, v.size_bytes) for v in largest_variables(cubin)))
