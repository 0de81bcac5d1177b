//! What a client asks the proxy, parsed from the bytes it sent: an HTTP
//! `CONNECT host:port`, a plain HTTP request with an absolute URI, or a
//! SOCKS5 greeting and CONNECT. Pure: the proxy feeds it what it has read so
//! far and learns whether more is needed (fuzzed: fuzz/fuzz_targets). HTTP
//! heads are httparse's to parse (strict: one space between the request
//! line's parts, no folded or malformed header lines); SOCKS5 is short
//! enough to read by hand.

/// The largest request head read before the client is turned away.
pub const MAX_HEAD: usize = 16 * 1024;

/// A parse of what has been read so far.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed<T> {
    /// Not complete yet: read more.
    More,
    /// Complete: the value and how many bytes it took.
    Done(T, usize),
    /// Refused: why, and the status (HTTP) or reply code (SOCKS) to send.
    Bad(&'static str, u16),
}

/// An HTTP request head.
#[derive(Debug, PartialEq, Eq)]
pub enum Head {
    /// `CONNECT host:port`: a tunnel.
    Connect { host: String, port: u16 },
    /// A request with an absolute `http://` URI: where it goes and the head
    /// to send there (origin-form target, `Connection: close`, no
    /// `Proxy-*` headers).
    Forward { host: String, port: u16, head: Vec<u8> },
}

/// The most header lines a request head may have.
const MAX_HEADERS: usize = 100;

/// Parses an HTTP request head (through the blank line), with httparse.
pub fn http_head(buf: &[u8]) -> Parsed<Head> {
    let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut slots);
    let used = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) if n > MAX_HEAD => {
            return Parsed::Bad("request head too large", 431);
        }
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if buf.len() >= MAX_HEAD => {
            return Parsed::Bad("request head too large", 431);
        }
        Ok(httparse::Status::Partial) => return Parsed::More,
        Err(httparse::Error::Version) => return Parsed::Bad("unsupported HTTP version", 505),
        Err(httparse::Error::TooManyHeaders) => return Parsed::Bad("too many header lines", 431),
        Err(httparse::Error::HeaderName | httparse::Error::HeaderValue) => {
            return Parsed::Bad("malformed header", 400);
        }
        Err(_) => return Parsed::Bad("malformed request line", 400),
    };
    let (Some(method), Some(target), Some(minor)) = (req.method, req.path, req.version) else {
        return Parsed::Bad("malformed request line", 400);
    };
    let version = if minor == 1 { "HTTP/1.1" } else { "HTTP/1.0" };
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase() || b == b'-') {
        return Parsed::Bad("malformed method", 400);
    }
    let mut headers: Vec<(&str, &str)> = Vec::new();
    for h in req.headers.iter() {
        let Ok(value) = std::str::from_utf8(h.value) else {
            return Parsed::Bad("request head is not UTF-8", 400);
        };
        headers.push((h.name, value.trim()));
    }
    if method == "CONNECT" {
        return match authority(target, None) {
            Some((host, port)) => Parsed::Done(Head::Connect { host, port }, used),
            None => Parsed::Bad("CONNECT needs host:port", 400),
        };
    }
    let Some(rest) = strip_prefix_ignore_case(target, "http://") else {
        return Parsed::Bad(
            "a proxy request needs an absolute http:// URI (use CONNECT for https)",
            400,
        );
    };
    let split = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (auth, path) = rest.split_at(split);
    let Some((host, port)) = authority(auth, Some(80)) else {
        return Parsed::Bad("malformed URI authority", 400);
    };
    let path = match path {
        "" => "/".to_string(),
        p if p.starts_with('/') => p.split('#').next().unwrap_or("/").to_string(),
        p => format!("/{}", p.split('#').next().unwrap_or_default()),
    };
    let mut head = format!("{method} {path} {version}\r\n");
    let mut has_host = false;
    for (name, value) in &headers {
        let lower = name.to_ascii_lowercase();
        if lower.starts_with("proxy-") || lower == "connection" || lower == "keep-alive" {
            continue;
        }
        has_host |= lower == "host";
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if !has_host {
        head.push_str(&format!("Host: {auth}\r\n"));
    }
    head.push_str("Connection: close\r\n\r\n");
    Parsed::Done(
        Head::Forward {
            host,
            port,
            head: head.into_bytes(),
        },
        used,
    )
}

/// `host:port` (or `[v6]:port`); the port may be left out when a default
/// is given. No user info.
fn authority(s: &str, default: Option<u16>) -> Option<(String, u16)> {
    if s.is_empty() || s.contains('@') {
        return None;
    }
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let (h, after) = rest.split_once(']')?;
        h.parse::<std::net::Ipv6Addr>().ok()?;
        (format!("[{h}]"), after.strip_prefix(':'))
    } else {
        match s.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (s.to_string(), None),
        }
    };
    let port = match port {
        Some(p) => p.parse::<u16>().ok().filter(|p| *p != 0)?,
        None => default?,
    };
    ((!host.is_empty() && !host.contains(':')) || host.starts_with('[')).then_some((host, port))
}

fn strip_prefix_ignore_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    // `get`: the prefix's length may fall inside a character.
    s.get(..prefix.len())
        .filter(|head| head.eq_ignore_ascii_case(prefix))
        .map(|_| &s[prefix.len()..])
}

/// SOCKS5 reply codes the proxy sends.
pub const SOCKS_REFUSED: u16 = 0x02;
pub const SOCKS_UNREACHABLE: u16 = 0x04;
pub const SOCKS_BAD_COMMAND: u16 = 0x07;
pub const SOCKS_BAD_ADDRESS: u16 = 0x08;

/// The SOCKS5 greeting: whether "no authentication" is offered.
pub fn socks_greeting(buf: &[u8]) -> Parsed<bool> {
    match buf {
        [] | [5] => Parsed::More,
        [5, n, methods @ ..] => {
            let n = usize::from(*n);
            if methods.len() < n {
                Parsed::More
            } else {
                Parsed::Done(methods[..n].contains(&0), 2 + n)
            }
        }
        _ => Parsed::Bad("not SOCKS5", 0xff),
    }
}

/// A SOCKS5 request: the destination of a CONNECT.
pub fn socks_request(buf: &[u8]) -> Parsed<(String, u16)> {
    if buf.len() < 5 {
        return Parsed::More;
    }
    if buf[0] != 5 || buf[2] != 0 {
        return Parsed::Bad("malformed SOCKS5 request", 0x01);
    }
    if buf[1] != 1 {
        return Parsed::Bad("only CONNECT is served", SOCKS_BAD_COMMAND);
    }
    let (host, at) = match buf[3] {
        1 => {
            let Some(a) = buf.get(4..8) else {
                return Parsed::More;
            };
            (std::net::Ipv4Addr::new(a[0], a[1], a[2], a[3]).to_string(), 8)
        }
        3 => {
            let n = usize::from(buf[4]);
            let Some(name) = buf.get(5..5 + n) else {
                return Parsed::More;
            };
            match std::str::from_utf8(name) {
                Ok(s) if n > 0 => (s.to_string(), 5 + n),
                _ => return Parsed::Bad("malformed domain name", SOCKS_BAD_ADDRESS),
            }
        }
        4 => {
            let Some(a) = buf.get(4..20) else {
                return Parsed::More;
            };
            let mut o = [0u8; 16];
            o.copy_from_slice(a);
            (format!("[{}]", std::net::Ipv6Addr::from(o)), 20)
        }
        _ => return Parsed::Bad("unknown address type", SOCKS_BAD_ADDRESS),
    };
    let Some(p) = buf.get(at..at + 2) else {
        return Parsed::More;
    };
    let port = u16::from_be_bytes([p[0], p[1]]);
    if port == 0 {
        return Parsed::Bad("port 0", SOCKS_BAD_ADDRESS);
    }
    Parsed::Done((host, port), at + 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect() {
        let r = b"CONNECT static.crates.io:443 HTTP/1.1\r\nHost: static.crates.io:443\r\n\r\nextra";
        assert_eq!(
            http_head(r),
            Parsed::Done(
                Head::Connect {
                    host: "static.crates.io".into(),
                    port: 443
                },
                r.len() - 5
            )
        );
        assert!(matches!(
            http_head(b"CONNECT [::1]:8443 HTTP/1.1\r\n\r\n"),
            Parsed::Done(Head::Connect { port: 8443, .. }, _)
        ));
        assert_eq!(
            http_head(b"CONNECT static.crates.io:443 HTTP/1.1\r\nHo"),
            Parsed::More
        );
        for bad in [
            &b"CONNECT host HTTP/1.1\r\n\r\n"[..],
            b"CONNECT host:0 HTTP/1.1\r\n\r\n",
            b"CONNECT user@host:443 HTTP/1.1\r\n\r\n",
            b"CONNECT a:b:443 HTTP/1.1\r\n\r\n",
            b"CONNECT  host:443 HTTP/1.1\r\n\r\n",
            b"GET /x HTTP/1.1\r\n\r\n",
            b"GET https://x/ HTTP/1.1\r\n\r\n",
            b"GET http://x/ HTTP/2\r\n\r\n",
            b"GET http://x/ HTTP/1.1\r\nBad Header: x\r\n\r\n",
            b"GET http://x/ HTTP/1.1\r\n folded\r\n\r\n",
        ] {
            assert!(
                matches!(http_head(bad), Parsed::Bad(..)),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn forward_rewrites_to_origin_form() {
        let r = b"GET http://Example.com:8080/a?b=1#frag HTTP/1.1\r\nHost: example.com:8080\r\nProxy-Authorization: x\r\nConnection: keep-alive\r\nAccept: */*\r\n\r\n";
        let Parsed::Done(Head::Forward { host, port, head }, used) = http_head(r) else {
            panic!()
        };
        assert_eq!((host.as_str(), port, used), ("Example.com", 8080, r.len()));
        assert_eq!(
            String::from_utf8(head).unwrap(),
            "GET /a?b=1 HTTP/1.1\r\nHost: example.com:8080\r\nAccept: */*\r\nConnection: close\r\n\r\n"
        );
        let Parsed::Done(Head::Forward { port, head, .. }, _) =
            http_head(b"HEAD http://x.org HTTP/1.0\r\n\r\n")
        else {
            panic!()
        };
        assert_eq!(port, 80);
        assert_eq!(
            head,
            b"HEAD / HTTP/1.0\r\nHost: x.org\r\nConnection: close\r\n\r\n"
        );
    }

    #[test]
    fn a_target_with_a_character_across_the_scheme_is_refused() {
        assert!(matches!(
            http_head("GET http:/\u{34d}g:80/ HTTP/1.1\r\n\r\n".as_bytes()),
            Parsed::Bad(..)
        ));
    }

    #[test]
    fn oversized_heads_are_refused() {
        let mut r = b"GET http://x/ HTTP/1.1\r\n".to_vec();
        r.extend(std::iter::repeat_n(b'a', MAX_HEAD));
        assert_eq!(http_head(&r), Parsed::Bad("request head too large", 431));
    }

    #[test]
    fn socks() {
        assert_eq!(socks_greeting(&[5, 2, 2, 0]), Parsed::Done(true, 4));
        assert_eq!(socks_greeting(&[5, 1, 2]), Parsed::Done(false, 3));
        assert_eq!(socks_greeting(&[5, 2, 0]), Parsed::More);
        assert!(matches!(socks_greeting(&[4, 1, 0]), Parsed::Bad(..)));
        let mut r = vec![5, 1, 0, 3, 11];
        r.extend(b"example.com");
        r.extend(443u16.to_be_bytes());
        assert_eq!(
            socks_request(&r),
            Parsed::Done(("example.com".into(), 443), r.len())
        );
        assert_eq!(socks_request(&r[..r.len() - 1]), Parsed::More);
        assert_eq!(
            socks_request(&[5, 1, 0, 1, 127, 0, 0, 1, 0, 80]),
            Parsed::Done(("127.0.0.1".into(), 80), 10)
        );
        let mut v6 = vec![5, 1, 0, 4];
        v6.extend(std::net::Ipv6Addr::LOCALHOST.octets());
        v6.extend(22u16.to_be_bytes());
        assert_eq!(socks_request(&v6), Parsed::Done(("[::1]".into(), 22), 22));
        assert!(matches!(
            socks_request(&[5, 2, 0, 1, 1, 1, 1, 1, 0, 80]),
            Parsed::Bad(_, SOCKS_BAD_COMMAND)
        ));
        assert!(matches!(
            socks_request(&[5, 1, 0, 9, 0]),
            Parsed::Bad(_, SOCKS_BAD_ADDRESS)
        ));
        assert!(matches!(
            socks_request(&[5, 1, 0, 3, 0, 0, 80]),
            Parsed::Bad(_, SOCKS_BAD_ADDRESS)
        ));
    }
}
