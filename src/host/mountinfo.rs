//! Parser for `/proc/self/mountinfo` (proc(5)).

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

/// One mount, with the per-mount flags that a read-only remount must keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountEntry {
    pub id: u64,
    pub parent: u64,
    /// The filesystem's device (`major:minor`).
    pub major: u32,
    pub minor: u32,
    /// The directory of the filesystem the mount shows (a bind mount's
    /// source within it).
    pub root: PathBuf,
    pub mount_point: PathBuf,
    pub fstype: String,
    pub read_only: bool,
    pub nosuid: bool,
    pub nodev: bool,
    pub noexec: bool,
}

/// Why a line could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("mountinfo line {line}: {why}")]
pub struct ParseError {
    pub line: usize,
    pub why: &'static str,
}

/// Parses the whole table. Any malformed line fails the parse: a table we do
/// not understand cannot be made read-only with confidence.
pub fn parse(text: &[u8]) -> Result<Vec<MountEntry>, ParseError> {
    text.split(|&b| b == b'\n')
        .enumerate()
        .filter(|(_, l)| !l.is_empty())
        .map(|(i, l)| parse_line(l).map_err(|why| ParseError { line: i + 1, why }))
        .collect()
}

/// Whether the process's root is the initramfs (rootfs), the one mount
/// without a parent, which pivot_root(2) refuses to move. Elsewhere rootfs
/// lies outside the root and does not appear in the table.
pub fn root_is_initramfs(entries: &[MountEntry]) -> bool {
    entries
        .iter()
        .any(|e| e.mount_point == std::path::Path::new("/") && e.fstype == "rootfs")
}

/// The other places the mount table shows `path` (or a part of it) at:
/// a mount of the same filesystem whose root holds `path`'s directory in
/// it (`path` seen at a second path), or lies below it (a part of `path`
/// mounted elsewhere). Paths below `path` itself are its own.
pub fn other_views(entries: &[MountEntry], path: &Path) -> Vec<PathBuf> {
    // The mount `path` lies on: the deepest mount point above it, the
    // last mounted of those.
    let Some(own) = entries
        .iter()
        .filter(|e| path.starts_with(&e.mount_point))
        .max_by_key(|e| e.mount_point.components().count())
        .and_then(|deepest| {
            entries
                .iter()
                .rev()
                .find(|e| e.mount_point == deepest.mount_point)
        })
    else {
        return Vec::new();
    };
    let Ok(within) = path.strip_prefix(&own.mount_point) else {
        return Vec::new();
    };
    let in_fs = own.root.join(within);
    let mut out = Vec::new();
    for e in entries {
        if e.id == own.id || (e.major, e.minor) != (own.major, own.minor) {
            continue;
        }
        let seen = if let Ok(rest) = in_fs.strip_prefix(&e.root) {
            e.mount_point.join(rest)
        } else if e.root.starts_with(&in_fs) {
            e.mount_point.clone()
        } else {
            continue;
        };
        if !seen.starts_with(path) && !out.contains(&seen) {
            out.push(seen);
        }
    }
    out
}

fn parse_line(line: &[u8]) -> Result<MountEntry, &'static str> {
    let mut fields = line.split(|&b| b == b' ');
    let mut next = |what: &'static str| fields.next().ok_or(what);
    let id = number(next("missing mount id")?)?;
    let parent = number(next("missing parent id")?)?;
    let devno = next("missing major:minor")?;
    let (major, minor) = std::str::from_utf8(devno)
        .ok()
        .and_then(|d| d.split_once(':'))
        .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
        .ok_or("bad major:minor")?;
    let root = unescape(next("missing root")?)?;
    let mount_point = unescape(next("missing mount point")?)?;
    let options = next("missing mount options")?;
    // Optional fields end with a lone "-".
    loop {
        match next("missing separator")? {
            b"-" => break,
            _ => continue,
        }
    }
    let fstype = String::from_utf8_lossy(next("missing filesystem type")?).into_owned();
    let mut entry = MountEntry {
        id,
        parent,
        major,
        minor,
        root: PathBuf::from(OsString::from_vec(root)),
        mount_point: PathBuf::from(OsString::from_vec(mount_point)),
        fstype,
        read_only: false,
        nosuid: false,
        nodev: false,
        noexec: false,
    };
    for opt in options.split(|&b| b == b',') {
        match opt {
            b"ro" => entry.read_only = true,
            b"nosuid" => entry.nosuid = true,
            b"nodev" => entry.nodev = true,
            b"noexec" => entry.noexec = true,
            _ => {}
        }
    }
    if !entry.mount_point.is_absolute() {
        return Err("mount point is not absolute");
    }
    Ok(entry)
}

fn number(field: &[u8]) -> Result<u64, &'static str> {
    std::str::from_utf8(field)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or("not a number")
}

/// Undoes the kernel's octal escapes (`\040` for space, `\012` for newline…).
pub(super) fn unescape(field: &[u8]) -> Result<Vec<u8>, &'static str> {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        if field[i] == b'\\' {
            let digits = field.get(i + 1..i + 4).ok_or("truncated escape")?;
            let mut value: u32 = 0;
            for &d in digits {
                if !(b'0'..=b'7').contains(&d) {
                    return Err("bad escape");
                }
                value = value * 8 + u32::from(d - b'0');
            }
            out.push(u8::try_from(value).map_err(|_| "escape out of range")?);
            i += 4;
        } else {
            out.push(field[i]);
            i += 1;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &[u8] = b"22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
28 27 0:25 / /mnt/a\\040b ro,nosuid,nodev,relatime shared:5 master:1 - tmpfs none ro,size=4k
29 27 0:26 / /srv/x rw,noexec - tmpfs t rw
";

    #[test]
    fn parses_fields_flags_and_escapes() {
        let m = parse(SAMPLE).unwrap();
        assert_eq!(m.len(), 4);
        assert_eq!(m[0].mount_point, PathBuf::from("/proc"));
        assert_eq!(m[0].fstype, "proc");
        assert_eq!((m[1].id, m[1].parent), (27, 1));
        assert_eq!(m[2].mount_point, PathBuf::from("/mnt/a b"));
        assert!(m[2].read_only && m[2].nosuid && m[2].nodev && !m[2].noexec);
        assert_eq!(m[2].fstype, "tmpfs");
        assert!(m[3].noexec && !m[3].read_only);
    }

    #[test]
    fn a_path_seen_elsewhere() {
        let table = b"27 1 254:0 / / rw - ext4 /dev/vda rw
40 27 254:0 /home/u /mirror rw - ext4 /dev/vda rw
41 27 254:0 /home/u/.aws /srv/aws rw - ext4 /dev/vda rw
42 27 254:0 / /mnt/whole rw - ext4 /dev/vda rw
43 27 254:0 /var /var2 rw - ext4 /dev/vda rw
44 27 0:30 / /tmp rw - tmpfs t rw
45 27 254:0 /home/u/ws /home/u/ws2 rw - ext4 /dev/vda rw
";
        let m = parse(table).unwrap();
        let seen = other_views(&m, Path::new("/home/u"));
        assert_eq!(
            seen,
            [
                PathBuf::from("/mirror"),
                "/srv/aws".into(),
                "/mnt/whole/home/u".into()
            ]
        );
        // A home on a mount of its own: the other mounts of its filesystem.
        let table = b"27 1 254:0 / / rw - ext4 /dev/vda rw
30 27 254:1 / /home rw - ext4 /dev/vdb rw
31 27 254:1 /u /backup rw - ext4 /dev/vdb rw
";
        let m = parse(table).unwrap();
        assert_eq!(other_views(&m, Path::new("/home/u")), [PathBuf::from("/backup")]);
        assert!(other_views(&m, Path::new("/etc")).is_empty());
    }

    #[test]
    fn newline_and_backslash_escapes() {
        let m = parse(b"1 0 0:1 / /a\\012b\\134c rw - tmpfs x rw\n").unwrap();
        assert_eq!(m[0].mount_point, PathBuf::from("/a\nb\\c"));
    }

    #[test]
    fn rejects_malformed_lines() {
        for bad in [
            &b"x 1 0:1 / / rw - ext4 a rw"[..],
            b"1 1 0:1 / / rw ext4 a rw",
            b"1 1 0:1 / relative rw - ext4 a rw",
            b"1 1 0:1 / /a\\09 rw - ext4 a rw",
            b"1 1 0:1 / /a\\7 rw - ext4 a rw",
            b"1 1 0:1 / /a\\777 rw - ext4 a rw",
            b"1 1",
        ] {
            assert!(parse(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn reports_line_number() {
        let err = parse(b"1 0 0:1 / / rw - ext4 a rw\n\nbad\n").unwrap_err();
        assert_eq!(err.line, 3);
    }

    #[test]
    fn finds_an_initramfs_root() {
        assert!(!root_is_initramfs(&parse(SAMPLE).unwrap()));
        let initramfs = b"1 1 0:2 / / rw - rootfs rootfs rw\n22 1 0:21 / /proc rw - proc proc rw\n";
        assert!(root_is_initramfs(&parse(initramfs).unwrap()));
        // A tmpfs root after switch_root is an ordinary mount.
        assert!(!root_is_initramfs(
            &parse(b"30 29 0:30 / / rw - tmpfs tmpfs rw\n").unwrap()
        ));
    }

    #[test]
    fn reads_this_hosts_table() {
        let text = std::fs::read("/proc/self/mountinfo").unwrap();
        let m = parse(&text).unwrap();
        assert!(m.iter().any(|e| e.mount_point == std::path::Path::new("/")));
    }
}
