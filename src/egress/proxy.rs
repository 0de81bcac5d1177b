//! The egress proxy, served by the warden from outside the sandbox: the
//! listening socket lives in the sandbox's network namespace (its only way
//! out), the connections out are made from the host's. One thread per
//! client; a request head must arrive whole within `HEAD_TIMEOUT` and
//! `MAX_HEAD` bytes, or the client is turned away without harming others.

use super::request::{self, Head, Parsed};
use super::rules::{AllowList, Verdict};
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How long a client may take to send its request head.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections served at once; more are closed at once, so that a command
/// cannot exhaust the warden's memory with threads.
pub const MAX_CLIENTS: usize = 1024;

/// Told of each refusal: protocol, destination, reason.
pub type Told = Box<dyn Fn(&str, &str, &str) + Send + Sync>;

/// What the warden serves with.
pub struct Config {
    pub allow: AllowList,
    /// `--egress-log`: one JSON line per connection.
    pub log: Option<Mutex<std::fs::File>>,
    /// Connections being served, so that the warden lets them finish
    /// (and be logged) before it exits.
    pub active: AtomicUsize,
    /// qwrap's stderr, where each refusal is said once per destination.
    pub say: Option<Mutex<(std::fs::File, std::collections::HashSet<String>)>>,
    /// `--explain`: told of each refusal (protocol, destination, reason).
    pub refused: Option<Told>,
}

impl Config {
    pub fn new(allow: AllowList, log: Option<std::fs::File>) -> Self {
        Config {
            allow,
            log: log.map(Mutex::new),
            active: AtomicUsize::new(0),
            say: None,
            refused: None,
        }
    }

    /// Says refusals on `stderr` (a duplicate of qwrap's).
    pub fn saying(mut self, stderr: std::fs::File) -> Self {
        self.say = Some(Mutex::new((stderr, std::collections::HashSet::new())));
        self
    }

    /// Waits up to `limit` for the connections being served to end.
    pub fn drain(&self, limit: Duration) {
        let end = Instant::now() + limit;
        while self.active.load(Ordering::SeqCst) > 0 && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Accepts clients until the process ends.
pub fn serve(listener: TcpListener, config: Arc<Config>) {
    for client in listener.incoming() {
        match client {
            Ok(c) if config.active.load(Ordering::SeqCst) >= MAX_CLIENTS => drop(c),
            Ok(c) => {
                let cfg = Arc::clone(&config);
                cfg.active.fetch_add(1, Ordering::SeqCst);
                let spawned = std::thread::Builder::new().stack_size(256 * 1024).spawn(move || {
                    handle(c, &cfg);
                    cfg.active.fetch_sub(1, Ordering::SeqCst);
                });
                if spawned.is_err() {
                    config.active.fetch_sub(1, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
            // Out of descriptors or memory: let others finish first.
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// One connection's record.
struct Entry {
    protocol: &'static str,
    destination: String,
    verdict: &'static str,
    reason: String,
    up: u64,
    down: u64,
}

fn handle(mut client: TcpStream, cfg: &Config) {
    let deadline = Instant::now() + head_timeout();
    let mut buf = Vec::with_capacity(2048);
    // Each path logs its connection before the client hears the end of
    // it: the log is whole once the command has seen all its answers.
    match read_more(&mut client, &mut buf, deadline) {
        Ok(0) | Err(_) => {}
        Ok(_) if buf[0] == 5 => socks(&mut client, buf, deadline, cfg),
        Ok(_) => http(&mut client, buf, deadline, cfg),
    }
}

/// Reads what is there (at least one byte) before the deadline.
fn read_more(c: &mut TcpStream, buf: &mut Vec<u8>, deadline: Instant) -> std::io::Result<usize> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(std::io::ErrorKind::TimedOut.into());
    }
    c.set_read_timeout(Some(left))?;
    let mut chunk = [0u8; 4096];
    let n = c.read(&mut chunk)?;
    buf.extend_from_slice(&chunk[..n]);
    Ok(n)
}

/// Parses with `parse`, reading until it completes; None when the client
/// went away or ran out of time or room.
fn read_until<T>(
    c: &mut TcpStream,
    buf: &mut Vec<u8>,
    deadline: Instant,
    parse: impl Fn(&[u8]) -> Parsed<T>,
) -> Option<Parsed<T>> {
    loop {
        match parse(buf) {
            Parsed::More if buf.len() < request::MAX_HEAD => {}
            Parsed::More => return Some(Parsed::Bad("request too large", 431)),
            done => return Some(done),
        }
        match read_more(c, buf, deadline) {
            Ok(n) if n > 0 => {}
            _ => return None,
        }
    }
}

fn http(client: &mut TcpStream, mut buf: Vec<u8>, deadline: Instant, cfg: &Config) {
    let (head, used) = match read_until(client, &mut buf, deadline, request::http_head) {
        Some(Parsed::Done(h, used)) => (h, used),
        Some(Parsed::Bad(why, status)) => {
            log(cfg, &entry("http", "", "bad", why.to_string()));
            return refuse_http(client, status, why);
        }
        _ => return,
    };
    let (protocol, host, port, upstream_head) = match head {
        Head::Connect { host, port } => ("connect", host, port, None),
        Head::Forward { host, port, head } => ("http", host, port, Some(head)),
    };
    let tunnel = upstream_head.is_none();
    let mut first = upstream_head.unwrap_or_default();
    first.extend_from_slice(&buf[used..]);
    go_out(
        client,
        cfg,
        protocol,
        &host,
        port,
        &first,
        &|c, answer| match answer {
            Answer::Denied(dest, why) => {
                refuse_http(c, 403, &format!("egress to {dest} is not allowed: {why}"))
            }
            Answer::Failed(dest, why) => refuse_http(c, 502, &format!("cannot reach {dest}: {why}")),
            Answer::Connected if tunnel => {
                let _ = c.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n");
            }
            Answer::Connected => {}
        },
    );
}

fn socks(client: &mut TcpStream, mut buf: Vec<u8>, deadline: Instant, cfg: &Config) {
    let used = match read_until(client, &mut buf, deadline, request::socks_greeting) {
        Some(Parsed::Done(true, used)) => used,
        Some(Parsed::Done(false, _)) => {
            log(
                cfg,
                &entry("socks5", "", "bad", "no acceptable authentication method".into()),
            );
            let _ = client.write_all(&[5, 0xff]);
            return;
        }
        Some(_) => return log(cfg, &entry("socks5", "", "bad", "malformed greeting".into())),
        None => return,
    };
    if client.write_all(&[5, 0]).is_err() {
        return;
    }
    buf.drain(..used);
    let reply = |c: &mut TcpStream, code: u16| {
        let _ = c.write_all(&[5, code as u8, 0, 1, 0, 0, 0, 0, 0, 0]);
    };
    let ((host, port), used) = match read_until(client, &mut buf, deadline, request::socks_request) {
        Some(Parsed::Done(d, used)) => (d, used),
        Some(Parsed::Bad(why, code)) => {
            log(cfg, &entry("socks5", "", "bad", why.to_string()));
            return reply(client, code);
        }
        _ => return,
    };
    go_out(
        client,
        cfg,
        "socks5",
        &host,
        port,
        &buf[used..],
        &|c, answer| match answer {
            Answer::Denied(..) => reply(c, request::SOCKS_REFUSED),
            Answer::Failed(..) => reply(c, request::SOCKS_UNREACHABLE),
            Answer::Connected => reply(c, 0),
        },
    );
}

/// What the client is told, in its protocol's words.
enum Answer<'a> {
    Denied(&'a str, &'a str),
    Failed(&'a str, &'a str),
    Connected,
}

/// Judges the destination, connects out, sends `first` (what the client
/// sent beyond its request, or the rewritten head) and relays; logs the
/// connection before the client is answered or sees its end.
fn go_out(
    client: &mut TcpStream,
    cfg: &Config,
    protocol: &'static str,
    host: &str,
    port: u16,
    first: &[u8],
    answer: &dyn Fn(&mut TcpStream, Answer),
) {
    let destination = format!("{host}:{port}");
    let addrs = match cfg.allow.decide(host, port, &resolve) {
        Verdict::Allow(a) => a,
        Verdict::Deny(why) => {
            log(cfg, &entry(protocol, &destination, "denied", why.clone()));
            return answer(client, Answer::Denied(&destination, &why));
        }
    };
    let mut up = match connect(&addrs) {
        Ok(u) => u,
        Err(e) => {
            let why = e.to_string();
            log(cfg, &entry(protocol, &destination, "failed", why.clone()));
            return answer(client, Answer::Failed(&destination, &why));
        }
    };
    if let Err(e) = up.write_all(first) {
        log(cfg, &entry(protocol, &destination, "failed", e.to_string()));
        return answer(client, Answer::Failed(&destination, &e.to_string()));
    }
    answer(client, Answer::Connected);
    relay(client, up, |sent, received| {
        let mut e = entry(protocol, &destination, "allowed", String::new());
        (e.up, e.down) = (sent + first.len() as u64, received);
        log(cfg, &e);
    });
}

fn entry(protocol: &'static str, destination: &str, verdict: &'static str, reason: String) -> Entry {
    Entry {
        protocol,
        destination: destination.to_string(),
        verdict,
        reason,
        up: 0,
        down: 0,
    }
}

fn refuse_http(c: &mut TcpStream, status: u16, why: &str) {
    let reason = match status {
        403 => "Forbidden",
        431 => "Request Header Fields Too Large",
        502 => "Bad Gateway",
        505 => "HTTP Version Not Supported",
        _ => "Bad Request",
    };
    let body = format!("qwrap egress proxy: {why}\n");
    let _ = c.write_all(
        format!(
            "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    );
}

fn connect(addrs: &[SocketAddr]) -> std::io::Result<TcpStream> {
    let mut last = std::io::Error::from(std::io::ErrorKind::NotFound);
    for a in addrs {
        match TcpStream::connect_timeout(a, CONNECT_TIMEOUT) {
            Ok(s) => return Ok(s),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// Copies both ways until both sides are done. `before_end` gets the
/// bytes sent up and down so far once the destination is done, before the
/// client sees the end.
fn relay(client: &mut TcpStream, up: TcpStream, before_end: impl FnOnce(u64, u64)) {
    let _ = client.set_read_timeout(None);
    let (Ok(mut client_r), Ok(mut up_w)) = (client.try_clone(), up.try_clone()) else {
        return before_end(0, 0);
    };
    let sent = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&sent);
    let upward = std::thread::Builder::new().stack_size(64 * 1024).spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        while let Ok(n) = client_r.read(&mut buf) {
            if n == 0 || up_w.write_all(&buf[..n]).is_err() {
                break;
            }
            counter.fetch_add(n as u64, Ordering::SeqCst);
        }
        let _ = up_w.shutdown(Shutdown::Write);
    });
    let mut up_r = up;
    let down = std::io::copy(&mut up_r, client).unwrap_or(0);
    before_end(sent.load(Ordering::SeqCst), down);
    let _ = client.shutdown(Shutdown::Write);
    if let Ok(t) = upward {
        let _ = t.join();
    }
}

fn resolve(name: &str, port: u16) -> std::io::Result<Vec<SocketAddr>> {
    if let Some(a) = test_resolver(name, port) {
        return Ok(a);
    }
    super::dns::resolve(name, port)
}

/// Test builds only (cargo feature `fault-injection`):
/// `QWRAP_TEST_RESOLVE=name=ip,…` answers lookups of those names, so that
/// tests can point a listed name at a loopback server.
#[cfg(feature = "fault-injection")]
fn test_resolver(name: &str, port: u16) -> Option<Vec<SocketAddr>> {
    let map = std::env::var("QWRAP_TEST_RESOLVE").ok()?;
    map.split(',').find_map(|pair| {
        let (n, ip) = pair.split_once('=')?;
        let ip = ip.parse().ok()?;
        (n == name).then(|| vec![SocketAddr::new(ip, port)])
    })
}

/// Test builds only: `QWRAP_TEST_EGRESS_TIMEOUT_MS` shortens the time a
/// client has to send its request head.
#[cfg(feature = "fault-injection")]
fn head_timeout() -> Duration {
    std::env::var("QWRAP_TEST_EGRESS_TIMEOUT_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(HEAD_TIMEOUT, Duration::from_millis)
}

#[cfg(not(feature = "fault-injection"))]
fn head_timeout() -> Duration {
    HEAD_TIMEOUT
}

#[cfg(not(feature = "fault-injection"))]
fn test_resolver(_: &str, _: u16) -> Option<Vec<SocketAddr>> {
    None
}

fn log(cfg: &Config, e: &Entry) {
    if e.verdict == "denied"
        && let Some(tell) = &cfg.refused
    {
        tell(e.protocol, &e.destination, &e.reason);
    }
    if e.verdict != "allowed"
        && let Some(say) = &cfg.say
        && let Ok(mut s) = say.lock()
        && s.1.insert(e.destination.clone())
    {
        let line = format!("qwrap: egress refused: {}: {}\n", e.destination, e.reason);
        let _ = s.0.write_all(line.as_bytes());
    }
    let Some(file) = &cfg.log else { return };
    let time = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let line = serde_json::json!({
        "time": time,
        "protocol": e.protocol,
        "destination": e.destination,
        "verdict": e.verdict,
        "reason": e.reason,
        "bytes_up": e.up,
        "bytes_down": e.down,
    });
    if let Ok(mut f) = file.lock() {
        let _ = f.write_all(format!("{line}\n").as_bytes());
    }
}
