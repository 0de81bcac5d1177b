//! The egress allow-list: which destinations the proxy connects to. A name
//! is judged before any DNS lookup; after the lookup, an address that is
//! loopback, private, link-local or otherwise special is refused unless it
//! is listed itself, so that a listed name cannot be pointed at the host's
//! own services.

use serde::Serialize;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::str::FromStr;

/// One `--allow-domain` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rule {
    pub host: HostPattern,
    /// Any port when None.
    pub port: Option<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "lowercase")]
pub enum HostPattern {
    /// Exactly this name (lower case, no trailing dot).
    Name(String),
    /// `*.example.com`: any name below example.com, not example.com itself.
    Below(String),
    /// An IP address, allowed as a literal or after a lookup.
    Ip(IpAddr),
}

impl FromStr for Rule {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |why: &str| format!("invalid domain {s:?}: {why}");
        let (host, port) = split_port(s).map_err(&bad)?;
        let port = match port {
            None => None,
            Some(p) => Some(
                p.parse::<u16>()
                    .ok()
                    .filter(|p| *p != 0)
                    .ok_or_else(|| bad("bad port"))?,
            ),
        };
        let host = if let Ok(ip) = host.parse::<IpAddr>() {
            HostPattern::Ip(ip)
        } else if let Some(rest) = host.strip_prefix("*.") {
            HostPattern::Below(normal_name(rest).ok_or_else(|| bad("not a domain name"))?)
        } else {
            HostPattern::Name(normal_name(host).ok_or_else(|| bad("not a domain name"))?)
        };
        Ok(Rule { host, port })
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            HostPattern::Name(n) => f.write_str(n)?,
            HostPattern::Below(n) => write!(f, "*.{n}")?,
            HostPattern::Ip(IpAddr::V6(ip)) if self.port.is_some() => write!(f, "[{ip}]")?,
            HostPattern::Ip(ip) => write!(f, "{ip}")?,
        }
        match self.port {
            Some(p) => write!(f, ":{p}"),
            None => Ok(()),
        }
    }
}

/// `host[:port]`, `[v6]:port`, or a bare IPv6 address.
fn split_port(s: &str) -> Result<(&str, Option<&str>), &'static str> {
    if let Some(rest) = s.strip_prefix('[') {
        let (host, after) = rest.split_once(']').ok_or("unclosed [")?;
        return match after {
            "" => Ok((host, None)),
            a => Ok((host, Some(a.strip_prefix(':').ok_or("junk after ]")?))),
        };
    }
    if s.matches(':').count() > 1 {
        return Ok((s, None));
    }
    Ok(match s.split_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (s, None),
    })
}

/// A DNS name in lower case without its trailing dot, or None when it is
/// not one (labels of letters, digits, `-` and `_`, 1-63 bytes, 253 in all;
/// the last not all digits, so that no name reads as an IPv4 address).
pub fn normal_name(s: &str) -> Option<String> {
    let s = s.strip_suffix('.').unwrap_or(s).to_ascii_lowercase();
    let ok = !s.is_empty()
        && s.len() <= 253
        && !s
            .rsplit('.')
            .next()
            .is_some_and(|l| l.bytes().all(|b| b.is_ascii_digit()))
        && s.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        });
    ok.then_some(s)
}

/// The allow-list as the proxy applies it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AllowList(pub Vec<Rule>);

/// What the proxy does with one destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Connect to the first of these that answers.
    Allow(Vec<SocketAddr>),
    Deny(String),
}

impl AllowList {
    fn port_ok(r: &Rule, port: u16) -> bool {
        r.port.is_none_or(|p| p == port)
    }

    /// Whether a name (normalised) is listed for this port.
    pub fn name_listed(&self, name: &str, port: u16) -> bool {
        self.0.iter().any(|r| {
            Self::port_ok(r, port)
                && match &r.host {
                    HostPattern::Name(n) => n == name,
                    HostPattern::Below(n) => {
                        name.len() > n.len() + 1 && name.ends_with(n.as_str()) && {
                            name.as_bytes()[name.len() - n.len() - 1] == b'.'
                        }
                    }
                    HostPattern::Ip(_) => false,
                }
        })
    }

    /// Whether an address is listed for this port.
    pub fn ip_listed(&self, ip: IpAddr, port: u16) -> bool {
        let ip = canonical(ip);
        self.0
            .iter()
            .any(|r| Self::port_ok(r, port) && r.host == HostPattern::Ip(ip))
    }

    /// The verdict for `host:port`. `resolve` runs only for a listed name.
    pub fn decide(
        &self,
        host: &str,
        port: u16,
        resolve: &dyn Fn(&str, u16) -> std::io::Result<Vec<SocketAddr>>,
    ) -> Verdict {
        let literal = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        if let Ok(ip) = literal.parse::<IpAddr>() {
            return if self.ip_listed(ip, port) {
                Verdict::Allow(vec![SocketAddr::new(ip, port)])
            } else {
                Verdict::Deny(format!("the address {ip} port {port} is not listed"))
            };
        }
        let Some(name) = normal_name(host) else {
            return Verdict::Deny("not a domain name".into());
        };
        if !self.name_listed(&name, port) {
            return Verdict::Deny(format!("{name} port {port} is not listed"));
        }
        let addrs = match resolve(&name, port) {
            Ok(a) => a,
            Err(e) => return Verdict::Deny(format!("{name} does not resolve: {e}")),
        };
        let kept: Vec<SocketAddr> = addrs
            .iter()
            .copied()
            .filter(|a| !(is_special(a.ip()) || is_host_own(a.ip())) || self.ip_listed(a.ip(), port))
            .collect();
        if kept.is_empty() {
            let shown: Vec<String> = addrs.iter().map(|a| a.ip().to_string()).collect();
            return Verdict::Deny(format!(
                "{name} resolves only to special addresses or the host's own that are not listed ({})",
                shown.join(", ")
            ));
        }
        Verdict::Allow(kept)
    }
}

/// Whether an address is one of the host's own (any interface's, read once
/// from the proxy's network namespace, the host's): a listed name that
/// resolves to it would reach the host's services on `0.0.0.0`.
pub fn is_host_own(ip: IpAddr) -> bool {
    static OWN: std::sync::OnceLock<Vec<IpAddr>> = std::sync::OnceLock::new();
    let own = OWN.get_or_init(|| {
        let v4 = std::fs::read_to_string("/proc/net/fib_trie").unwrap_or_default();
        let v6 = std::fs::read_to_string("/proc/net/if_inet6").unwrap_or_default();
        let mut all = local_v4(&v4);
        all.extend(local_v6(&v6));
        all
    });
    own.contains(&canonical(ip))
}

/// The addresses /proc/net/fib_trie marks `host LOCAL`.
fn local_v4(fib_trie: &str) -> Vec<IpAddr> {
    let mut out = Vec::new();
    let mut last: Option<Ipv4Addr> = None;
    for line in fib_trie.lines() {
        let l = line.trim();
        if let Some(ip) = l.strip_prefix("|-- ") {
            last = ip.parse().ok();
        } else if l.ends_with("host LOCAL")
            && let Some(ip) = last
            && !out.contains(&IpAddr::V4(ip))
        {
            out.push(IpAddr::V4(ip));
        }
    }
    out
}

/// The addresses /proc/net/if_inet6 lists (32 hex digits first).
fn local_v6(if_inet6: &str) -> Vec<IpAddr> {
    if_inet6
        .lines()
        .filter_map(|l| u128::from_str_radix(l.split_whitespace().next()?, 16).ok())
        .map(|n| IpAddr::V6(Ipv6Addr::from(n)))
        .collect()
}

/// An IPv4-mapped IPv6 address as the IPv4 address it is.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// Loopback, private, link-local, shared (CGNAT), multicast, broadcast,
/// unspecified, documentation, benchmarking, reserved; for IPv6 also ULA,
/// link-local, site-local, NAT64 and the IPv4-mapped forms of those.
pub fn is_special(ip: IpAddr) -> bool {
    match canonical(ip) {
        IpAddr::V4(v4) => special_v4(v4),
        IpAddr::V6(v6) => special_v6(v6),
    }
}

fn special_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_multicast()
        || ip.is_broadcast()
        || ip.is_unspecified()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b))
        || (a == 192 && b == 0 && c == 0)
        || (a == 198 && (18..20).contains(&b))
        || a >= 240
}

fn special_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || (s[0] & 0xfe00) == 0xfc00
        || (s[0] & 0xffc0) == 0xfe80
        || (s[0] & 0xffc0) == 0xfec0
        || (s[0] == 0x64 && s[1] == 0xff9b)
        || (s[0] == 0x2001 && s[1] == 0x0db8)
        || ip.to_ipv4().is_some_and(special_v4) && s[..6] == [0; 6]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hosts_own_addresses_are_read_from_proc() {
        let trie = "Main:\n  +-- 0.0.0.0/0 3 0 5\n     |-- 203.0.113.7\n        /32 host LOCAL\n     |-- 203.0.113.255\n        /32 link BROADCAST\n";
        assert_eq!(local_v4(trie), vec![IpAddr::V4(Ipv4Addr::new(203, 0, 113, 7))]);
        let v6 = "20010db8000000000000000000000001 02 40 00 80 eth0\n";
        assert_eq!(local_v6(v6), vec!["2001:db8::1".parse::<IpAddr>().unwrap()]);
        // Every address of this host's is refused behind a listed name.
        let rules = list(&["example.test:443"]);
        for ip in local_v4(&std::fs::read_to_string("/proc/net/fib_trie").unwrap_or_default()) {
            let v = rules.decide("example.test", 443, &|_, p| Ok(vec![SocketAddr::new(ip, p)]));
            assert!(matches!(v, Verdict::Deny(_)), "{ip}: {v:?}");
        }
    }

    fn list(rules: &[&str]) -> AllowList {
        AllowList(rules.iter().map(|r| r.parse().unwrap()).collect())
    }

    #[test]
    fn rules_parse_and_print() {
        for (text, shown) in [
            ("Example.COM.", "example.com"),
            ("*.example.com", "*.example.com"),
            ("example.com:443", "example.com:443"),
            ("1.2.3.4", "1.2.3.4"),
            ("1.2.3.4:80", "1.2.3.4:80"),
            ("[::1]:443", "[::1]:443"),
            ("::1", "::1"),
        ] {
            assert_eq!(text.parse::<Rule>().unwrap().to_string(), shown);
        }
        for bad in [
            "",
            "*",
            "a..b",
            "exa mple.com",
            "example.com:0",
            "example.com:99999",
            "[::1",
            "a:b:c",
            "*.",
            "x/y",
            "44.44.3.3.",
            "1.2.3.4.5",
        ] {
            assert!(bad.parse::<Rule>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn names_are_judged_before_any_lookup() {
        let l = list(&["registry.npmjs.org", "*.crates.io:443"]);
        let no_dns = |_: &str, _: u16| -> std::io::Result<Vec<SocketAddr>> { panic!("looked up") };
        assert!(matches!(l.decide("evil.example", 443, &no_dns), Verdict::Deny(_)));
        assert!(
            matches!(l.decide("crates.io", 443, &no_dns), Verdict::Deny(_)),
            "a wildcard is below only"
        );
        assert!(
            matches!(l.decide("static.crates.io", 80, &no_dns), Verdict::Deny(_)),
            "port"
        );
        assert!(matches!(l.decide("xcrates.io", 443, &no_dns), Verdict::Deny(_)));
        let public = |_: &str, p: u16| Ok(vec![SocketAddr::new("151.101.0.1".parse().unwrap(), p)]);
        assert_eq!(
            l.decide("Static.Crates.IO.", 443, &public),
            Verdict::Allow(vec!["151.101.0.1:443".parse().unwrap()])
        );
        assert!(matches!(
            l.decide("registry.npmjs.org", 8080, &public),
            Verdict::Allow(_)
        ));
    }

    #[test]
    fn a_listed_name_cannot_point_at_special_addresses() {
        let to = |ip: &'static str| move |_: &str, p: u16| Ok(vec![SocketAddr::new(ip.parse().unwrap(), p)]);
        let l = list(&["api.example.com"]);
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "192.168.1.1",
            "172.16.0.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "224.0.0.1",
        ] {
            assert!(
                matches!(l.decide("api.example.com", 443, &to(ip)), Verdict::Deny(_)),
                "{ip}"
            );
        }
        let l = list(&["api.example.com", "127.0.0.1:8080"]);
        assert!(matches!(
            l.decide("api.example.com", 8080, &to("127.0.0.1")),
            Verdict::Allow(_)
        ));
        assert!(matches!(
            l.decide("api.example.com", 8081, &to("127.0.0.1")),
            Verdict::Deny(_)
        ));
    }

    #[test]
    fn ip_literals_only_when_listed() {
        let l = list(&["example.com", "93.184.216.34:443", "[2606:2800::1]:443"]);
        let none = |_: &str, _: u16| Ok(vec![]);
        assert!(matches!(l.decide("93.184.216.34", 443, &none), Verdict::Allow(_)));
        assert!(matches!(l.decide("93.184.216.34", 80, &none), Verdict::Deny(_)));
        assert!(matches!(
            l.decide("[2606:2800::1]", 443, &none),
            Verdict::Allow(_)
        ));
        assert!(matches!(l.decide("1.1.1.1", 443, &none), Verdict::Deny(_)));
        assert!(
            matches!(l.decide("example.com", 443, &none), Verdict::Deny(_)),
            "no address"
        );
    }
}
