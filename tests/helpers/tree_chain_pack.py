"""A pack of a few megabytes whose trees are cheap to send and dear to
read: a tree of SIZE_MB (valid, every entry the empty blob), LINKS more,
each a delta on the one before, and SMALL trees of one entry, each a delta
on one of the large ones. Reading every tree once rebuilds a chain of
large trees for each small one. Usage: tree_chain_pack.py PACK SIZE_MB
LINKS SMALL.
"""
import hashlib, struct, sys, zlib

def header(kind, size):
    byte = (kind << 4) | (size & 15)
    size >>= 4
    out = bytearray()
    while size:
        out.append(byte | 128)
        byte = size & 127
        size >>= 7
    out.append(byte)
    return bytes(out)

def varint(n):
    out = bytearray()
    while True:
        byte = n & 127
        n >>= 7
        out.append(byte | (128 if n else 0))
        if not n:
            return bytes(out)

def offset(n):
    out = [n & 127]
    n >>= 7
    while n:
        n -= 1
        out.insert(0, 128 | (n & 127))
        n >>= 7
    return bytes(out)

def copy(start, size):
    return bytes([0x80 | 0x0F | 0x70]) + struct.pack("<I", start) + struct.pack("<I", size)[:3]

def insert(data):
    return bytes([len(data)]) + data

path, size_mb, links, small = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
empty = bytes.fromhex("e69de29bb2d1d6434b8b29ae775ad8c2e48c5391")
entry = lambda name: b"100644 " + name + b"\0" + empty
base = b"".join(entry(b"f%08d" % i) for i in range(size_mb * (1 << 20) // 37))
pack = bytearray(b"PACK" + struct.pack(">II", 2, 2 + links + small))
pack += header(3, 0) + zlib.compress(b"")
at = [len(pack)]
pack += header(2, len(base)) + zlib.compress(base, 1)
size = len(base)
for k in range(1, links + 1):
    # Link k: its own first entry, then the one before's without its own.
    skip = 0 if k == 1 else 37
    first = entry(b"a%08d" % k)
    d = bytearray(varint(size) + varint(size - skip + len(first)) + insert(first))
    for start in range(skip, size, 1 << 23):
        d += copy(start, min(1 << 23, size - start))
    size = size - skip + len(first)
    here = len(pack)
    pack += header(6, len(d)) + offset(here - at[-1]) + zlib.compress(bytes(d))
    at.append(here)
for j in range(small):
    link = len(at) - 1 - (j % links)
    one = entry(b"s%08d" % j)
    d = varint(size) + varint(len(one)) + insert(one)
    here = len(pack)
    pack += header(6, len(d)) + offset(here - at[link]) + zlib.compress(d)
pack += hashlib.sha1(pack).digest()
open(path, "wb").write(pack)
