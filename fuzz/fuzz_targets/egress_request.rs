#![no_main]
//! The egress proxy's request parsers (HTTP heads, SOCKS5) and its rule
//! parser: never panic; a completed parse never claims more bytes than it
//! was given; a forwarded head is one head ending in a blank line, with
//! `Connection: close` and no `Proxy-` header; a parsed rule prints as
//! something that parses to the same rule.

use libfuzzer_sys::fuzz_target;
use qwrap::egress::request::{Head, Parsed, http_head, socks_greeting, socks_request};
use qwrap::egress::rules::{AllowList, Rule, Verdict};

fuzz_target!(|data: &[u8]| {
    match http_head(data) {
        Parsed::Done(head, used) => {
            assert!(used <= data.len());
            if let Head::Forward { head, port, .. } = head {
                assert!(port != 0);
                let text = String::from_utf8(head).expect("a forwarded head is text");
                assert!(text.ends_with("Connection: close\r\n\r\n"));
                assert_eq!(text.matches("\r\n\r\n").count(), 1);
                assert!(!text.to_ascii_lowercase().contains("\r\nproxy-"));
            }
        }
        Parsed::More | Parsed::Bad(..) => {}
    }
    if let Parsed::Done(_, used) = socks_greeting(data) {
        assert!(used <= data.len());
    }
    if let Parsed::Done((host, port), used) = socks_request(data) {
        assert!(used <= data.len() && port != 0 && !host.is_empty());
    }
    // A nameserver's answer: never read past the buffer; an answer counts
    // only for the question asked.
    if data.len() >= 2 {
        use qwrap::egress::dns::{RecordType, Reply, answer};
        let id = u16::from_be_bytes([data[0], data[1]]);
        for qtype in [RecordType::A, RecordType::AAAA] {
            if let Some(Reply::Found(ips)) = answer(data, id, "example.com", qtype) {
                assert!(ips.iter().all(|ip| ip.is_ipv4() == (qtype == RecordType::A)));
            }
        }
    }
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(rule) = text.parse::<Rule>()
    {
        assert_eq!(rule.to_string().parse::<Rule>(), Ok(rule.clone()));
        // A decision never looks a name up unless the name is listed.
        let list = AllowList(vec![rule]);
        let verdict = list.decide(text, 443, &|name, _| {
            assert!(list.name_listed(name, 443), "{name} looked up unlisted");
            Ok(vec![])
        });
        assert!(matches!(verdict, Verdict::Allow(_) | Verdict::Deny(_)));
    }
});
