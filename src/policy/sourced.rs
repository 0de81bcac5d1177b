//! A setting's value with its source, and one scalar setting taken from
//! the highest-priority source that sets it: the command line, the
//! environment, the config files (later ones first), a profile, the
//! default.

use serde::Serialize;

/// A value and the place it came from (`--network`, `$QWRAP_TMP`, a config
/// file's path, `profile qwen`, `default`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Sourced<T> {
    pub value: T,
    pub source: String,
}

impl<T> Sourced<T> {
    pub fn new(value: T, source: impl Into<String>) -> Self {
        Sourced {
            value,
            source: source.into(),
        }
    }
}

/// Sourced paths serialised lossily (U+FFFD for bytes that are not UTF-8).
pub fn lossy_paths<S: serde::Serializer>(v: &[Sourced<std::path::PathBuf>], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeSeq;
    let mut seq = s.serialize_seq(Some(v.len()))?;
    for p in v {
        seq.serialize_element(&Sourced::new(p.value.to_string_lossy(), p.source.clone()))?;
    }
    seq.end()
}

/// An invalid setting, naming its source.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}: {message}")]
pub struct SettingsError {
    pub source_name: String,
    pub message: String,
}

/// A switch's variable: `1`, `true`, `yes`, `on` or `0`, `false`, `no`, `off`.
pub(super) fn switch(v: &str, var: &str) -> Result<bool, SettingsError> {
    match v.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(err(
            &format!("${var}"),
            format!("invalid value {v:?}: expected 1 or 0 (true, false, yes, no, on, off)"),
        )),
    }
}

pub(super) fn err(source: &str, message: impl Into<String>) -> SettingsError {
    SettingsError {
        source_name: source.to_string(),
        message: message.into(),
    }
}

/// One scalar setting from the highest-priority source that sets it: the
/// command line's value (parsed already where clap knows the type), the
/// variable, the config files (later first), a profile, the default.
pub(super) fn scalar<'a, T: std::str::FromStr<Err = String>>(
    cli: Option<Result<T, String>>,
    cli_name: &str,
    env: Option<String>,
    env_name: &str,
    configs: impl DoubleEndedIterator<Item = (&'a String, Option<&'a str>)>,
    profile: Option<(String, String)>,
    default: T,
) -> Result<Sourced<T>, SettingsError> {
    let parse = |v: &str, src: String| {
        v.parse::<T>()
            .map(|x| Sourced::new(x, src.clone()))
            .map_err(|e| err(&src, e))
    };
    if let Some(v) = cli {
        return v.map(|x| Sourced::new(x, cli_name)).map_err(|e| err(cli_name, e));
    }
    if let Some(v) = env {
        return parse(&v, format!("${env_name}"));
    }
    // Later config files have higher priority.
    if let Some((name, v)) = configs.rev().find_map(|(n, v)| v.map(|v| (n, v))) {
        return parse(v, name.clone());
    }
    if let Some((v, src)) = profile {
        return parse(&v, src);
    }
    Ok(Sourced::new(default, "default"))
}

/// One switch: its flag given (`flag`: it turns the default over), else
/// its variable (name, value: refused when no switch's value, flag or
/// not), else the config files (later first), else the default.
pub(super) fn switched<'a>(
    default: bool,
    flag: Option<&str>,
    var: Option<(&str, Option<String>)>,
    configs: impl DoubleEndedIterator<Item = (&'a String, Option<bool>)>,
) -> Result<Sourced<bool>, SettingsError> {
    let var = match var {
        Some((name, Some(v))) => Some(Sourced::new(switch(&v, name)?, format!("${name}"))),
        _ => None,
    };
    if let Some(flag) = flag {
        return Ok(Sourced::new(!default, flag));
    }
    if let Some(v) = var {
        return Ok(v);
    }
    Ok(configs
        .rev()
        .find_map(|(n, v)| v.map(|v| Sourced::new(v, n.clone())))
        .unwrap_or_else(|| Sourced::new(default, "default")))
}

/// `--allow-domain` entries (and config `allow_domains`), each parsed and
/// kept with its source; a malformed one names where it came from.
pub(super) fn rules<'a>(
    entries: impl Iterator<Item = (&'a str, &'a str)>,
) -> Result<Vec<Sourced<crate::egress::Rule>>, SettingsError> {
    entries
        .map(|(text, source)| {
            text.parse()
                .map(|r| Sourced::new(r, source))
                .map_err(|e: String| err(source, e))
        })
        .collect()
}
