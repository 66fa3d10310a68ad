#!/usr/bin/env python3
"""Builds a small seed corpus for fuzz_gguf from GGUF files.

For each input it writes the file's first 256 KiB (metadata-heavy, tensors cut off) and a
"skeleton": the same header and KV bytes, the same tensor names/types/ranks, but every tensor
shrunk to one block, so the whole file (metadata + data) is small and valid.
usage: fuzz/make_seeds.py OUT_DIR tests/data/golden/*.gguf
"""
import os, struct, sys

BLOCK = {0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34),
         10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176), 14: (256, 210),
         16: (256, 66), 17: (256, 74), 18: (256, 98), 19: (256, 50), 20: (32, 18),
         21: (256, 110), 22: (256, 82), 23: (256, 136), 24: (1, 1), 25: (1, 2), 26: (1, 4),
         27: (1, 8), 28: (1, 8), 29: (256, 56), 30: (1, 2), 34: (256, 54), 35: (256, 66),
         39: (32, 17), 40: (64, 36), 41: (128, 18), 42: (64, 18)}
SIZE = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


class R:
    def __init__(self, b):
        self.b, self.p = b, 0

    def take(self, n):
        self.p += n
        return self.b[self.p - n:self.p]

    def u32(self):
        return struct.unpack('<I', self.take(4))[0]

    def u64(self):
        return struct.unpack('<Q', self.take(8))[0]

    def skip_value(self, t):
        if t == 8:
            self.take(self.u64())
        elif t == 9:
            et, n = self.u32(), self.u64()
            for _ in range(n):
                self.skip_value(et)
        else:
            self.take(SIZE[t])


def skeleton(data):
    r = R(data)
    r.take(8)
    nt, nkv = r.u64(), r.u64()
    align = 32
    for _ in range(nkv):
        key = r.take(r.u64())
        t = r.u32()
        at = r.p
        r.skip_value(t)
        if key == b'general.alignment':
            align = struct.unpack('<I', data[at:at + 4])[0]
    out = bytearray(data[:r.p])
    off = 0
    sizes = []
    for _ in range(nt):
        name = r.take(r.u64())
        nd = r.u32()
        r.take(8 * nd)
        typ = r.u32()
        r.u64()
        be, bb = BLOCK[typ]
        out += struct.pack('<Q', len(name)) + name + struct.pack('<I', nd)
        out += struct.pack('<Q', be) + struct.pack('<Q', 1) * (nd - 1)
        out += struct.pack('<IQ', typ, off)
        sizes.append(bb)
        off += (bb + align - 1) // align * align
    out += bytes(-len(out) % align)
    for i, s in enumerate(sizes):
        out += bytes((i + k) % 251 for k in range(s)) + bytes(-s % align)
    return bytes(out)


if __name__ == '__main__':
    dst = sys.argv[1]
    os.makedirs(dst, exist_ok=True)
    for p in sys.argv[2:]:
        data = open(p, 'rb').read()
        base = os.path.basename(p)
        open(os.path.join(dst, base + '.head'), 'wb').write(data[:256 * 1024])
        open(os.path.join(dst, base + '.skeleton'), 'wb').write(skeleton(data))
