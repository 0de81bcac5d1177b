//! Serialising paths that need not be UTF-8: reports and plans print them
//! lossily (U+FFFD for invalid bytes) instead of failing.

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
