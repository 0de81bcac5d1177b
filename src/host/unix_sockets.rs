//! The host's bound pathname Unix sockets, from /proc/net/unix: the ones a
//! sandbox could `connect()` to through the read-only host tree.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;

/// The distinct pathname sockets listed, in order of first appearance.
/// Abstract (`@…`) and unnamed sockets are left out; lines that do not parse
/// are skipped (the table is informational, the mask is what enforces).
pub fn parse(text: &[u8]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for line in text.split(|&b| b == b'\n').skip(1) {
        // Num RefCount Protocol Flags Type St Inode [Path]; the path may hold
        // spaces, so take everything after the seventh field.
        let mut rest = line;
        let mut ok = true;
        for _ in 0..7 {
            let trimmed = trim_start(rest);
            match trimmed.iter().position(|&b| b == b' ') {
                Some(i) => rest = &trimmed[i..],
                None => {
                    ok = false;
                    break;
                }
            }
        }
        if !ok {
            continue;
        }
        let path = trim_start(rest);
        if path.first() != Some(&b'/') {
            continue;
        }
        let p = PathBuf::from(OsString::from_vec(path.to_vec()));
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

fn trim_start(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|&&b| b == b' ').count();
    &s[n..]
}

/// The pathname sockets that exist as sockets in this mount namespace now.
pub fn inventory() -> Vec<PathBuf> {
    use std::io::Read;
    use std::os::unix::fs::FileTypeExt;
    // One large buffer: std::fs::read starts with 32-byte reads (procfs
    // reports size 0), and each read(2) re-enters the kernel's table walk.
    let mut text = Vec::with_capacity(64 << 10);
    let _ = std::fs::File::open("/proc/net/unix").and_then(|mut f| f.read_to_end(&mut text));
    parse(&text)
        .into_iter()
        .filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_socket()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &[u8] = b"Num       RefCount Protocol Flags    Type St Inode Path
0000000000000000: 00000002 00000000 00010000 0001 01 20422 /run/systemd/notify
0000000000000000: 00000002 00000000 00010000 0001 01 20423 @/tmp/.X11-unix/X0
0000000000000000: 00000003 00000000 00000000 0001 03 30011
0000000000000000: 00000002 00000000 00010000 0001 01 20424 /run/user/1000/a b.sock
0000000000000000: 00000002 00000000 00010000 0001 01 20425 /run/systemd/notify
garbage
";

    #[test]
    fn pathname_sockets_only_once_each() {
        assert_eq!(
            parse(SAMPLE),
            vec![
                PathBuf::from("/run/systemd/notify"),
                PathBuf::from("/run/user/1000/a b.sock")
            ]
        );
    }

    #[test]
    fn empty_and_header_only() {
        assert!(parse(b"").is_empty());
        assert!(parse(b"Num RefCount Protocol Flags Type St Inode Path\n").is_empty());
    }

    #[test]
    fn finds_a_real_socket() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let _l = std::os::unix::net::UnixListener::bind(&path).unwrap();
        assert!(inventory().contains(&path));
    }
}
