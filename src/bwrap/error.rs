//! Why bubblewrap's options could not become a sandbox, each worded as
//! bubblewrap words it where it has the case (printed after `bwrap: `,
//! exit 1).

use std::ffi::OsString;
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LowerError {
    #[error("--uid and --gid require --unshare-user")]
    IdsWithoutUserns,
    #[error("Can't find source path {}: No such file or directory", .0.display())]
    MissingSource(PathBuf),
    #[error("Can't resolve fd {0}: not an open file or directory")]
    UnresolvableFd(i32),
    /// On an initramfs root the sandbox's root is moved over rootfs, not
    /// pivoted: a sandbox keeping CAP_SYS_ADMIN could unmount it.
    #[error(
        "the host's root is the initramfs (rootfs), so the sandbox's root is moved over it \
         rather than pivoted, and a sandbox keeping CAP_SYS_ADMIN could unmount it and see the \
         host's files; add --cap-drop CAP_SYS_ADMIN (or --cap-drop ALL), or boot with a real root \
         filesystem (switch_root)"
    )]
    InitramfsKeepsSysAdmin,
    #[error(
        "QWRAP_LANDLOCK=require: {shortfall}; unset QWRAP_LANDLOCK or set it to best-effort to run without"
    )]
    LandlockRequired { shortfall: String },
    #[error("{name}={value:?}: {reason}")]
    Setting {
        name: &'static str,
        value: OsString,
        reason: String,
    },
}
