//! The account's home directory from /etc/passwd, for when `$HOME` is unset.
//! Parsed directly: a static binary has no NSS.

use std::path::PathBuf;

/// The home directory of `uid` in a passwd(5) text, if listed.
pub fn home_of(passwd: &str, uid: u32) -> Option<PathBuf> {
    passwd.lines().find_map(|line| {
        let f: Vec<&str> = line.split(':').collect();
        if f.len() < 7 || f[2].parse::<u32>().ok()? != uid || !f[5].starts_with('/') {
            return None;
        }
        Some(PathBuf::from(f[5]))
    })
}

/// The home directory of `uid` from /etc/passwd.
pub fn home_from_system(uid: u32) -> Option<PathBuf> {
    home_of(&std::fs::read_to_string("/etc/passwd").ok()?, uid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_home_by_uid() {
        let p = "root:x:0:0:root:/root:/bin/bash\n# comment\nbad line\nu:x:1000:1000:U,,,:/home/u:/bin/sh\nrel:x:7:7::relative:/bin/sh\n";
        assert_eq!(home_of(p, 0), Some(PathBuf::from("/root")));
        assert_eq!(home_of(p, 1000), Some(PathBuf::from("/home/u")));
        assert_eq!(home_of(p, 7), None);
        assert_eq!(home_of(p, 5), None);
    }
}
