# SPDX-License-Identifier: MIT
"""A throwaway systemd container made of the host's own root, for the unit tests.

PID 1 of the host need not be systemd: systemd 252 is booted as PID 1 of new
PID, mount, network, UTS, IPC and cgroup namespaces (container-init.sh), over
an overlay of / whose upper layer is a tmpfs. Its cgroup is a fresh child of
the host's cgroup2 hierarchy, so teardown can kill everything in it at once
(cgroup.kill) and then remove it. The network namespace holds only its own
loopback. Every wait has a deadline.

Root only (namespaces, mounts, cgroups). Standard library only.
"""

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
INIT = os.path.join(HERE, "container-init.sh")
CLONE_NEWNET = 0x40000000
BOOT_TIMEOUT = 60
CMD_TIMEOUT = 60
PREFIX = "ssc-systemd-test-"
PR_SET_PDEATHSIG = 1


class ContainerError(AssertionError):
    pass


def cgroup2_mount():
    """Where the host mounts the unified hierarchy: /sys/fs/cgroup on a pure
    cgroup2 host, /sys/fs/cgroup/unified on a hybrid one."""
    with open("/proc/self/mounts") as f:
        for line in f:
            fields = line.split()
            if fields[2] == "cgroup2":
                return fields[1]
    raise ContainerError("no cgroup2 hierarchy mounted (/proc/self/mounts)")


def _dead_owner(name):
    """True if name is PREFIX + the PID of a test process that is gone."""
    pid = name[len(PREFIX):].split("-")[0] if name.startswith(PREFIX) else ""
    return pid.isdigit() and not os.path.exists("/proc/" + pid)


def _rmdir_tree(path):
    """Removes a cgroup and its children, deepest first (rmdir is how a
    cgroup goes; its files go with it)."""
    for d, _subdirs, _files in sorted(os.walk(path), key=lambda w: -len(w[0])):
        os.rmdir(d)


def _sweep(cgroup_base):
    """Removes what runs whose test process was killed left: empty cgroups
    (their processes died with it) and scratch directories."""
    for name in filter(_dead_owner, os.listdir(cgroup_base)):
        with contextlib.suppress(OSError):
            _rmdir_tree(os.path.join(cgroup_base, name))
    tmp = tempfile.gettempdir()
    for name in filter(_dead_owner, os.listdir(tmp)):
        shutil.rmtree(os.path.join(tmp, name), ignore_errors=True)


def _make_cgroup(base, name):
    """A new cgroup right under the hierarchy's root: the root is exempt from
    the no-internal-process rule, which a cgroup of ours might not be."""
    path = os.path.join(base, name)
    os.mkdir(path)
    return path


def _remove_cgroup(path, deadline):
    kill = os.path.join(path, "cgroup.kill")
    if os.path.exists(kill):
        with open(kill, "w") as f:
            f.write("1")
    while True:
        busy = []
        for d, _subdirs, _files in os.walk(path):
            with open(os.path.join(d, "cgroup.procs")) as f:
                if f.read().strip():
                    busy.append(d)
        if not busy:
            break
        if time.monotonic() > deadline:
            raise ContainerError("processes left in %s after kill" % ", ".join(busy))
        time.sleep(0.05)
    _rmdir_tree(path)


@contextlib.contextmanager
def netns_of(pid):
    """Moves the calling thread into the network namespace of pid for the
    block: sockets created inside belong to it for their whole life."""
    libc = ctypes.CDLL(None, use_errno=True)
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        target = os.open("/proc/%d/ns/net" % pid, os.O_RDONLY)
        try:
            if libc.setns(target, CLONE_NEWNET) != 0:
                err = ctypes.get_errno()
                raise OSError(err, "setns into the network namespace of %d: %s"
                              % (pid, os.strerror(err)))
        finally:
            os.close(target)
        try:
            yield
        finally:
            if libc.setns(own, CLONE_NEWNET) != 0:
                err = ctypes.get_errno()
                raise OSError(err, "setns back: %s" % os.strerror(err))
    finally:
        os.close(own)


class Container:
    def __init__(self):
        self.base = None
        self.scratch = None
        self.cgroup = None
        self.proc = None
        self.pid = None  # PID 1 of the container, as the host sees it
        self.log = None

    # -- life cycle ---------------------------------------------------------

    def boot(self, timeout=BOOT_TIMEOUT):
        deadline = time.monotonic() + timeout
        cgroup_base = cgroup2_mount()
        _sweep(cgroup_base)
        self.base = tempfile.mkdtemp(prefix="%s%d-" % (PREFIX, os.getpid()))
        self.scratch = os.path.join(self.base, "mnt")
        os.mkdir(self.scratch)
        self.log = open(os.path.join(self.base, "boot.log"), "w+")
        self.cgroup = _make_cgroup(cgroup_base, os.path.basename(self.base))
        procs = os.path.join(self.cgroup, "cgroup.procs")
        libc = ctypes.CDLL(None, use_errno=True)

        def enter_cgroup():
            # Before unshare: the namespace's cgroup root is where it starts.
            with open(procs, "w") as f:
                f.write("0")
            # Should the test itself be killed, unshare dies, and with it
            # (--kill-child) the container's PID 1 and so all of it.
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)

        self.proc = subprocess.Popen(
            ["unshare", "--pid", "--fork", "--mount", "--net", "--uts", "--ipc", "--cgroup",
             "--kill-child", INIT, self.scratch],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT,
            preexec_fn=enter_cgroup)
        self.pid = self._wait_child(deadline)
        state = ""
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ContainerError("the container's init exited with %d: %s"
                                     % (self.proc.returncode, self.boot_log()))
            r = self.run(["systemctl", "is-system-running"], check=False,
                         timeout=max(1, deadline - time.monotonic()))
            state = r.stdout.strip()
            if state in ("running", "degraded"):
                return self
            time.sleep(0.1)
        raise ContainerError("systemd did not finish booting in %ds (state %r): %s"
                             % (timeout, state, self.boot_log()))

    def _wait_child(self, deadline):
        children = "/proc/%d/task/%d/children" % (self.proc.pid, self.proc.pid)
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ContainerError("unshare exited with %d: %s"
                                     % (self.proc.returncode, self.boot_log()))
            try:
                with open(children) as f:
                    pids = f.read().split()
            except FileNotFoundError:
                pids = []
            if pids:
                return int(pids[0])
            time.sleep(0.02)
        raise ContainerError("unshare started no child: " + self.boot_log())

    def boot_log(self):
        self.log.seek(0)
        return self.log.read()[-4000:] or "(no output)"

    def close(self, timeout=30):
        """Kills everything in the container and removes what it left:
        the mount namespace (and so every mount) goes with its last process,
        the cgroup is removed, the scratch directory deleted."""
        deadline = time.monotonic() + timeout
        errors = []
        if self.pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
        if self.proc:
            try:
                self.proc.wait(max(1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
                errors.append("unshare had to be killed")
        if self.cgroup and os.path.isdir(self.cgroup):
            try:
                _remove_cgroup(self.cgroup, deadline)
            except (OSError, ContainerError) as e:
                errors.append(str(e))
        if self.log:
            self.log.close()
        if self.base:
            shutil.rmtree(self.base, ignore_errors=True)
        if errors:
            raise ContainerError("; ".join(errors))

    # -- inside -------------------------------------------------------------

    def path(self, p):
        """Host path of p inside the container (through its root)."""
        return "/proc/%d/root/%s" % (self.pid, p.lstrip("/"))

    def run(self, argv, check=True, timeout=CMD_TIMEOUT, input=None):
        """Runs argv in all the container's namespaces; returns the
        CompletedProcess (text)."""
        try:
            r = subprocess.run(["nsenter", "-t", str(self.pid), "-a"] + argv,
                               capture_output=True, text=True, timeout=timeout, input=input)
        except subprocess.TimeoutExpired:
            raise ContainerError("%s did not finish in %.0fs" % (" ".join(argv), timeout))
        if check and r.returncode != 0:
            raise ContainerError("%s exited with %d: %s%s"
                                 % (" ".join(argv), r.returncode, r.stdout, r.stderr))
        return r

    def systemctl(self, *args, check=True, timeout=CMD_TIMEOUT):
        return self.run(["systemctl", "--no-pager"] + list(args), check=check, timeout=timeout)

    def install(self, src, dest, mode):
        target = self.path(dest)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(src, target)
        os.chmod(target, mode)

    def write(self, dest, text, mode):
        target = self.path(dest)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(target, mode)  # O_CREAT's mode does not apply to a file that was there

    def netns(self):
        return netns_of(self.pid)
