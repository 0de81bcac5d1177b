//! Errno values as people read them: formatting only, no syscalls.

/// "Read-only file system (EROFS)": the text and the name of an errno.
pub fn errno_text(code: i32) -> String {
    let text = std::io::Error::from_raw_os_error(code).to_string();
    let text = match text.find(" (os error") {
        Some(i) => text[..i].to_string(),
        None => text,
    };
    match errno_name(code) {
        Some(name) => format!("{text} ({name})"),
        None => text,
    }
}

fn errno_name(code: i32) -> Option<&'static str> {
    Some(match code {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::EIO => "EIO",
        libc::EBADF => "EBADF",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EBUSY => "EBUSY",
        libc::EEXIST => "EEXIST",
        libc::ENOTDIR => "ENOTDIR",
        libc::EISDIR => "EISDIR",
        libc::EINVAL => "EINVAL",
        libc::ENOSPC => "ENOSPC",
        libc::EROFS => "EROFS",
        libc::ENAMETOOLONG => "ENAMETOOLONG",
        libc::ENOSYS => "ENOSYS",
        libc::ELOOP => "ELOOP",
        libc::EUSERS => "EUSERS",
        libc::ENOEXEC => "ENOEXEC",
        libc::E2BIG => "E2BIG",
        libc::EFAULT => "EFAULT",
        libc::ENODEV => "ENODEV",
        libc::ETXTBSY => "ETXTBSY",
        _ => return None,
    })
}
