//! Serialising paths that need not be UTF-8: reports and plans print them
//! lossily (U+FFFD for invalid bytes) instead of failing. A line on a
//! terminal names a path the command may have chosen with its control
//! characters escaped (`shown`).

use serde::Serializer;
use serde::ser::SerializeSeq;
use std::path::{Path, PathBuf};

pub fn path<S: Serializer>(p: &Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&p.to_string_lossy())
}

pub fn opt_path<S: Serializer>(p: &Option<PathBuf>, s: S) -> Result<S::Ok, S::Error> {
    match p {
        Some(p) => s.serialize_some(&p.to_string_lossy()),
        None => s.serialize_none(),
    }
}

pub fn paths<S: Serializer>(v: &[PathBuf], s: S) -> Result<S::Ok, S::Error> {
    let mut seq = s.serialize_seq(Some(v.len()))?;
    for p in v {
        seq.serialize_element(&p.to_string_lossy())?;
    }
    seq.end()
}

pub fn os_strings<S: Serializer>(v: &[std::ffi::OsString], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(v.iter().map(|x| x.to_string_lossy()))
}

/// A path (or any text a command may have chosen) for a line of qwrap's on
/// stderr: lossy, its control characters escaped (`\n`, `\u{1b}`), so
/// that a name cannot end the line and forge another, or drive the
/// terminal.
pub fn shown(text: impl AsRef<std::ffi::OsStr>) -> String {
    text.as_ref()
        .to_string_lossy()
        .chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().collect()
            } else {
                c.to_string()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_name_cannot_forge_a_line_or_drive_the_terminal() {
        assert_eq!(super::shown("/w/a b/c"), "/w/a b/c");
        assert_eq!(
            super::shown("/w/x\nqwrap: fine\u{1b}]52;c;AAAA\u{7}\u{9b}"),
            "/w/x\\nqwrap: fine\\u{1b}]52;c;AAAA\\u{7}\\u{9b}"
        );
    }
}
