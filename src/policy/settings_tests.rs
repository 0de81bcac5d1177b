use super::*;
use crate::policy::NetworkMode;
use std::path::Path;

fn no_env(_: &str) -> Option<OsString> {
    None
}

fn cfg(path: &str, text: &str) -> ConfigText {
    ConfigText {
        path: path.into(),
        text: text.into(),
    }
}

/// The shipped example config parses and, its values being the
/// defaults, changes nothing.
#[test]
fn the_example_config_is_the_defaults() {
    let text = include_str!("../../config.example.toml");
    let s = Settings::load(
        &CliSettings::default(),
        &no_env,
        &[cfg("/etc/qwrap/config.toml", text)],
    )
    .unwrap();
    let d = Settings::load(&CliSettings::default(), &no_env, &[]).unwrap();
    assert_eq!(s.network.value, d.network.value);
    assert_eq!(s.tmp.value, d.tmp.value);
    assert_eq!(s.landlock.value, d.landlock.value);
    assert_eq!(s.die_with_parent.value, d.die_with_parent.value);
    assert_eq!(s.new_session.value, d.new_session.value);
    assert_eq!(s.allow_git_config.value, d.allow_git_config.value);
    assert!(s.include.is_empty() && s.read_only.is_empty() && s.allow_socket.is_empty());
}

#[test]
fn defaults() {
    let s = Settings::load(&CliSettings::default(), &no_env, &[]).unwrap();
    assert_eq!(s.network, Sourced::new(NetworkMode::Open, "default"));
    assert_eq!(s.tmp, Sourced::new(TmpMode::Private, "default"));
    assert_eq!(s.die_with_parent, Sourced::new(true, "default"));
    assert!(s.include.is_empty() && s.profiles.is_empty());
}

#[test]
fn precedence_cli_env_user_system() {
    let sys = cfg(
        "/etc/qwrap/config.toml",
        "network = \"closed\"\ntmp = \"host\"\ndie_with_parent = false\n",
    );
    let user = cfg("/home/u/.config/qwrap/config.toml", "network = \"open\"\n");
    let s = Settings::load(&CliSettings::default(), &no_env, &[sys.clone(), user.clone()]).unwrap();
    assert_eq!(s.network.source, "/home/u/.config/qwrap/config.toml");
    assert_eq!(s.tmp, Sourced::new(TmpMode::Host, "/etc/qwrap/config.toml"));
    assert!(!s.die_with_parent.value);
    let env = |k: &str| (k == ENV_NETWORK).then(|| OsString::from("closed"));
    let s = Settings::load(&CliSettings::default(), &env, &[sys.clone(), user.clone()]).unwrap();
    assert_eq!(s.network, Sourced::new(NetworkMode::Closed, "$QWRAP_NETWORK"));
    let cli = CliSettings {
        network: Some(NetworkMode::Open),
        run: RunSwitches {
            no_die_with_parent: true,
            ..Default::default()
        },
        ..Default::default()
    };
    let s = Settings::load(&cli, &env, &[sys, user]).unwrap();
    assert_eq!(s.network, Sourced::new(NetworkMode::Open, "--network"));
    assert_eq!(s.die_with_parent, Sourced::new(false, "--no-die-with-parent"));
}

#[test]
fn invalid_values_name_their_source() {
    let e = Settings::load(
        &CliSettings::default(),
        &no_env,
        &[cfg("/etc/q.toml", "network = \"bogus\"\n")],
    )
    .unwrap_err();
    assert_eq!(e.source_name, "/etc/q.toml");
    assert!(e.to_string().contains("bogus"));
    let e = Settings::load(
        &CliSettings::default(),
        &no_env,
        &[cfg("/u.toml", "netwrok = \"open\"\n")],
    )
    .unwrap_err();
    assert!(e.to_string().starts_with("/u.toml: "), "{e}");
    assert!(e.to_string().contains("netwrok"), "{e}");
    let e = Settings::load(
        &CliSettings::default(),
        &no_env,
        &[cfg("/u.toml", "network = 3\n")],
    )
    .unwrap_err();
    assert_eq!(e.source_name, "/u.toml");
    let env = |k: &str| (k == ENV_TMP).then(|| OsString::from("shared"));
    let e = Settings::load(&CliSettings::default(), &env, &[]).unwrap_err();
    assert_eq!(e.source_name, "$QWRAP_TMP");
    let cli = CliSettings {
        profile: vec!["nope".into()],
        ..Default::default()
    };
    let e = Settings::load(&cli, &no_env, &[]).unwrap_err();
    assert_eq!(e.source_name, "--profile");
    assert!(e.message.contains("qwen"));
}

#[test]
fn lists_gather_from_every_source() {
    let sys = cfg("/etc/q.toml", "include = [\"/srv/a\"]\nprofile = [\"qwen\"]\n");
    let env = |k: &str| match k {
        ENV_INCLUDE => Some(OsString::from("/srv/b::/srv/c")),
        ENV_PROFILE => Some(OsString::from("qwen, mine")),
        _ => None,
    };
    let user = cfg("/u.toml", "[profiles.mine]\ninclude = [\"/srv/m\"]\n");
    let cli = CliSettings {
        include: vec!["/srv/d".into()],
        read_only: vec!["x".into()],
        ..Default::default()
    };
    let s = Settings::load(&cli, &env, &[sys, user]).unwrap();
    let inc: Vec<(String, &str)> = s
        .include
        .iter()
        .map(|i| {
            let v = match &i.value {
                PathSpec::Literal(p) => p.display().to_string(),
                PathSpec::Template(t) => t.clone(),
            };
            (v, i.source.as_str())
        })
        .collect();
    assert_eq!(
        inc,
        vec![
            ("/srv/a".to_string(), "/etc/q.toml"),
            ("/srv/b".to_string(), "$QWRAP_INCLUDE"),
            ("/srv/c".to_string(), "$QWRAP_INCLUDE"),
            ("/srv/d".to_string(), "--include"),
        ]
    );
    let names: Vec<&str> = s.profiles.iter().map(|p| p.value.as_str()).collect();
    assert_eq!(names, ["qwen", "mine"]);
    assert_eq!(s.profile_defs["mine"].source, "/u.toml");
    assert_eq!(s.read_only[0].source, "--ro");
}

#[test]
fn profile_tmp_applies_only_without_a_setting() {
    let cli = CliSettings {
        profile: vec!["qwen".into()],
        ..Default::default()
    };
    let s = Settings::load(&cli, &no_env, &[]).unwrap();
    assert_eq!(s.tmp, Sourced::new(TmpMode::Host, "profile qwen"));
    let cli = CliSettings {
        tmp: Some(TmpMode::Private),
        ..cli
    };
    assert_eq!(Settings::load(&cli, &no_env, &[]).unwrap().tmp.source, "--tmp");
}

#[test]
fn config_paths_follow_xdg() {
    let env = |k: &str| (k == "XDG_CONFIG_HOME").then(|| OsString::from("/x/cfg"));
    assert_eq!(
        config_paths(Some(Path::new("/home/u")), &env),
        vec![
            PathBuf::from(SYSTEM_CONFIG),
            PathBuf::from("/x/cfg/qwrap/config.toml")
        ]
    );
    assert_eq!(
        config_paths(Some(Path::new("/home/u")), &no_env)[1],
        PathBuf::from("/home/u/.config/qwrap/config.toml")
    );
}

#[test]
fn every_declared_setting_is_documented_and_has_its_flag() {
    let example = include_str!("../../config.example.toml");
    let man = include_str!("../../packaging/man/qwrap.toml.5");
    use clap::Args as _;
    let cli = RunSwitches::augment_args(CliSettings::augment_args(clap::Command::new("qwrap")));
    let mut missing = Vec::new();
    for d in DECLARED {
        if !example
            .lines()
            .any(|l| l.trim_start_matches("# ").starts_with(&format!("{} =", d.key)))
        {
            missing.push(format!("config.example.toml has no `{} =`", d.key));
        }
        if !man.contains(&format!(".B {} =", d.key)) {
            missing.push(format!("qwrap.toml(5) has no `.B {} =`", d.key));
        }
        if !cli.get_arguments().any(|a| a.get_long() == Some(&d.flag[2..])) {
            missing.push(format!("the command line has no flag {}", d.flag));
        }
        if let Some(env) = d.env
            && !man.contains(env)
        {
            missing.push(format!("qwrap.toml(5) does not name ${env} beside `{}`", d.key));
        }
    }
    assert!(DECLARED.len() >= 21, "{} declared", DECLARED.len());
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}
