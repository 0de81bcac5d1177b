//! Name lookups for the egress proxy, without the C library's resolver: a
//! static binary's glibc can only resolve with the NSS modules of its own
//! version installed, which a host of another distribution lacks. The
//! proxy reads /etc/hosts, then asks the nameservers of /etc/resolv.conf
//! over UDP for A and AAAA records (over TCP when an answer is truncated).
//! Names are asked as given (no search domains): clients name the hosts
//! they reach in full. The messages are hickory-proto's: an answer counts
//! only with the query's random id and the very question asked.

use hickory_proto::op::{Message, MessageType, Query, ResponseCode};
pub use hickory_proto::rr::RecordType;
use hickory_proto::rr::{DNSClass, Name, RData};
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(3);

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

/// What a nameserver said to one question.
#[derive(Debug, PartialEq, Eq)]
pub enum Reply {
    /// The A or AAAA records of the answer (CNAMEs followed by the server).
    Found(Vec<IpAddr>),
    /// The RCODE of a failure (3: no such name).
    Failed(u16),
    /// The answer did not fit in UDP: ask again over TCP.
    Truncated,
}

/// A and AAAA from one nameserver: over UDP, and over TCP when an answer
/// was truncated.
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
    for qtype in [RecordType::A, RecordType::AAAA] {
        let (id, q) = query(name, qtype)?;
        sock.send(&q)?;
        let mut buf = [0u8; 1500];
        // Answers to other ids or questions (late replies) are skipped.
        let mut reply = None;
        for _ in 0..4 {
            let n = sock.recv(&mut buf)?;
            if let Some(r) = answer(&buf[..n], id, name, qtype) {
                reply = Some(r);
                break;
            }
        }
        let reply = match reply {
            Some(Reply::Truncated) => over_tcp(server, &q, id, name, qtype)?,
            Some(r) => r,
            None => continue,
        };
        match reply {
            Reply::Found(found) => ips.extend(found),
            // NXDOMAIN: no such name, no need to ask for AAAA.
            Reply::Failed(3) => return Ok(ips),
            Reply::Failed(_) | Reply::Truncated => {}
        }
    }
    Ok(ips)
}

/// The same question over TCP (RFC 7766: a two-byte length before each
/// message).
fn over_tcp(server: SocketAddr, q: &[u8], id: u16, name: &str, qtype: RecordType) -> io::Result<Reply> {
    use std::io::{Read, Write};
    let mut tcp = std::net::TcpStream::connect_timeout(&server, TIMEOUT)?;
    tcp.set_read_timeout(Some(TIMEOUT))?;
    let len =
        u16::try_from(q.len()).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "query too long"))?;
    let mut framed = len.to_be_bytes().to_vec();
    framed.extend(q);
    tcp.write_all(&framed)?;
    let mut len = [0u8; 2];
    tcp.read_exact(&mut len)?;
    let mut buf = vec![0u8; usize::from(u16::from_be_bytes(len))];
    tcp.read_exact(&mut buf)?;
    answer(&buf, id, name, qtype)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "not an answer to the question"))
}

/// A recursive query for `name`, with a random id (the id and the query).
pub fn query(name: &str, qtype: RecordType) -> io::Result<(u16, Vec<u8>)> {
    let invalid = |e: &dyn std::fmt::Display| io::Error::new(io::ErrorKind::InvalidInput, e.to_string());
    let owner = Name::from_ascii(name).map_err(|e| invalid(&e))?;
    let mut m = Message::query();
    m.metadata.recursion_desired = true;
    m.add_query(Query::query(owner, qtype));
    let bytes = m.to_vec().map_err(|e| invalid(&e))?;
    Ok((m.metadata.id, bytes))
}

/// What a response says to the question asked (`id`, `name`, `qtype`):
/// None when it is not a response to it (another id, not a response,
/// another question, malformed).
pub fn answer(buf: &[u8], id: u16, name: &str, qtype: RecordType) -> Option<Reply> {
    let m = Message::from_vec(buf).ok()?;
    if m.metadata.id != id || m.metadata.message_type != MessageType::Response {
        return None;
    }
    let asked = Name::from_ascii(name).ok()?;
    let same_question = matches!(
        m.queries.as_slice(),
        [q] if q.query_type() == qtype && q.query_class() == DNSClass::IN && q.name().eq_ignore_root(&asked)
    );
    if !same_question {
        return None;
    }
    if m.metadata.truncation {
        return Some(Reply::Truncated);
    }
    let code = m.metadata.response_code;
    if code != ResponseCode::NoError {
        return Some(Reply::Failed(u16::from(code)));
    }
    let ips = m
        .answers
        .iter()
        .filter(|r| r.dns_class == DNSClass::IN)
        .filter_map(|r| match &r.data {
            RData::A(a) if qtype == RecordType::A => Some(IpAddr::V4(a.0)),
            RData::AAAA(a) if qtype == RecordType::AAAA => Some(IpAddr::V6(a.0)),
            _ => None,
        })
        .collect();
    Some(Reply::Found(ips))
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

    fn response(q: &[u8], with: impl FnOnce(&mut Message)) -> Vec<u8> {
        let mut m = Message::from_vec(q).unwrap();
        m.metadata.message_type = MessageType::Response;
        with(&mut m);
        m.to_vec().unwrap()
    }

    #[test]
    fn a_response_is_read() {
        use hickory_proto::rr::Record;
        use hickory_proto::rr::rdata::{A, CNAME};
        let (id, q) = query("a.example.com", RecordType::A).unwrap();
        let owner = Name::from_ascii("a.example.com").unwrap();
        let r = response(&q, |m| {
            let target = Name::from_ascii("b.example.com").unwrap();
            m.answers.push(Record::from_rdata(
                owner.clone(),
                60,
                RData::CNAME(CNAME(target.clone())),
            ));
            m.answers
                .push(Record::from_rdata(target, 60, RData::A(A::new(93, 184, 216, 34))));
        });
        assert_eq!(
            answer(&r, id, "a.example.com", RecordType::A),
            Some(Reply::Found(vec!["93.184.216.34".parse().unwrap()]))
        );
        // The name compares without regard to case, as DNS names do.
        assert!(answer(&r, id, "A.Example.COM", RecordType::A).is_some());
        assert_eq!(
            answer(&r, id.wrapping_add(1), "a.example.com", RecordType::A),
            None,
            "another id"
        );
        assert_eq!(
            answer(&r, id, "other.example.com", RecordType::A),
            None,
            "another question"
        );
        assert_eq!(
            answer(&r, id, "a.example.com", RecordType::AAAA),
            None,
            "another type"
        );
        assert_eq!(
            answer(&r[..r.len() - 2], id, "a.example.com", RecordType::A),
            None,
            "truncated bytes"
        );
        assert_eq!(
            answer(&q, id, "a.example.com", RecordType::A),
            None,
            "a query is not an answer"
        );
        let nx = response(&q, |m| m.metadata.response_code = ResponseCode::NXDomain);
        assert_eq!(
            answer(&nx, id, "a.example.com", RecordType::A),
            Some(Reply::Failed(3))
        );
        let tc = response(&q, |m| m.metadata.truncation = true);
        assert_eq!(
            answer(&tc, id, "a.example.com", RecordType::A),
            Some(Reply::Truncated)
        );
        assert!(query(&"x".repeat(64), RecordType::A).is_err());
        // Ids are not all alike.
        let ids: std::collections::BTreeSet<u16> =
            (0..8).map(|_| query("x.org", RecordType::A).unwrap().0).collect();
        assert!(ids.len() > 1);
    }

    #[test]
    fn a_truncated_answer_is_asked_again_over_tcp() {
        use hickory_proto::rr::Record;
        use hickory_proto::rr::rdata::A;
        use std::io::{Read, Write};
        // A nameserver on loopback that truncates over UDP and answers
        // over TCP.
        let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = udp.local_addr().unwrap().port();
        let tcp = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
        let server = std::thread::spawn(move || {
            for _ in 0..2 {
                let mut buf = [0u8; 512];
                let (n, from) = udp.recv_from(&mut buf).unwrap();
                let r = response(&buf[..n], |m| m.metadata.truncation = true);
                udp.send_to(&r, from).unwrap();
                let (mut s, _) = tcp.accept().unwrap();
                let mut len = [0u8; 2];
                s.read_exact(&mut len).unwrap();
                let mut q = vec![0u8; usize::from(u16::from_be_bytes(len))];
                s.read_exact(&mut q).unwrap();
                let r = response(&q, |m| {
                    let asked = m.queries[0].clone();
                    if asked.query_type() == RecordType::A {
                        m.answers.push(Record::from_rdata(
                            asked.name().clone(),
                            60,
                            RData::A(A::new(10, 1, 2, 3)),
                        ));
                    }
                });
                let mut framed = (r.len() as u16).to_be_bytes().to_vec();
                framed.extend(r);
                s.write_all(&framed).unwrap();
            }
        });
        let found = ask(SocketAddr::from(([127, 0, 0, 1], port)), "big.example").unwrap();
        server.join().unwrap();
        assert_eq!(found, vec!["10.1.2.3".parse::<IpAddr>().unwrap()]);
    }
}
