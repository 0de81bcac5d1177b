//! A host socket whose binder has left the directory it bound a relative
//! name from: root finds the file by asking the kernel (SIOCUNIXFILE) and
//! masks it; an unprivileged caller cannot find its own socket's file and
//! the sandbox does not start. Alone in its binary: while the socket is
//! unfindable, every sandbox of the same user refuses to start.

mod common;

use common::*;

#[test]
fn a_socket_whose_binder_moved_is_masked_or_stops_the_sandbox() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            let socks = sockets::AwkwardSockets::new(&f);
            let children = socks.serve(&f, "/");
            let o = socks.connect_inside(&f, api);
            sockets::stop(children);
            if who == Who::Root {
                let out = stdout(&o);
                assert_eq!(
                    out.lines().collect::<Vec<_>>(),
                    ["Connection refused"; 4],
                    "{api}: {out} {}",
                    stderr(&o)
                );
            } else {
                assert_eq!(o.status.code(), Some(125), "{who:?} {api}: {}", stdout(&o));
                assert!(stderr(&o).contains("cannot mask host sockets"), "{}", stderr(&o));
                assert!(stdout(&o).is_empty());
            }
        }
    }
}
