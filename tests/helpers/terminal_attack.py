"""Inside: every route from a command's terminal to the caller's terminal
or a host job (whose process group is in OUT/job). Writes what each call
answered to OUT/inside (the terminal may be dead by then)."""
import fcntl, os, signal, struct, sys, termios, time

out = sys.argv[1]
job = int(open(f"{out}/job").read())
signal.signal(signal.SIGTTOU, signal.SIG_IGN)
res = []

def t(name, f):
    try:
        f()
        res.append(f"{name} done")
    except OSError as e:
        res.append(f"{name} refused {e.errno}")
    except termios.error as e:
        res.append(f"{name} refused {e.args[0]}")

# Into the host job's group, then a background read: SIGTTIN to the job.
child = os.fork()
if child == 0:
    try:
        os.setpgid(0, job)
        os.read(0, 1)
    finally:
        os._exit(0)
time.sleep(0.5)
os.kill(child, signal.SIGKILL)
os.waitpid(child, 0)
fds = [0]
try:
    fds.append(os.open("/dev/tty", os.O_RDWR))
except OSError as e:
    res.append(f"dev-tty refused {e.errno}")
for fd in fds:
    t(f"exclusive{fd}", lambda: fcntl.ioctl(fd, termios.TIOCEXCL))

    def modes():
        m = termios.tcgetattr(fd)
        m[3] &= ~(termios.ECHO | termios.ICANON)
        termios.tcsetattr(fd, termios.TCSANOW, m)

    t(f"modes{fd}", modes)
    t(f"tcsetpgrp{fd}", lambda: os.tcsetpgrp(fd, job))
    t(f"winsize{fd}", lambda: fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 5, 7, 0, 0)))
for fd in fds:
    t(f"ldisc{fd}", lambda: fcntl.ioctl(fd, termios.TIOCSETD, struct.pack("i", 27)))
with open(f"{out}/inside", "w") as f:
    f.write("\n".join(res) + "\n")
