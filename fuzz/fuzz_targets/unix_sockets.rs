#![no_main]
//! The /proc/net/unix parser and the sock_diag message parser: never panic;
//! the first returns only absolute, distinct pathname sockets, the second
//! only named, non-abstract ones.

use libfuzzer_sys::fuzz_target;
use qwrap::host::unix_sockets::{parse, parse_diag};

fuzz_target!(|data: &[u8]| {
    let paths = parse(data);
    for (i, p) in paths.iter().enumerate() {
        assert!(p.is_absolute());
        assert!(!paths[..i].contains(p));
    }
    for s in parse_diag(data).sockets {
        assert!(!s.name.is_empty() && s.name[0] != 0);
    }
});
