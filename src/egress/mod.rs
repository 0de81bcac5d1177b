//! `--network proxied`: the command's only way out is a proxy the warden
//! serves from outside the sandbox, to the destinations of an allow-list.

pub mod dns;
pub mod proxy;
pub mod request;
pub mod rules;

pub use rules::{AllowList, Rule};

/// Where the proxy listens inside the sandbox's own network namespace.
pub const PROXY_PORT: u16 = 3128;

/// The variables that point programs at the proxy, set inside.
pub fn proxy_variables() -> Vec<(&'static str, String)> {
    let http = format!("http://127.0.0.1:{PROXY_PORT}");
    let socks = format!("socks5h://127.0.0.1:{PROXY_PORT}");
    let no_proxy = "localhost,127.0.0.1,::1".to_string();
    vec![
        ("HTTP_PROXY", http.clone()),
        ("HTTPS_PROXY", http.clone()),
        ("http_proxy", http.clone()),
        ("https_proxy", http),
        ("ALL_PROXY", socks.clone()),
        ("all_proxy", socks),
        ("NO_PROXY", no_proxy.clone()),
        ("no_proxy", no_proxy),
    ]
}
