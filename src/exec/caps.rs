//! Capabilities: all dropped in `run`; in bwrap mode, the ones named.

use rustix::io::Errno;

/// Empties the bounding, ambient, effective, permitted and inheritable sets.
pub(super) fn drop_capabilities() -> Result<(), Errno> {
    use rustix::thread::{CapabilitySet, CapabilitySets};
    // Walk until the kernel says EINVAL: that covers capabilities newer than
    // any list compiled in here.
    for cap in 0..64u32 {
        match rustix::thread::remove_capability_from_bounding_set(CapabilitySet::from_bits_retain(1 << cap)) {
            Ok(()) => {}
            Err(Errno::INVAL) => break,
            Err(e) => return Err(e),
        }
    }
    rustix::thread::clear_ambient_capability_set()?;
    rustix::thread::set_capabilities(
        None,
        CapabilitySets {
            effective: CapabilitySet::empty(),
            permitted: CapabilitySet::empty(),
            inheritable: CapabilitySet::empty(),
        },
    )
}

/// Removes the given capabilities from the effective, permitted,
/// inheritable and ambient sets, and from the bounding set when asked.
pub(super) fn drop_capability_list(
    caps: &[u32],
    bounding: bool,
    keep_across_exec: bool,
) -> Result<(), Errno> {
    use rustix::thread::{CapabilitySet, CapabilitySets};
    let mut mask = CapabilitySet::empty();
    for &cap in caps {
        let one = CapabilitySet::from_bits_retain(1 << cap);
        if bounding {
            match rustix::thread::remove_capability_from_bounding_set(one) {
                Ok(()) | Err(Errno::INVAL) => {}
                Err(e) => return Err(e),
            }
        }
        match rustix::thread::configure_capability_in_ambient_set(one, false) {
            Ok(()) | Err(Errno::INVAL) => {}
            Err(e) => return Err(e),
        }
        mask |= one;
    }
    let now = rustix::thread::capabilities(None)?;
    let permitted = now.permitted - mask;
    rustix::thread::set_capabilities(
        None,
        CapabilitySets {
            effective: now.effective - mask,
            permitted,
            inheritable: if keep_across_exec {
                permitted
            } else {
                now.inheritable - mask
            },
        },
    )?;
    if keep_across_exec {
        for cap in 0..64u32 {
            let one = CapabilitySet::from_bits_retain(1 << cap);
            if permitted.contains(one) {
                rustix::thread::configure_capability_in_ambient_set(one, true)?;
            }
        }
    }
    Ok(())
}
