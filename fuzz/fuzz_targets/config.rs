#![no_main]
//! The config file parser and path templates: never panic; every error
//! names its source; expanded paths are absolute.

use libfuzzer_sys::fuzz_target;
use qwrap::policy::CliSettings;
use qwrap::policy::profile::expand;
use qwrap::policy::settings::{ConfigText, Settings};
use std::ffi::OsString;
use std::path::Path;

fuzz_target!(|input: (&str, &str)| {
    let (text, template) = input;
    let env = |k: &str| match k {
        "QWEN_HOME" => Some(OsString::from("/q")),
        "EMPTY" => Some(OsString::new()),
        _ => None,
    };
    let cfg = ConfigText {
        path: "/etc/qwrap/config.toml".into(),
        text: text.to_string(),
    };
    if let Err(e) = Settings::load(&CliSettings::default(), &env, &[cfg]) {
        assert_eq!(e.source_name, "/etc/qwrap/config.toml");
    }
    if let Ok(p) = expand(template, Some(Path::new("/home/u")), &env) {
        assert!(p.is_absolute());
    }
});
