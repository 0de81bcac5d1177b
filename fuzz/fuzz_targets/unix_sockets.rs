#![no_main]
//! The /proc/net/unix parser: never panics, returns only absolute, distinct
//! pathname sockets.

use libfuzzer_sys::fuzz_target;
use qwrap::host::unix_sockets::parse;

fuzz_target!(|data: &[u8]| {
    let paths = parse(data);
    for (i, p) in paths.iter().enumerate() {
        assert!(p.is_absolute());
        assert!(!paths[..i].contains(p));
    }
});
