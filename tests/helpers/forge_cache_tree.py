"""forge_cache_tree.py INDEX DONOR: INDEX keeps its entries and takes the
cache-tree (TREE extension) of DONOR, its trailer made again. Version 2 and
3 indexes, SHA-1."""
import hashlib, struct, sys


def parts(data):
    body = data[:-20]
    assert body[:4] == b"DIRC"
    version, count = struct.unpack(">II", body[4:12])
    at = 12
    for _ in range(count):
        flags = struct.unpack(">H", body[at + 60:at + 62])[0]
        head = 64 if version >= 3 and flags & 0x4000 else 62
        end = body.index(b"\0", at + head)
        at += (end - at + 8) // 8 * 8
    exts = {}
    pos = at
    while pos < len(body):
        size = struct.unpack(">I", body[pos + 4:pos + 8])[0]
        exts[body[pos:pos + 4]] = body[pos:pos + 8 + size]
        pos += 8 + size
    return body[:at], exts


index, donor = sys.argv[1], sys.argv[2]
entries, exts = parts(open(index, "rb").read())
_, donor_exts = parts(open(donor, "rb").read())
out = entries + donor_exts[b"TREE"] + b"".join(v for k, v in exts.items() if k != b"TREE")
open(index, "wb").write(out + hashlib.sha1(out).digest())
