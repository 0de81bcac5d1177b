"""A FUSE mount whose daemon never answers, made inside a sandbox that
shows /dev/fuse: a child's open beneath it, a write the monitor judges,
blocks every lookup there until the daemon's descriptor closes (argv[2]
seconds later). Usage: fuse_hang.py MOUNTPOINT SECONDS."""
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWUSER, CLONE_NEWNS = 0x10000000, 0x00020000
uid, gid = os.getuid(), os.getgid()
if libc.unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0:
    print("unshare failed", ctypes.get_errno()); sys.exit(0)
open("/proc/self/setgroups", "w").write("deny")
open("/proc/self/uid_map", "w").write(f"0 {uid} 1")
open("/proc/self/gid_map", "w").write(f"0 {gid} 1")
fd = os.open("/dev/fuse", os.O_RDWR)
mnt = sys.argv[1]
os.makedirs(mnt, exist_ok=True)
opts = f"fd={fd},rootmode=40000,user_id=0,group_id=0".encode()
if libc.mount(b"x", mnt.encode(), b"fuse", 0, opts) != 0:
    print("mount failed", ctypes.get_errno()); sys.exit(0)
if os.fork() == 0:
    os.setsid()
    time.sleep(int(sys.argv[2]))   # holds the daemon's fd, never answers
    os._exit(0)
if os.fork() == 0:
    os.close(fd)
    try: os.open(mnt + "/x", os.O_WRONLY | os.O_CREAT)
    except OSError as e: print("open", e)
    os._exit(0)
time.sleep(0.5)
print("parent done")
