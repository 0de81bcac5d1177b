//! The host's bound pathname Unix sockets: the ones a sandbox could
//! `connect()` to through the read-only host tree. The kernel's sock_diag
//! netlink dump gives each socket's name exactly as bound (relative, with
//! newlines…) and the inode of its file; /proc/net/unix is the fallback.
//! Parsing here is pure (fuzzed); `inventory` in socket_inventory.rs finds
//! each socket's file.

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

/// One bound pathname socket from the sock_diag dump.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bound {
    /// The socket's own inode (sockfs), as in /proc/net/unix and
    /// /proc/PID/fd's `socket:[N]`.
    pub ino: u32,
    /// The name as bound: absolute or relative to the binder's directory.
    pub name: Vec<u8>,
    /// The bound file: (kernel dev_t, inode).
    pub file: Option<(u32, u32)>,
    /// The socket's owner (Linux ≥ 5.3).
    pub uid: Option<u32>,
}

/// Netlink and sock_diag constants (linux/netlink.h, linux/unix_diag.h).
pub const NLMSG_DONE: u16 = 3;
pub const NLMSG_ERROR: u16 = 2;
pub const SOCK_DIAG_BY_FAMILY: u16 = 20;
const UNIX_DIAG_NAME: u16 = 0;
const UNIX_DIAG_VFS: u16 = 1;
const UNIX_DIAG_UID: u16 = 7;
/// UDIAG_SHOW_NAME | UDIAG_SHOW_VFS | UDIAG_SHOW_UID.
pub const UDIAG_SHOW: u32 = 0x1 | 0x2 | 0x40;

/// The dump request: every unix socket in every state, with its name, file
/// and owner.
pub fn diag_request(seq: u32) -> Vec<u8> {
    let mut m = Vec::with_capacity(40);
    m.extend(40u32.to_ne_bytes()); // nlmsg_len
    m.extend(SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    m.extend((0x1u16 | 0x300).to_ne_bytes()); // NLM_F_REQUEST | NLM_F_DUMP
    m.extend(seq.to_ne_bytes());
    m.extend(0u32.to_ne_bytes()); // pid
    m.extend([libc::AF_UNIX as u8, 0, 0, 0]); // family, protocol, pad
    m.extend(u32::MAX.to_ne_bytes()); // states
    m.extend(0u32.to_ne_bytes()); // ino
    m.extend(UDIAG_SHOW.to_ne_bytes());
    m.extend([0xffu8; 8]); // cookie
    m
}

/// What one datagram of the dump holds.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct DiagChunk {
    pub sockets: Vec<Bound>,
    pub done: bool,
    /// The errno of an NLMSG_ERROR, when the kernel refused the dump.
    pub error: Option<i32>,
}

/// Parses one datagram of netlink messages. Malformed input ends the
/// datagram (never panics); only bound pathname sockets are kept.
pub fn parse_diag(buf: &[u8]) -> DiagChunk {
    let mut out = DiagChunk::default();
    let mut rest = buf;
    while rest.len() >= 16 {
        let len = u32::from_ne_bytes(rest[0..4].try_into().unwrap_or_default()) as usize;
        let kind = u16::from_ne_bytes([rest[4], rest[5]]);
        if len < 16 || len > rest.len() {
            break;
        }
        let body = &rest[16..len];
        match kind {
            NLMSG_DONE => {
                out.done = true;
                break;
            }
            NLMSG_ERROR => {
                let e = body
                    .get(0..4)
                    .map(|b| i32::from_ne_bytes(b.try_into().unwrap_or_default()));
                // A negated errno; i32::MIN has no negation and is no errno.
                out.error = Some(e.and_then(i32::checked_neg).unwrap_or(libc::EIO));
                out.done = true;
                break;
            }
            SOCK_DIAG_BY_FAMILY if body.len() >= 16 => {
                if let Some(b) = parse_socket(body) {
                    out.sockets.push(b);
                }
            }
            _ => {}
        }
        rest = &rest[align4(len).min(rest.len())..];
    }
    out
}

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

/// unix_diag_msg (16 bytes) then attributes.
fn parse_socket(body: &[u8]) -> Option<Bound> {
    let ino = u32::from_ne_bytes(body[4..8].try_into().ok()?);
    let mut b = Bound {
        ino,
        name: Vec::new(),
        file: None,
        uid: None,
    };
    let mut attrs = &body[16..];
    while attrs.len() >= 4 {
        let len = u16::from_ne_bytes([attrs[0], attrs[1]]) as usize;
        let kind = u16::from_ne_bytes([attrs[2], attrs[3]]);
        if len < 4 || len > attrs.len() {
            break;
        }
        let data = &attrs[4..len];
        match kind {
            // sun_path as bound: a pathname ends at its first NUL.
            UNIX_DIAG_NAME if data.first() != Some(&0) => {
                b.name = data.split(|&c| c == 0).next().unwrap_or_default().to_vec()
            }
            UNIX_DIAG_NAME => b.name = data.to_vec(),
            UNIX_DIAG_VFS if data.len() >= 8 => {
                let vino = u32::from_ne_bytes(data[0..4].try_into().ok()?);
                let vdev = u32::from_ne_bytes(data[4..8].try_into().ok()?);
                b.file = Some((vdev, vino));
            }
            UNIX_DIAG_UID if data.len() >= 4 => b.uid = Some(u32::from_ne_bytes(data[0..4].try_into().ok()?)),
            _ => {}
        }
        attrs = &attrs[align4(len).min(attrs.len())..];
    }
    // Abstract names start with NUL; unnamed sockets have none.
    (!b.name.is_empty() && b.name[0] != 0).then_some(b)
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

    fn attr(kind: u16, data: &[u8]) -> Vec<u8> {
        let mut a = Vec::new();
        a.extend(((4 + data.len()) as u16).to_ne_bytes());
        a.extend(kind.to_ne_bytes());
        a.extend(data);
        while a.len() % 4 != 0 {
            a.push(0);
        }
        a
    }

    fn msg(ino: u32, attrs: &[Vec<u8>]) -> Vec<u8> {
        let mut body = vec![libc::AF_UNIX as u8, 1, 10, 0];
        body.extend(ino.to_ne_bytes());
        body.extend([0u8; 8]);
        for a in attrs {
            body.extend(a);
        }
        let mut m = Vec::new();
        m.extend(((16 + body.len()) as u32).to_ne_bytes());
        m.extend(SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        m.extend([0u8; 10]);
        m.extend(body);
        m
    }

    #[test]
    fn diag_messages() {
        let mut vfs = Vec::new();
        vfs.extend(77u32.to_ne_bytes());
        vfs.extend(0x0080_0001u32.to_ne_bytes());
        let mut buf = msg(
            5,
            &[
                attr(0, b"rel\nname.sock"),
                attr(1, &vfs),
                attr(7, &1000u32.to_ne_bytes()),
            ],
        );
        buf.extend(msg(6, &[attr(0, b"\0abstract")]));
        buf.extend(msg(7, &[]));
        let mut done = vec![20, 0, 0, 0];
        done.extend(NLMSG_DONE.to_ne_bytes());
        done.extend([0u8; 14]);
        buf.extend(done);
        let c = parse_diag(&buf);
        assert!(c.done && c.error.is_none());
        assert_eq!(
            c.sockets,
            vec![Bound {
                ino: 5,
                name: b"rel\nname.sock".to_vec(),
                file: Some((0x0080_0001, 77)),
                uid: Some(1000)
            }]
        );
        assert!(!parse_diag(&buf[..buf.len() - 3]).done);
        assert_eq!(diag_request(1).len(), 40);
    }

    #[test]
    fn an_error_message_with_any_errno_never_panics() {
        for (code, want) in [(-13, 13), (i32::MIN, libc::EIO), (0, 0)] {
            let mut m = vec![20, 0, 0, 0];
            m.extend(NLMSG_ERROR.to_ne_bytes());
            m.extend([0u8; 10]);
            m.extend(code.to_ne_bytes());
            let c = parse_diag(&m);
            assert!(c.done);
            assert_eq!(c.error, Some(want));
        }
    }
}
