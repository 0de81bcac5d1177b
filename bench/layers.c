/* The physical limit of qwrap's default sandbox: exactly its layers, made
 * with the same calls and nothing else — no policy, no checks, no reports,
 * no error messages beyond the call that failed. `make bench` times it
 * beside qwrap and bubblewrap running the same policy.
 *
 *   layers [-w DIR]... [-H FILE]... [-D DIR]... [-o DIR:UPPER:WORK]...
 *          [-O HOME:UPPER:WORK -c DIR...] [-b SRC:DIR]... [-t DIR]...
 *          [-h HOME [-T DIR]... [-e PATH]... [-E DIR]...] -- CMD...
 *
 *   -w  a writable root (the workspace), bound at its own path
 *   -H  a hidden file: an empty mode-0000 file over it (-D: a directory)
 *   -b  a cache's layer bound bare at DIR; -t a private tmpfs at DIR
 *   -o  a cache overlaid on its own (one overlay mount each)
 *   -O  one overlay of the home, each -c cache's subtree cloned from it
 *   -h  the home's listed view: an empty tmpfs over HOME (read-only once
 *       filled) holding each -e file and -E directory bound read-only from
 *       the host, and the caches; -T an empty read-only tmpfs (other homes)
 *
 * The sequence, as qwrap's plan: a supervisor forked outside (the warden,
 * which receives the seccomp listener), user+mount+IPC namespaces and the
 * id maps, every source cloned, the host read-only
 * in place, /dev and /tmp, the writable roots, caches and hidden files,
 * capabilities dropped, no_new_privs, Landlock (writes beneath the roots,
 * signal and abstract-socket scopes), a reaper forked, the seccomp filter
 * with its listener handed to the supervisor, the keyring filter, exec.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/mount.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef MS_REC
#define MS_REC 16384
#define MS_SLAVE (1 << 19)
#define MS_PRIVATE (1 << 18)
#define MS_NOSUID 2
#define MS_NODEV 4
#define MS_NOEXEC 8
#endif

/* Landlock, as the kernel's uapi has it (Debian 12's header predates ABI 4). */
struct ll_ruleset_attr { uint64_t fs, net, scoped; };
struct ll_path_beneath { uint64_t allowed; int32_t parent_fd; } __attribute__((packed));
#define LL_FS_ALL ((1ULL << 16) - 1) /* ABI 5: every filesystem right */
#define LL_FS_READ ((1ULL << 0) | (1ULL << 2) | (1ULL << 3)) /* execute, read file, read dir */
#define LL_SCOPE_ALL 3ULL /* abstract unix sockets, signals */

static void die(const char *what) {
    fprintf(stderr, "layers: %s: %s\n", what, strerror(errno));
    exit(125);
}

#define CHECK(call, what) do { if ((call) < 0) die(what); } while (0)

static int fsopen_(const char *fs) { return syscall(SYS_fsopen, fs, FSOPEN_CLOEXEC); }
static int fsset(int fd, const char *k, const char *v) {
    return syscall(SYS_fsconfig, fd, FSCONFIG_SET_STRING, k, v, 0);
}
static int fsflag(int fd, const char *k) { return syscall(SYS_fsconfig, fd, FSCONFIG_SET_FLAG, k, NULL, 0); }
static int fsmount_(int fd) {
    if (syscall(SYS_fsconfig, fd, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0) return -1;
    return syscall(SYS_fsmount, fd, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
}
static int tree(int dir, const char *path, int recursive) {
    return syscall(SYS_open_tree, dir, path,
                   OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (recursive ? AT_RECURSIVE : 0));
}
static int setattr(int fd, const char *path, unsigned flags, uint64_t set, uint64_t prop) {
    struct mount_attr a = {.attr_set = set, .propagation = prop};
    return syscall(SYS_mount_setattr, fd, path, flags, &a, sizeof a);
}
static int attach(int fd, const char *target) {
    return syscall(SYS_move_mount, fd, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH);
}
static int mount_(const char *src, const char *dst, const char *fs, unsigned long f, const char *data) {
    return syscall(SYS_mount, src, dst, fs, f, data);
}
static void write_file(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, text, strlen(text)) < 0) die(path);
    close(fd);
}

/* The directories above `path` inside the home's tmpfs (qwrap makes them so). */
static void parents(const char *home, const char *path) {
    char p[4096];
    snprintf(p, sizeof p, "%s", path);
    for (char *s = p + strlen(home) + 1; (s = strchr(s, '/')); *s++ = '/') {
        *s = 0;
        mkdir(p, 0755);
    }
}

/* A mount point inside the home's tmpfs, where `path` lies in it. */
static void place(const char *home, const char *path) {
    size_t n = home ? strlen(home) : 0;
    if (!home || strncmp(path, home, n) || path[n] != '/') return;
    parents(home, path);
    mkdir(path, 0755);
}

/* A detached overlay of `lower` with `upper` and `work`. */
static int overlay(const char *lower, const char *upper, const char *work) {
    int fs = fsopen_("overlay");
    if (fs < 0 || fsset(fs, "lowerdir", lower) < 0 || fsset(fs, "upperdir", upper) < 0 ||
        fsset(fs, "workdir", work) < 0 || fsflag(fs, "userxattr") < 0)
        die("overlay");
    int m = fsmount_(fs);
    if (m < 0) die("overlay fsmount");
    close(fs);
    return m;
}

#define MAX 64
static const char *devices[] = {"null", "zero", "full", "random", "urandom", "tty"};

int main(int argc, char **argv) {
    const char *roots[MAX], *targets[MAX], *hidden[MAX], *caches[MAX], *in_home[MAX], *tmpfs[MAX];
    const char *home = NULL, *listed = NULL, *entries[MAX], *homes[MAX];
    int nroots = 0, nhidden = 0, ncaches = 0, nin_home = 0, ntmpfs = 0, nentries = 0, nhomes = 0, opt;
    int hidden_dir[MAX], entry_dir[MAX];
    char *home_spec = NULL;
    while ((opt = getopt(argc, argv, "+w:H:D:o:O:c:b:t:h:T:e:E:")) != -1) {
        if (opt == 'w') {
            targets[nroots] = optarg;
            roots[nroots++] = optarg;
        } else if (opt == 'b') {
            char *spec = strdup(optarg), *dst = strchr(spec, ':');
            *dst++ = 0;
            targets[nroots] = dst;
            roots[nroots++] = spec;
        } else if (opt == 'H' || opt == 'D') {
            hidden_dir[nhidden] = opt == 'D';
            hidden[nhidden++] = optarg;
        } else if (opt == 't') tmpfs[ntmpfs++] = optarg;
        else if (opt == 'o') caches[ncaches++] = optarg;
        else if (opt == 'O') home_spec = optarg;
        else if (opt == 'c') in_home[nin_home++] = optarg;
        else if (opt == 'h') listed = optarg;
        else if (opt == 'T') homes[nhomes++] = optarg;
        else if (opt == 'e' || opt == 'E') {
            entry_dir[nentries] = opt == 'E';
            entries[nentries++] = optarg;
        } else return 2;
    }
    if (optind >= argc) return 2;
    uid_t uid = getuid();
    gid_t gid = getgid();

    /* The supervisor: forked twice so that it is no child of the command;
     * it takes the seccomp listener and waits for the sandbox to end. */
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), "socketpair");
    pid_t mid = fork();
    if (mid == 0) {
        if (fork() != 0) _exit(0);
        close(sv[0]);
        char b;
        struct iovec io = {&b, 1};
        char ctl[CMSG_SPACE(sizeof(int))];
        struct msghdr m = {.msg_iov = &io, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
        recvmsg(sv[1], &m, 0);
        struct pollfd p = {sv[1], POLLIN, 0};
        poll(&p, 1, -1); /* until the command's end closes the pair */
        _exit(0);
    }
    CHECK(waitpid(mid, NULL, 0), "waitpid");
    close(sv[1]);

    CHECK(unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC), "unshare");
    char map[64];
    write_file("/proc/self/setgroups", "deny");
    snprintf(map, sizeof map, "%u %u 1", uid, uid);
    write_file("/proc/self/uid_map", map);
    snprintf(map, sizeof map, "%u %u 1", gid, gid);
    write_file("/proc/self/gid_map", map);
    CHECK(mount_(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL), "make slave");

    /* Every source, cloned while the host's paths are as named. */
    int dev[6], root_fd[MAX], cache_fd[MAX], home_fd[MAX], hide_fd[MAX], entry_fd[MAX];
    for (int i = 0; i < 6; i++) {
        char p[32];
        snprintf(p, sizeof p, "/dev/%s", devices[i]);
        CHECK(dev[i] = tree(AT_FDCWD, p, 0), p);
        CHECK(setattr(dev[i], "", AT_EMPTY_PATH | AT_RECURSIVE, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, 0), p);
    }
    for (int i = 0; i < nroots; i++) {
        CHECK(root_fd[i] = tree(AT_FDCWD, roots[i], 1), roots[i]);
        CHECK(setattr(root_fd[i], "", AT_EMPTY_PATH | AT_RECURSIVE, MOUNT_ATTR_NOSUID, MS_PRIVATE), roots[i]);
    }
    for (int i = 0; i < nentries; i++) {
        CHECK(entry_fd[i] = tree(AT_FDCWD, entries[i], entry_dir[i]), entries[i]);
        CHECK(setattr(entry_fd[i], "", AT_EMPTY_PATH | AT_RECURSIVE, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID,
                      MS_PRIVATE), entries[i]);
    }
    for (int i = 0; i < ncaches; i++) {
        char *spec = strdup(caches[i]), *upper = strchr(spec, ':'), *work;
        *upper++ = 0;
        work = strchr(upper, ':');
        *work++ = 0;
        cache_fd[i] = overlay(spec, upper, work);
        caches[i] = spec;
    }
    if (home_spec) {
        char *spec = strdup(home_spec), *upper = strchr(spec, ':'), *work;
        *upper++ = 0;
        work = strchr(upper, ':');
        *work++ = 0;
        home = spec;
        int o = overlay(home, upper, work);
        for (int i = 0; i < nin_home; i++)
            CHECK(home_fd[i] = tree(o, in_home[i] + strlen(home) + 1, 0), in_home[i]);
        close(o);
    }
    if (nhidden) {
        int fs = fsopen_("tmpfs");
        CHECK(fs, "hidden tmpfs");
        int t = fsmount_(fs);
        CHECK(t, "hidden fsmount");
        int f = openat(t, "f", O_CREAT | O_WRONLY | O_CLOEXEC, 0);
        CHECK(f, "hidden file");
        close(f);
        CHECK(mkdirat(t, "d", 0), "hidden dir");
        for (int i = 0; i < nhidden; i++) {
            CHECK(hide_fd[i] = tree(t, hidden_dir[i] ? "d" : "f", 0), "hidden clone");
            CHECK(setattr(hide_fd[i], "", AT_EMPTY_PATH, MOUNT_ATTR_RDONLY, 0), "hidden attr");
        }
    }

    /* The host read-only in place, then what lands on it. */
    CHECK(setattr(AT_FDCWD, "/", AT_RECURSIVE, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, MS_PRIVATE), "host read-only");
    CHECK(mount_("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755"), "/dev");
    for (int i = 0; i < 6; i++) {
        char p[32];
        snprintf(p, sizeof p, "/dev/%s", devices[i]);
        CHECK(mknod(p, S_IFREG | 0444, 0), p);
        CHECK(attach(dev[i], p), p);
    }
    CHECK(mkdir("/dev/pts", 0755), "/dev/pts");
    CHECK(mkdir("/dev/shm", 0755), "/dev/shm");
    CHECK(mount_("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620"), "devpts");
    CHECK(mount_("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777"), "/dev/shm");
    CHECK(symlink("pts/ptmx", "/dev/ptmx"), "ptmx");
    CHECK(symlink("/proc/self/fd", "/dev/fd"), "fd");
    CHECK(symlink("/proc/self/fd/0", "/dev/stdin"), "stdin");
    CHECK(symlink("/proc/self/fd/1", "/dev/stdout"), "stdout");
    CHECK(symlink("/proc/self/fd/2", "/dev/stderr"), "stderr");
    for (int i = 0; i < nhomes; i++)
        CHECK(mount_("tmpfs", homes[i], "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755"), homes[i]);
    CHECK(mount_("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777"), "/tmp");
    if (listed) {
        mkdir(listed, 0755); /* where the home lies in another home's tmpfs */
        CHECK(mount_("tmpfs", listed, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755"), listed);
    }
    for (int i = 0; i < ncaches; i++) {
        place(listed, caches[i]);
        CHECK(attach(cache_fd[i], caches[i]), caches[i]);
    }
    for (int i = 0; i < nin_home; i++) {
        place(listed, in_home[i]);
        CHECK(attach(home_fd[i], in_home[i]), in_home[i]);
    }
    for (int i = 0; i < ntmpfs; i++) {
        place(listed, tmpfs[i]);
        CHECK(mount_("tmpfs", tmpfs[i], "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700"), tmpfs[i]);
    }
    for (int i = 0; i < nroots; i++) {
        place(listed, targets[i]);
        CHECK(attach(root_fd[i], targets[i]), targets[i]);
    }
    for (int i = 0; i < nentries; i++) {
        parents(listed, entries[i]);
        CHECK(entry_dir[i] ? mkdir(entries[i], 0755) : mknod(entries[i], S_IFREG | 0444, 0), entries[i]);
        CHECK(attach(entry_fd[i], entries[i]), entries[i]);
    }
    for (int i = 0; i < nhidden; i++) CHECK(attach(hide_fd[i], hidden[i]), hidden[i]);
    if (listed) CHECK(setattr(AT_FDCWD, listed, 0, MOUNT_ATTR_RDONLY, 0), "home read-only");
    for (int i = 0; i < nhomes; i++) CHECK(setattr(AT_FDCWD, homes[i], 0, MOUNT_ATTR_RDONLY, 0), homes[i]);
    CHECK(setattr(AT_FDCWD, "/dev", 0, MOUNT_ATTR_RDONLY, 0), "/dev read-only");
    if (nroots) CHECK(chdir(targets[0]), "chdir");

    /* Capabilities, no_new_privs. */
    for (int c = 0; c <= CAP_LAST_CAP; c++) prctl(PR_CAPBSET_DROP, c, 0, 0, 0);
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2] = {{0}};
    CHECK(syscall(SYS_capset, &h, d), "capset");
    CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs");

    /* Landlock: read everywhere, write beneath the roots, /dev and /tmp. */
    struct ll_ruleset_attr ra = {.fs = LL_FS_ALL, .net = 0, .scoped = LL_SCOPE_ALL};
    int rs = syscall(SYS_landlock_create_ruleset, &ra, sizeof ra, 0);
    CHECK(rs, "landlock_create_ruleset");
    const char *writable[4 * MAX + 4];
    int nw = 0;
    for (int i = 0; i < nroots; i++) writable[nw++] = targets[i];
    for (int i = 0; i < ntmpfs; i++) writable[nw++] = tmpfs[i];
    for (int i = 0; i < ncaches; i++) writable[nw++] = caches[i];
    for (int i = 0; i < nin_home; i++) writable[nw++] = in_home[i];
    writable[nw++] = "/dev";
    writable[nw++] = "/tmp";
    struct ll_path_beneath pb = {.allowed = LL_FS_READ, .parent_fd = open("/", O_PATH | O_CLOEXEC)};
    CHECK(syscall(SYS_landlock_add_rule, rs, 1, &pb, 0), "landlock_add_rule /");
    close(pb.parent_fd);
    for (int i = 0; i < nw; i++) {
        pb.allowed = LL_FS_ALL;
        CHECK(pb.parent_fd = open(writable[i], O_PATH | O_CLOEXEC), writable[i]);
        CHECK(syscall(SYS_landlock_add_rule, rs, 1, &pb, 0), writable[i]);
        close(pb.parent_fd);
    }
    CHECK(syscall(SYS_landlock_restrict_self, rs, 0), "landlock_restrict_self");
    close(rs);

    /* The reaper: ends what the command leaves once it exits. */
    int rp[2];
    CHECK(pipe2(rp, O_CLOEXEC), "pipe2");
    if (fork() == 0) {
        char b;
        close(rp[1]);
        read(rp[0], &b, 1);
        _exit(0);
    }
    close(rp[0]);

    /* seccomp: TIOCSTI refused, kill and friends to the supervisor. */
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ioctl, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1])),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x5412 /* TIOCSTI */, 0, 6),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_kill, 3, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_tkill, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_tgkill, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_pidfd_send_signal, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {sizeof f / sizeof f[0], f};
    int listener = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
    CHECK(listener, "seccomp");
    char b = 'L';
    struct iovec io = {&b, 1};
    char ctl[CMSG_SPACE(sizeof(int))] = {0};
    struct msghdr m = {.msg_iov = &io, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &listener, sizeof(int));
    CHECK(sendmsg(sv[0], &m, 0), "sendmsg");
    close(listener);
    /* The keyring filter: the caller's keyrings out of reach. */
    struct sock_filter kf[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_keyctl, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_add_key, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_request_key, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog kprog = {sizeof kf / sizeof kf[0], kf};
    CHECK(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &kprog), "seccomp keyrings");

    execvp(argv[optind], argv + optind);
    die(argv[optind]);
}
