"""A repository's objects whose one commit lies at the end of a chain of
deltas: the commit (of SIZE bytes, its tree the empty one) packed whole,
then DEPTH deltas each copying the one before, the last alone in the
index. The pack is a few hundred kilobytes; reading the commit replays
every delta. Usage: delta_chain_pack.py GIT_DIR DEPTH SIZE; prints the
commit's id.
"""
import hashlib, os, struct, sys, zlib

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

git_dir, depth, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
head = b"tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor t <t@t> 0 +0000\ncommitter t <t@t> 0 +0000\n\n"
commit = head + b"x" * (size - len(head) - 1) + b"\n"
oid = hashlib.sha1(b"commit %d\0" % len(commit) + commit).hexdigest()
# The header counts the indexed object alone, as the index does.
pack = bytearray(b"PACK" + struct.pack(">II", 2, 1))
at = len(pack)
pack += header(1, len(commit)) + zlib.compress(commit, 1)
# Each delta: the result's size, then copies of the base in 64 KiB pieces.
delta = bytearray(varint(len(commit)) + varint(len(commit)))
for start in range(0, len(commit), 1 << 16):
    piece = min(1 << 16, len(commit) - start)
    delta += bytes([0x80 | 0x0F | 0x30]) + struct.pack("<I", start) + struct.pack("<H", piece & 0xFFFF)
packed_delta = zlib.compress(bytes(delta), 9)
for _ in range(depth):
    here = len(pack)
    pack += header(6, len(delta)) + offset(here - at) + packed_delta
    at = here
crc = zlib.crc32(pack[at:]) & 0xFFFFFFFF
pack += hashlib.sha1(pack).digest()
idx = bytearray(b"\377tOc" + struct.pack(">I", 2))
first = int(oid[:2], 16)
idx += b"".join(struct.pack(">I", 0 if i < first else 1) for i in range(256))
idx += bytes.fromhex(oid) + struct.pack(">I", crc) + struct.pack(">I", at)
idx += pack[-20:]
idx += hashlib.sha1(idx).digest()
packs = os.path.join(git_dir, "objects", "pack")
os.makedirs(packs, exist_ok=True)
name = os.path.join(packs, "pack-" + pack[-20:].hex())
open(name + ".pack", "wb").write(pack)
open(name + ".idx", "wb").write(idx)
print(oid)
