//! `--network proxied`: the command reaches only the allow-list's
//! destinations, through the warden's proxy. Only loopback servers made
//! here are contacted; names are pointed at them with the test builds'
//! resolver override (`QWRAP_TEST_RESOLVE`). Each case looks at what the
//! server received, not only at the client's exit status.

mod common;

use common::*;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::Output;
use std::sync::{Arc, Mutex};

/// A loopback server on the host: answers an HTTP request with
/// `hello <request line>`, echoes anything else; records what came.
struct Server {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Server {
    fn start() -> Server {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = Arc::clone(&seen);
        std::thread::spawn(move || {
            for c in l.incoming().flatten() {
                let s = Arc::clone(&s);
                std::thread::spawn(move || serve(c, &s));
            }
        });
        Server { port, seen }
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

fn serve(mut c: std::net::TcpStream, seen: &Mutex<Vec<String>>) {
    let mut buf = [0u8; 4096];
    let Ok(n) = c.read(&mut buf) else { return };
    let text = String::from_utf8_lossy(&buf[..n]).into_owned();
    seen.lock().unwrap().push(text.clone());
    if text.starts_with("GET ") || text.starts_with("HEAD ") {
        let line = text.lines().next().unwrap_or_default().to_string();
        let body = format!("hello {line}\n");
        let _ = c
            .write_all(format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}", body.len()).as_bytes());
    } else {
        let _ = c.write_all(&buf[..n]);
        let mut rest = Vec::new();
        let _ = c.read_to_end(&mut rest);
        let _ = c.write_all(&rest);
    }
}

fn proxied(f: &Fixture, api: &str, allow: &[String], script: &str) -> Output {
    let mut c = f.qwrap(&["run", "--network", "proxied", "--egress-log"]);
    c.arg(f.path().join("egress.log"));
    for a in allow {
        c.args(["--allow-domain", a]);
    }
    c.args(["--", "sh", "-c", script])
        .env("QWRAP_MOUNT_API", api)
        .env(
            "QWRAP_TEST_RESOLVE",
            "api.test=127.0.0.1,a.example.test=127.0.0.1,far.test=192.0.2.1",
        );
    c.output().unwrap()
}

fn log(f: &Fixture) -> Vec<serde_json::Value> {
    std::fs::read_to_string(f.path().join("egress.log"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn only_listed_destinations_are_reached() {
    for who in Who::all() {
        for api in APIS {
            let srv = Server::start();
            let p = srv.port;
            let f = Fixture::new(who);
            let curl = |url: &str| format!("curl -sS -m 10 -o /dev/null -w '%{{http_code}}\\n' {url}; ");
            // A listed name that resolves to 127.0.0.1: refused, as the
            // address is not listed; an unlisted name: refused before any
            // lookup.
            let out = stdout(&proxied(
                &f,
                api,
                &["api.test".into()],
                &(curl(&format!("http://api.test:{p}/one")) + &curl(&format!("http://other.test:{p}/two"))),
            ));
            assert_eq!(out, "403\n403\n", "{who:?} {api}");
            assert!(srv.seen().is_empty(), "{who:?} {api}: {:?}", srv.seen());
            let l = log(&f);
            assert!(
                l[0]["reason"].as_str().unwrap().contains("special addresses"),
                "{l:?}"
            );
            assert!(l[1]["reason"].as_str().unwrap().contains("not listed"), "{l:?}");
            // With the address listed: plain HTTP (absolute URI), CONNECT,
            // SOCKS5 with the name, a wildcard; a port that is not listed.
            let allow = vec![
                "api.test".into(),
                "*.example.test".into(),
                format!("127.0.0.1:{p}"),
            ];
            let script = curl(&format!("http://api.test:{p}/plain"))
                + &format!("curl -sS -m 10 -p http://api.test:{p}/tunnel; ")
                + &format!(
                    "curl -sS -m 10 --proxy socks5h://127.0.0.1:3128 http://a.example.test:{p}/socks; "
                )
                + &curl(&format!("http://example.test:{p}/apex"))
                + &curl(&format!("http://api.test:{}/port", p + 1));
            let out = stdout(&proxied(&f, api, &allow, &script));
            assert_eq!(
                out, "200\nhello GET /tunnel HTTP/1.1\nhello GET /socks HTTP/1.1\n403\n403\n",
                "{who:?} {api}"
            );
            let seen = srv.seen();
            assert_eq!(seen.len(), 3, "{seen:?}");
            assert!(
                seen[0].starts_with("GET /plain HTTP/1.1\r\n") && seen[0].contains("Connection: close"),
                "{seen:?}"
            );
            let l = log(&f);
            let verdicts: Vec<&str> = l.iter().map(|e| e["verdict"].as_str().unwrap()).collect();
            assert_eq!(
                verdicts,
                [
                    "denied", "denied", "allowed", "allowed", "allowed", "denied", "denied"
                ]
            );
            assert!(l[2]["bytes_down"].as_u64().unwrap() > 0, "{l:?}");
        }
    }
}

#[test]
fn ip_literals_only_when_listed_and_no_route_around_the_proxy() {
    let srv = Server::start();
    let p = srv.port;
    for who in Who::all() {
        let f = Fixture::new(who);
        let script = format!(
            "env | grep -c 127.0.0.1:3128; \
             curl -sS -m 10 --noproxy '' -p http://127.0.0.1:{p}/listed; \
             curl -sS -m 10 --noproxy '' -p http://localhost:{p}/hosts; \
             curl -sS -m 10 --noproxy '' -o /dev/null -w '%{{http_connect}}\\n' -p http://127.0.0.2:{p}/unlisted; \
             curl -sS -m 5 --noproxy '*' http://127.0.0.1:{p}/direct 2>&1 | grep -c 'Could not connect\\|Failed to connect'; \
             python3 -c 'import socket; s=socket.socket(); s.settimeout(5); s.connect((\"192.0.2.1\", 80))' 2>&1 | grep -c 'unreachable'"
        );
        let out = stdout(&proxied(
            &f,
            "new",
            &[format!("127.0.0.1:{p}"), "localhost".into()],
            &script,
        ));
        assert_eq!(
            out,
            format!("6\nhello GET /listed HTTP/1.1\nhello GET /hosts HTTP/1.1\n403\n1\n1\n"),
            "{who:?}"
        );
        assert_eq!(srv.seen().iter().filter(|s| s.contains("/direct")).count(), 0);
    }
}

/// Slow, oversized and malformed requests are turned away; 200 clients
/// at once are all served.
#[test]
fn the_proxy_holds_up_under_abuse_and_load() {
    let srv = Server::start();
    let p = srv.port;
    let f = Fixture::new(Who::User);
    f.write(
        "ws/load.py",
        &format!(
            r#"import socket, threading, time
def connect(payload):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=30)
    s.sendall(payload)
    return s
slow = connect(b"CONNECT 127.0.0.1:{p} HTTP/1.1\r\n")
big = connect(b"GET http://x/ HTTP/1.1\r\nX: " + b"a" * 20000 + b"\r\n\r\n")
print(big.recv(64).split(b"\r\n")[0].decode())
bad = connect(b"NOT HTTP\r\n\r\n")
print(bad.recv(64).split(b"\r\n")[0].decode())
ok = []
def one(i):
    s = connect(b"CONNECT 127.0.0.1:{p} HTTP/1.1\r\n\r\n")
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        head += s.recv(1)
    msg = b"ping %d" % i
    s.sendall(msg)
    s.shutdown(socket.SHUT_WR)
    got = b""
    while True:
        d = s.recv(100)
        if not d:
            break
        got += d
    ok.append(got == msg)
threads = [threading.Thread(target=one, args=(i,)) for i in range(200)]
for t in threads: t.start()
for t in threads: t.join()
print(sum(ok))
slow.settimeout(15)
print(repr(slow.recv(10)))
"#
        ),
        0o644,
    );
    let o = f
        .qwrap(&["run", "--network", "proxied", "--allow-domain"])
        .arg(format!("127.0.0.1:{p}"))
        .args(["--", "python3", "load.py"])
        .env("QWRAP_TEST_EGRESS_TIMEOUT_MS", "2000")
        .output()
        .unwrap();
    assert_eq!(
        ok(&o),
        "HTTP/1.1 431 Request Header Fields Too Large\nHTTP/1.1 400 Bad Request\n200\nb''\n"
    );
}

#[test]
fn reports_name_the_mode_and_the_list() {
    let f = Fixture::new(Who::User);
    let args = [
        "--network",
        "proxied",
        "--allow-domain",
        "registry.npmjs.org",
        "--allow-domain",
        "*.crates.io:443",
    ];
    let text = ok(&f.qwrap(&["inspect"]).args(args).output().unwrap());
    assert!(text.contains("Network: proxied (only through the proxy, to: registry.npmjs.org [from --allow-domain], *.crates.io:443 [from --allow-domain])"), "{text}");
    assert!(text.contains("egress: applied"), "{text}");
    let v: serde_json::Value =
        serde_json::from_str(&ok(&f.qwrap(&["receipt", "--json"]).args(args).output().unwrap())).unwrap();
    assert_eq!(v["network_mode"], "proxied");
    assert_eq!(
        v["allowed_domains"],
        serde_json::json!(["registry.npmjs.org", "*.crates.io:443"])
    );
    let o = f
        .qwrap(&[
            "run",
            "--network",
            "proxied",
            "--allow-domain",
            "bad domain",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--allow-domain: invalid domain \"bad domain\""),
        "{}",
        stderr(&o)
    );
    // The log cannot lie where the command could rewrite it.
    let o = f
        .qwrap(&[
            "run",
            "--network",
            "proxied",
            "--egress-log",
            "log.json",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(125), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("the egress log must lie outside the writable roots"),
        "{}",
        stderr(&o)
    );
    assert!(!f.ws().join("log.json").exists());
}
