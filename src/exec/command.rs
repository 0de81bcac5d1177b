//! The command's path candidates, argv and environment as C strings, made
//! before the caller's seccomp filters go in (after them only execve runs).

use rustix::io::Errno;
use std::ffi::{CString, OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

pub(super) struct Prepared {
    /// The paths execve tries in turn, as execvp searches PATH.
    pub candidates: Vec<CString>,
    pub argv: Vec<CString>,
    pub envp: Vec<CString>,
}

/// glibc's execvp search path when PATH is unset.
const DEFAULT_PATH: &[u8] = b"/bin:/usr/bin";

pub(super) fn prepare(
    argv: &[OsString],
    argv0: Option<&OsString>,
    env: &[(OsString, OsString)],
) -> Result<Prepared, Errno> {
    let c = |b: Vec<u8>| CString::new(b).map_err(|_| Errno::INVAL);
    let cmd = argv.first().ok_or(Errno::INVAL)?;
    let path = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map_or(DEFAULT_PATH, |(_, v)| v.as_bytes());
    let candidates = search(cmd.as_bytes(), path)
        .into_iter()
        .map(c)
        .collect::<Result<_, _>>()?;
    let mut args: Vec<CString> = Vec::with_capacity(argv.len());
    args.push(c(argv0.unwrap_or(cmd).as_bytes().to_vec())?);
    for a in &argv[1..] {
        args.push(c(a.clone().into_vec())?);
    }
    let envp = env
        .iter()
        .map(|(k, v)| c([k.as_bytes(), b"=", v.as_bytes()].concat()))
        .collect::<Result<_, _>>()?;
    Ok(Prepared {
        candidates,
        argv: args,
        envp,
    })
}

/// A name with a slash is used as it is; otherwise each PATH entry in turn
/// (an empty entry is the working directory).
fn search(cmd: &[u8], path: &[u8]) -> Vec<Vec<u8>> {
    if cmd.contains(&b'/') {
        return vec![cmd.to_vec()];
    }
    path.split(|&b| b == b':')
        .map(|dir| {
            if dir.is_empty() {
                cmd.to_vec()
            } else {
                let dir = OsStr::from_bytes(dir);
                std::path::Path::new(dir)
                    .join(OsStr::from_bytes(cmd))
                    .into_os_string()
                    .into_vec()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_search_as_execvp() {
        assert_eq!(search(b"./x", b"/bin"), vec![b"./x".to_vec()]);
        assert_eq!(
            search(b"sh", b"/usr/bin::/bin"),
            vec![b"/usr/bin/sh".to_vec(), b"sh".to_vec(), b"/bin/sh".to_vec()]
        );
        let p = prepare(
            &["sh".into(), "-c".into(), "".into()],
            Some(&"login".into()),
            &[("A".into(), "".into())],
        )
        .unwrap();
        assert_eq!(
            p.candidates,
            vec![c"/bin/sh".to_owned(), c"/usr/bin/sh".to_owned()]
        );
        assert_eq!(
            p.argv,
            vec![c"login".to_owned(), c"-c".to_owned(), c"".to_owned()]
        );
        assert_eq!(p.envp, vec![c"A=".to_owned()]);
        assert!(prepare(&["a\0b".into()], None, &[]).is_err());
    }
}
