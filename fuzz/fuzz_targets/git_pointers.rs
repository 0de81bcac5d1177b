#![no_main]
//! The git pointer files: `.git` (`gitdir: PATH`), `commondir`, `gitdir`, and
//! the `[core]` keys of a git config. Never panic; a pointer is never empty
//! and never holds a NUL.

use libfuzzer_sys::fuzz_target;
use qwrap::policy::git::{parse_core_worktree, parse_pointer};

fuzz_target!(|text: &str| {
    for prefix in ["gitdir: ", ""] {
        if let Some(p) = parse_pointer(text, prefix) {
            let s = p.as_os_str();
            assert!(!s.is_empty());
            assert!(!s.as_encoded_bytes().contains(&0));
        }
    }
    if let Some(p) = parse_core_worktree(text) {
        assert!(!p.as_os_str().is_empty());
    }
});
