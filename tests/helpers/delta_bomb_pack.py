"""A pack of 4.7 MB: one blob of 1 GiB of zeros and three deltas on it,
each 1 GiB and a byte. Whoever indexes it holds a base and a result of
1 GiB each in memory. Written to the path given; a second argument gives
the blob's size in MiB instead.
"""
import hashlib, sys, zlib
def hdr(t, size):
    b = (t << 4) | (size & 15); size >>= 4; out = bytearray()
    while size:
        out.append(b | 128); b = size & 127; size >>= 7
    out.append(b); return bytes(out)
def varint(n):
    out = bytearray()
    while True:
        b = n & 127; n >>= 7
        out.append(b | (128 if n else 0))
        if not n: return bytes(out)
def ofs(n):
    out = [n & 127]; n >>= 7
    while n:
        n -= 1; out.insert(0, 128 | (n & 127)); n >>= 7
    return bytes(out)
N = (int(sys.argv[2]) if len(sys.argv) > 2 else 1024) << 20
body = bytearray(b"PACK" + (2).to_bytes(4, "big") + (4).to_bytes(4, "big"))
base_at = len(body)
body += hdr(3, N)
c = zlib.compressobj(1); z = bytes(1 << 20)
for _ in range(N >> 20): body += c.compress(z)
body += c.flush()
for ch in b"xyz":
    at = len(body)
    d = bytearray(varint(N) + varint(N + 1))
    for o in range(0, N, 1 << 16):
        d += bytes([0x80 | 0x0f]) + o.to_bytes(4, "little")
    d += bytes([1, ch])
    body += hdr(6, len(d)) + ofs(at - base_at) + zlib.compress(bytes(d))
body += hashlib.sha1(body).digest()
open(sys.argv[1], "wb").write(body)
