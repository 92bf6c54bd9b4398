#!/usr/bin/env python3
"""make_unwind_seed.py LIB OUT: the seed of fuzz_unwind cut out of a real
library: the bytes from .eh_frame_hdr to the end of .eh_frame, as the loader
maps them (the two sections must be laid out in the file as in memory)."""
import struct, sys

def sections(data):
    shoff, = struct.unpack_from('<Q', data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from('<HHH', data, 0x3a)
    hdrs = [struct.unpack_from('<IIQQQQIIQQ', data, shoff + i * shentsize) for i in range(shnum)]
    strtab = hdrs[shstrndx]
    def name(off):
        start = strtab[4] + off
        return data[start:data.index(b'\0', start)].decode()
    return {name(h[0]): h for h in hdrs}

def main():
    lib, out = sys.argv[1], sys.argv[2]
    data = open(lib, 'rb').read()
    s = sections(data)
    hdr, eh = s['.eh_frame_hdr'], s['.eh_frame']
    # (name, type, flags, addr, offset, size, ...)
    if eh[3] - hdr[3] != eh[4] - hdr[4] or eh[4] < hdr[4]:
        sys.exit('%s: .eh_frame does not follow .eh_frame_hdr in the file as in memory' % lib)
    open(out, 'wb').write(data[hdr[4]:eh[4] + eh[5]])

main()
