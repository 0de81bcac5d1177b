"""The user's terminal: a pty whose session holds a host job (a process
group of its own that records each signal it gets) and qwrap in the
foreground. Usage: terminal_user.py OUTDIR QWRAP ARGS... ; the command
finds the job's process group in OUTDIR/job. Prints what the host sees
once qwrap has ended: the job's signals and state, the terminal's
exclusive flag, line discipline and modes, qwrap's status. $TYPED: a JSON list of [text, action, argument]: once
the terminal has shown the text, type the argument ("type") or resize the
terminal to [rows, cols] ("resize")."""
import fcntl, json, os, signal, struct, sys, termios, time

out, argv = sys.argv[1], sys.argv[2:]
TIOCGEXCL = 0x80045440
master, slave = os.openpty()
fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 33, 101, 0, 0))
typed = json.loads(os.environ.get("TYPED", "[]"))
name = os.ttyname(slave)

def user():
    os.close(master)
    os.setsid()
    fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
    signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    job = os.fork()
    if job == 0:
        os.setpgid(0, 0)
        def note(n, _):
            with open(f"{out}/signals", "a") as f:
                f.write(f"{signal.Signals(n).name}\n")
        for s in (signal.SIGWINCH, signal.SIGTTIN, signal.SIGTTOU, signal.SIGINT, signal.SIGHUP, signal.SIGCONT, signal.SIGTSTP):
            signal.signal(s, note)
        while True:
            time.sleep(1)
    try:
        os.setpgid(job, job)
    except OSError:
        pass
    global held
    held = job
    with open(f"{out}/job", "w") as f:
        f.write(str(job))
    before = termios.tcgetattr(slave)
    q = os.fork()
    if q == 0:
        os.setpgid(0, 0)
        os.tcsetpgrp(slave, os.getpid())
        signal.signal(signal.SIGTTOU, signal.SIG_DFL)
        # $STDIO=null: the terminal only as the controlling one (an
        # agent's pipes in a terminal's session).
        stdio = os.open("/dev/null", os.O_RDWR) if os.environ.get("STDIO") == "null" else slave
        for fd in (0, 1, 2):
            os.dup2(stdio, fd)
        os.execvp(argv[0], argv)
    try:
        # Both sides, as a shell does (the child may have run already).
        os.setpgid(q, q)
        os.tcsetpgrp(slave, q)
    except OSError:
        pass
    _, status = os.waitpid(q, 0)
    os.tcsetpgrp(slave, os.getpgrp())
    time.sleep(0.3)
    state = open(f"/proc/{job}/stat").read().rsplit(")", 1)[1].split()[0]
    try:
        sigs = open(f"{out}/signals").read().split()
    except FileNotFoundError:
        sigs = []
    excl = struct.unpack("i", fcntl.ioctl(slave, TIOCGEXCL, b"\0" * 4))[0]
    ldisc = struct.unpack("i", fcntl.ioctl(slave, termios.TIOCGETD, b"\0" * 4))[0]
    try:
        modes = "same" if termios.tcgetattr(slave) == before else "changed"
    except termios.error:
        modes = "unreadable"
    os.kill(job, signal.SIGKILL)
    with open(f"{out}/host", "w") as f:
        f.write(f"job-signals: {','.join(sigs) or '-'}\njob-state: {state}\nexclusive: {excl}\nldisc: {ldisc}\nmodes: {modes}\nstatus: {os.waitstatus_to_exitcode(status)}\n")
    os._exit(0)

held = 0
pid = os.fork()
if pid == 0:
    try:
        user()
    except BaseException:
        import traceback
        with open(f"{out}/host", "a") as f:
            traceback.print_exc(file=f)
    finally:
        if held:
            os.kill(held, signal.SIGKILL)
        os._exit(1)
os.close(slave)
seen = b""
while True:
    try:
        d = os.read(master, 4096)
    except OSError:
        break
    if not d:
        break
    seen += d
    while typed and typed[0][0].encode() in seen:
        _, action, arg = typed.pop(0)
        time.sleep(0.1)
        if action == "type":
            os.write(master, arg.encode())
        else:
            fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", arg[0], arg[1], 0, 0))
os.waitpid(pid, 0)
sys.stdout.write(seen.decode(errors="replace"))
sys.stdout.write(open(f"{out}/host").read())
