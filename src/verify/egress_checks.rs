//! Probe checks of `--network proxied`, made from inside: no route around
//! the proxy, an unlisted name refused by it, a listed destination reached
//! through it (a server verify starts on the host's loopback and lists).

use super::Check;
use crate::egress::PROXY_PORT;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// What the listed test server says first.
pub const GREETING: &[u8] = b"qwrap-verify\n";

pub(super) fn checks(target: Option<&str>) -> Vec<Check> {
    vec![direct(), unlisted(), listed(target)]
}

fn direct() -> Check {
    const N: &str = "egress-direct";
    const T: &str = "a direct connection (no proxy) has no route";
    // TEST-NET-1: never a real host, so a connection proves a route.
    let to: SocketAddr = "192.0.2.1:80".parse().expect("an address");
    match TcpStream::connect_timeout(&to, Duration::from_secs(2)) {
        Err(e) if e.raw_os_error() == Some(libc::ENETUNREACH) => Check::pass(N, T),
        Err(e) => Check::fail(N, T, "ENETUNREACH", e.to_string()),
        Ok(_) => Check::fail(N, T, "ENETUNREACH", "connected".into()),
    }
}

/// Sends a CONNECT through the proxy; the status line and what follows.
fn connect(dest: &str) -> std::io::Result<(String, Vec<u8>)> {
    // An address, not a name: no resolver is linked in for it.
    let mut s = TcpStream::connect(SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, PROXY_PORT)))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    s.write_all(format!("CONNECT {dest} HTTP/1.1\r\nHost: {dest}\r\n\r\n").as_bytes())?;
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    let text = String::from_utf8_lossy(&got).into_owned();
    let status = text.lines().next().unwrap_or_default().to_string();
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.as_bytes().to_vec())
        .unwrap_or_default();
    Ok((status, body))
}

fn unlisted() -> Check {
    const N: &str = "egress-unlisted";
    const T: &str = "an unlisted name is refused by the proxy";
    match connect("qwrap-verify-unlisted.invalid:443") {
        Ok((status, _)) if status.starts_with("HTTP/1.1 403") => Check::pass(N, T),
        Ok((status, _)) => Check::fail(N, T, "HTTP/1.1 403", status),
        Err(e) => Check::fail(N, T, "HTTP/1.1 403", e.to_string()),
    }
}

fn listed(target: Option<&str>) -> Check {
    const N: &str = "egress-listed";
    const T: &str = "a listed destination is reached through the proxy";
    let Some(target) = target else {
        return Check::skip(N, T, "no test server could be started on the host".into());
    };
    match connect(target) {
        Ok((status, body)) if status.starts_with("HTTP/1.1 200") && body == GREETING => Check::pass(N, T),
        Ok((status, _)) => Check::fail(N, T, "HTTP/1.1 200 and the test server's greeting", status),
        Err(e) => Check::fail(N, T, "HTTP/1.1 200", e.to_string()),
    }
}
