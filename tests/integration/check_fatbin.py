#!/usr/bin/env python3
"""The GPU code a cuda-enabled binary carries: machine code (an ELF cubin)
for every architecture of -Dgpu_arch and the PTX of the last one. TAP output.

usage: check_fatbin.py ARCHS BINARY...   (ARCHS as -Dgpu_arch: sm_75,sm_90)

A CUDA binary keeps its device code in the ELF section .nv_fatbin: a series
of fat binaries, each a 16-byte header (magic 0xBA55ED50, version, header
size, payload size) followed by entries whose own header gives the kind
(1 PTX, 2 ELF) at offset 0, the entry header size at 4, the padded payload
size at 8 and the architecture number (90 for sm_90) at 28. This reads only
those fields; a binary without the section, or with a malformed one, fails.
"""
import struct
import sys

FATBIN_MAGIC = 0xBA55ED50


def section(path, want):
    with open(path, "rb") as f:
        d = f.read()
    if d[:4] != b"\x7fELF" or d[4] != 2 or d[5] != 1:
        raise ValueError(f"{path}: not a 64-bit little-endian ELF file")
    shoff = struct.unpack_from("<Q", d, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", d, 0x3A)

    def header(i):  # name, type, flags, addr, offset, size
        return struct.unpack_from("<IIQQQQ", d, shoff + i * shentsize)

    names = header(shstrndx)[4]
    for i in range(shnum):
        h = header(i)
        end = d.index(b"\0", names + h[0])
        if d[names + h[0]:end].decode() == want:
            return d[h[4]:h[4] + h[5]]
    return None


def entries(blob):
    """(kind, arch) of every entry of every fat binary in the section."""
    out, off = [], 0
    while off + 16 <= len(blob):
        magic, _ver, hsize, fsize = struct.unpack_from("<IHHQ", blob, off)
        if magic != FATBIN_MAGIC:
            if any(blob[off:]):  # trailing zero padding is fine
                raise ValueError(f"no fat binary header at offset {off}")
            break
        e, end = off + hsize, off + hsize + fsize
        if end > len(blob):
            raise ValueError(f"fat binary at {off} runs past the section")
        while e < end:
            kind, _v, ehsize, padded = struct.unpack_from("<HHII", blob, e)
            if ehsize < 32 or e + ehsize + padded > end:
                raise ValueError(f"malformed entry at offset {e}")
            arch = struct.unpack_from("<I", blob, e + 28)[0]
            out.append(({1: "ptx", 2: "elf"}.get(kind, f"kind{kind}"), arch))
            e += ehsize + padded
        off = end
    return out


def main():
    archs = [a.strip()[3:] for a in sys.argv[1].split(",")]
    want = {("elf", int(a)) for a in archs} | {("ptx", int(archs[-1]))}
    n = fail = 0
    for path in sys.argv[2:]:
        n += 1
        try:
            blob = section(path, ".nv_fatbin")
            have = set(entries(blob)) if blob is not None else set()
        except (OSError, ValueError, struct.error) as e:
            print(f"not ok {n} - {path}: {e}")
            fail = 1
            continue
        missing = sorted(want - have)
        if blob is None or missing:
            what = "no .nv_fatbin section" if blob is None else f"missing {missing}"
            print(f"not ok {n} - {path}: {what} (has {sorted(have)})")
            fail = 1
        else:
            shown = ", ".join(f"sm_{a}" for a in archs)
            print(f"ok {n} - {path} carries machine code for {shown} and PTX for sm_{archs[-1]}")
    print(f"1..{n}")
    return fail


if __name__ == "__main__":
    sys.exit(main())
