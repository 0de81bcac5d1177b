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

/// Whether a character drives a terminal or hides text when shown: C0 and
/// C1 controls and DEL, and the format characters that reorder or hide
/// what follows (bidirectional marks, zero-width ones, the soft hyphen,
/// line and paragraph separators, tags, variation selectors, fillers).
pub fn unshowable(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{ad}'
                | '\u{34f}'
                | '\u{61c}'
                | '\u{115f}'
                | '\u{1160}'
                | '\u{17b4}'
                | '\u{17b5}'
                | '\u{180b}'..='\u{180f}'
                | '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{206f}'
                | '\u{3164}'
                | '\u{fe00}'..='\u{fe0f}'
                | '\u{feff}'
                | '\u{ffa0}'
                | '\u{fff9}'..='\u{fffb}'
                | '\u{1d173}'..='\u{1d17a}'
                | '\u{e0000}'..='\u{e0fff}'
        )
}

/// Whether a byte that is no part of UTF-8 text is a C1 control to an
/// 8-bit terminal (0x9b is CSI there).
pub fn raw_c1(b: u8) -> bool {
    (0x80..0xa0).contains(&b)
}

/// A path (or any text a command may have chosen) for a line of qwrap's on
/// stderr: its unshowable characters escaped (`\n`, `\u{1b}`, `\u{202e}`)
/// and bytes that are no UTF-8 as `\x9b`, so that a name cannot end the
/// line and forge another, drive the terminal, reorder what follows, or
/// read as another name.
pub fn shown(text: impl AsRef<std::ffi::OsStr>) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut out = String::new();
    for chunk in text.as_ref().as_bytes().utf8_chunks() {
        for c in chunk.valid().chars() {
            if unshowable(c) {
                out.extend(c.escape_default());
            } else {
                out.push(c);
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn a_name_cannot_forge_a_line_or_drive_the_terminal() {
        assert_eq!(super::shown("/w/a b/c"), "/w/a b/c");
        assert_eq!(
            super::shown("/w/x\nqwrap: fine\u{1b}]52;c;AAAA\u{7}\u{9b}"),
            "/w/x\\nqwrap: fine\\u{1b}]52;c;AAAA\\u{7}\\u{9b}"
        );
        assert_eq!(super::shown("/w/a\u{202e}b\u{61c}c"), "/w/a\\u{202e}b\\u{61c}c");
        let raw = std::ffi::OsStr::from_bytes(b"/w/x\x9b2J");
        assert_eq!(super::shown(raw), "/w/x\\x9b2J");
        assert_eq!(super::shown("/w/é"), "/w/é");
    }
}
