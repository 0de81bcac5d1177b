//! Name lookups for the egress proxy, without the C library's resolver: a
//! static binary's glibc can only resolve with the NSS modules of its own
//! version installed, which a host of another distribution lacks. The
//! proxy reads /etc/hosts, then asks the nameservers of /etc/resolv.conf
//! over UDP for A and AAAA records. Names are asked as given (no search
//! domains): clients name the hosts they reach in full.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(3);
const TYPE_A: u16 = 1;
const TYPE_AAAA: u16 = 28;

/// The addresses of `name` (normalised, lower case) on `port`.
pub fn resolve(name: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
    let hosts = std::fs::read_to_string("/etc/hosts").unwrap_or_default();
    let mut ips = from_hosts(&hosts, name);
    if ips.is_empty() {
        let conf = std::fs::read_to_string("/etc/resolv.conf").unwrap_or_default();
        let mut last = io::Error::new(io::ErrorKind::NotFound, "no answer");
        for server in nameservers(&conf) {
            match ask(server, name) {
                Ok(found) => {
                    ips = found;
                    break;
                }
                Err(e) => last = e,
            }
        }
        if ips.is_empty() {
            return Err(last);
        }
    }
    Ok(ips.into_iter().map(|ip| SocketAddr::new(ip, port)).collect())
}

/// The addresses /etc/hosts gives a name.
pub fn from_hosts(text: &str, name: &str) -> Vec<IpAddr> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or_default())
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let ip: IpAddr = words.next()?.parse().ok()?;
            words.any(|w| w.eq_ignore_ascii_case(name)).then_some(ip)
        })
        .collect()
}

/// The nameservers of resolv.conf (at most three, as glibc reads), or the
/// local one.
pub fn nameservers(text: &str) -> Vec<SocketAddr> {
    let mut v: Vec<SocketAddr> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("nameserver"))
        .filter_map(|rest| rest.trim().split(['%', ' ']).next()?.parse::<IpAddr>().ok())
        .map(|ip| SocketAddr::new(ip, 53))
        .take(3)
        .collect();
    if v.is_empty() {
        v.push(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 53));
    }
    v
}

/// A and AAAA from one nameserver.
fn ask(server: SocketAddr, name: &str) -> io::Result<Vec<IpAddr>> {
    let local: SocketAddr = if server.is_ipv4() {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let sock = UdpSocket::bind(local)?;
    sock.connect(server)?;
    sock.set_read_timeout(Some(TIMEOUT))?;
    let mut ips = Vec::new();
    for qtype in [TYPE_A, TYPE_AAAA] {
        // std's hasher keys come from the OS's randomness.
        let id = {
            use std::hash::{BuildHasher, Hasher};
            std::collections::hash_map::RandomState::new()
                .build_hasher()
                .finish() as u16
        };
        sock.send(&query(id, name, qtype)?)?;
        let mut buf = [0u8; 1500];
        // Answers to other ids (late replies) are skipped.
        for _ in 0..4 {
            let n = sock.recv(&mut buf)?;
            match answer(&buf[..n], id) {
                Some(Ok(found)) => {
                    ips.extend(found);
                    break;
                }
                // NXDOMAIN: no such name, no need to ask for AAAA.
                Some(Err(3)) => return Ok(ips),
                Some(Err(_)) => break,
                None => continue,
            }
        }
    }
    Ok(ips)
}

/// A recursive query for `name`.
pub fn query(id: u16, name: &str, qtype: u16) -> io::Result<Vec<u8>> {
    let mut q = Vec::with_capacity(32 + name.len());
    q.extend(id.to_be_bytes());
    q.extend([0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
    for label in name.split('.').filter(|l| !l.is_empty()) {
        let len = u8::try_from(label.len())
            .ok()
            .filter(|l| *l <= 63)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "label too long"))?;
        q.push(len);
        q.extend(label.as_bytes());
    }
    q.push(0);
    q.extend(qtype.to_be_bytes());
    q.extend(1u16.to_be_bytes());
    Ok(q)
}

/// The A and AAAA records of a response with this id: None when it is not
/// one (another id, not a response, malformed); the RCODE when it failed.
pub fn answer(buf: &[u8], id: u16) -> Option<Result<Vec<IpAddr>, u8>> {
    if buf.len() < 12 || u16::from_be_bytes([buf[0], buf[1]]) != id || buf[2] & 0x80 == 0 {
        return None;
    }
    let rcode = buf[3] & 0x0f;
    if rcode != 0 {
        return Some(Err(rcode));
    }
    let qd = u16::from_be_bytes([buf[4], buf[5]]);
    let an = u16::from_be_bytes([buf[6], buf[7]]);
    let mut at = 12;
    for _ in 0..qd {
        at = skip_name(buf, at)? + 4;
    }
    let mut ips = Vec::new();
    for _ in 0..an {
        at = skip_name(buf, at)?;
        let head = buf.get(at..at + 10)?;
        let rtype = u16::from_be_bytes([head[0], head[1]]);
        let class = u16::from_be_bytes([head[2], head[3]]);
        let len = usize::from(u16::from_be_bytes([head[8], head[9]]));
        let data = buf.get(at + 10..at + 10 + len)?;
        match (rtype, class, len) {
            (TYPE_A, 1, 4) => ips.push(IpAddr::V4(Ipv4Addr::new(data[0], data[1], data[2], data[3]))),
            (TYPE_AAAA, 1, 16) => {
                let mut o = [0u8; 16];
                o.copy_from_slice(data);
                ips.push(IpAddr::V6(Ipv6Addr::from(o)));
            }
            _ => {}
        }
        at += 10 + len;
    }
    Some(Ok(ips))
}

/// The offset after a (possibly compressed) name.
fn skip_name(buf: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let len = *buf.get(at)?;
        match len {
            0 => return Some(at + 1),
            l if l & 0xc0 == 0xc0 => {
                buf.get(at + 1)?;
                return Some(at + 2);
            }
            l if l & 0xc0 == 0 => at += 1 + usize::from(l),
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_and_resolv_conf() {
        let hosts = "127.0.0.1 localhost\n::1 localhost ip6-localhost # c\n10.0.0.5 Build.Example build # x\n#10.0.0.6 build\n";
        assert_eq!(
            from_hosts(hosts, "build.example"),
            vec!["10.0.0.5".parse::<IpAddr>().unwrap()]
        );
        assert_eq!(from_hosts(hosts, "localhost").len(), 2);
        assert!(from_hosts(hosts, "nope").is_empty());
        let conf = "search x\nnameserver 10.255.255.53\nnameserver fe80::1%eth0\nnameserver bogus\nnameserver 1.1.1.1\nnameserver 8.8.8.8\n";
        assert_eq!(
            nameservers(conf),
            vec![
                "10.255.255.53:53".parse().unwrap(),
                "[fe80::1]:53".parse().unwrap(),
                "1.1.1.1:53".parse().unwrap()
            ]
        );
        assert_eq!(nameservers(""), vec!["127.0.0.1:53".parse().unwrap()]);
    }

    #[test]
    fn a_response_is_read() {
        let q = query(0x1234, "a.example.com", TYPE_A).unwrap();
        let mut r = q.clone();
        r[2] = 0x81;
        r[3] = 0x80;
        r[7] = 2;
        // A CNAME (compressed owner), then the A record.
        r.extend([0xc0, 12, 0, 5, 0, 1, 0, 0, 0, 60, 0, 2, 0xc0, 12]);
        r.extend([0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 93, 184, 216, 34]);
        assert_eq!(
            answer(&r, 0x1234),
            Some(Ok(vec!["93.184.216.34".parse().unwrap()]))
        );
        assert_eq!(answer(&r, 0x9999), None, "another id");
        assert_eq!(answer(&r[..r.len() - 2], 0x1234), None, "truncated");
        let mut nx = q.clone();
        nx[2] = 0x81;
        nx[3] = 0x83;
        assert_eq!(answer(&nx, 0x1234), Some(Err(3)));
        assert_eq!(answer(&q, 0x1234), None, "a query is not an answer");
        assert!(query(1, &"x".repeat(64), TYPE_A).is_err());
    }
}
