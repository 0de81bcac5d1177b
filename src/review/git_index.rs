//! A git index's entries without their stat data: what a host git that
//! only refreshed the index (`git status` rewrites it with new inode
//! numbers and times) leaves as it was. Versions 2, 3 and 4; a split
//! index (its `link` extension) is not read.

/// One entry: its path, mode, object name, flags and extended flags.
type Entry = (Vec<u8>, u32, Vec<u8>, u16, u16);

fn be32(d: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(d.get(at..at + 4)?.try_into().ok()?))
}

fn be16(d: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(d.get(at..at + 2)?.try_into().ok()?))
}

/// The entries, with objects of `hash` bytes; None where the index does
/// not read whole that way.
fn parse(d: &[u8], hash: usize) -> Option<Vec<Entry>> {
    if d.get(..4)? != b"DIRC" {
        return None;
    }
    let version = be32(d, 4)?;
    if !(2..=4).contains(&version) {
        return None;
    }
    let count = be32(d, 8)? as usize;
    let mut at = 12;
    let mut entries = Vec::with_capacity(count.min(1 << 20));
    let mut prev: Vec<u8> = Vec::new();
    for _ in 0..count {
        let start = at;
        let mode = be32(d, at + 24)?;
        let oid = d.get(at + 40..at + 40 + hash)?.to_vec();
        at += 40 + hash;
        let flags = be16(d, at)?;
        at += 2;
        let ext = if version >= 3 && flags & 0x4000 != 0 {
            at += 2;
            be16(d, at - 2)?
        } else {
            0
        };
        let path = if version == 4 {
            // How many bytes of the previous path to drop (git's varint).
            let mut b = *d.get(at)?;
            at += 1;
            let mut strip = usize::from(b & 0x7f);
            while b & 0x80 != 0 {
                b = *d.get(at)?;
                at += 1;
                strip = ((strip + 1) << 7) | usize::from(b & 0x7f);
            }
            let end = at + d.get(at..)?.iter().position(|c| *c == 0)?;
            let mut p = prev.get(..prev.len().checked_sub(strip)?)?.to_vec();
            p.extend(&d[at..end]);
            at = end + 1;
            p
        } else {
            let end = at + d.get(at..)?.iter().position(|c| *c == 0)?;
            let p = d[at..end].to_vec();
            // NUL padding to a multiple of eight bytes, at least one.
            let len = end - start;
            at = start + (len + 8) / 8 * 8;
            p
        };
        prev = path.clone();
        entries.push((path, mode, oid, flags, ext));
    }
    // Extensions, then the checksum: a split index's entries are not all
    // here.
    while d.len().checked_sub(at)? > hash {
        let sig = d.get(at..at + 4)?;
        if sig == b"link" {
            return None;
        }
        let size = be32(d, at + 4)? as usize;
        at = at.checked_add(8 + size)?;
    }
    (d.len().checked_sub(at)? == hash).then_some(entries)
}

/// Whether two indexes hold the same entries, stat data aside (SHA-1 or
/// SHA-256 repositories); false where either cannot be read.
pub fn same_entries(a: &[u8], b: &[u8]) -> bool {
    [20, 32].iter().any(|&h| match (parse(a, h), parse(b, h)) {
        (Some(x), Some(y)) => x == y,
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A version 2 index of `entries` (path, object byte, ctime), SHA-1.
    fn index(entries: &[(&str, u8, u32)]) -> Vec<u8> {
        let mut d = b"DIRC".to_vec();
        d.extend(2u32.to_be_bytes());
        d.extend((entries.len() as u32).to_be_bytes());
        for (path, oid, ctime) in entries {
            let start = d.len();
            d.extend(ctime.to_be_bytes());
            d.extend([0u8; 20]);
            d.extend(0o100644u32.to_be_bytes());
            d.extend([0u8; 12]);
            d.extend([*oid; 20]);
            d.extend((path.len() as u16).to_be_bytes());
            d.extend(path.as_bytes());
            let len = d.len() - start;
            d.resize(start + (len + 8) / 8 * 8, 0);
        }
        d.extend(b"TREE");
        d.extend(3u32.to_be_bytes());
        d.extend(b"abc");
        d.extend([7u8; 20]);
        d
    }

    #[test]
    fn stat_data_aside() {
        let a = index(&[("a.txt", 1, 100), ("src/lib.rs", 2, 100)]);
        let refreshed = index(&[("a.txt", 1, 200), ("src/lib.rs", 2, 300)]);
        let staged = index(&[("a.txt", 3, 200), ("src/lib.rs", 2, 300)]);
        assert!(parse(&a, 20).is_some());
        assert!(same_entries(&a, &refreshed));
        assert!(!same_entries(&a, &staged));
        assert!(!same_entries(&a, &a[..a.len() - 1]));
        let mut split = a.clone();
        let at = split.len() - 20;
        split.splice(at..at, b"link\0\0\0\0".iter().copied());
        assert!(!same_entries(&split, &split));
    }
}
