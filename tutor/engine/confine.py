"""Confinement of a kernel that runs learner code, applied in the kernel's own process
before any of that code runs (docs/confinement.md).

Layers, each applied where the platform gives it and reported either way:

- namespaces: a PID namespace whose init is the kernel (when it ends, the Linux kernel
  kills everything left in it, ``setsid`` daemons included) and a mount namespace with a
  /proc of its own (it shows only the kernel's processes) and a root of its own (only what
  Landlock lets it use is there: no Unix socket of the user's). Not root: a user namespace first.
- Landlock: reads only the Python installation and the system's directories, writes only
  the kernel's scratch directory (plus what the policy adds), connects no TCP socket,
  signals nothing outside.
- user: started as root, the kernel becomes ``nobody``.
- rlimits: no core dumps, bounded file size, processes and memory.

The mechanism is here; what is readable and writable is the caller's ``Confinement``.
``enter`` runs in a single-threaded process (a fork server's standby, or the launcher of
a new process, ``python -m tutor.engine.confine``): unsharing a PID namespace needs a new
child to be its init, so ``enter`` forks; the parent stays as a small waiter that ends as
its child ended, and only the child returns. Standard library only: kernels import it.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import glob
import json
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

REPORT_ENV = "PTFUND_TUTOR_CONFINEMENT"  # the report, JSON, for doctor and tests
HOST_PID_ENV = "PTFUND_TUTOR_KERNEL_PID"  # the kernel's pid as the tutor sees it (it is 1 inside)
OFF_ENV = "PTFUND_TUTOR_NO_CONFINE"  # layers to leave out, comma-separated, or "all"
LAYERS = ("namespaces", "landlock", "user", "rlimits")

# Generous limits: none of them stops an exercise, each stops a runaway.
FILE_SIZE_LIMIT = 4 << 30  # bytes per file written
PROCESS_LIMIT = 4096  # processes and threads of the kernel's user
UNPRIVILEGED = "nobody"


@dataclasses.dataclass(frozen=True)
class Confinement:
    """What a confined kernel may touch. ``read`` and ``write`` add paths to the defaults
    (the Python installation and system directories readable, the scratch directory
    writable); ``hide`` removes paths from under those (the tutor's own package, which
    holds the built-in pack, is always hidden). ``filesystem``, ``drop_user`` and
    ``limits`` switch layers off; the namespaces are always tried."""

    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()
    hide: tuple[str, ...] = ()
    filesystem: bool = True
    drop_user: bool = True
    limits: bool = True
    scratch_root: str | None = None

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> Confinement:
        fields = {f.name for f in dataclasses.fields(cls)}
        values: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in fields}
        return cls(**values)

    def writing(self, path: str) -> Confinement:
        return dataclasses.replace(self, write=(*self.write, str(path)))


LEARNER = Confinement()  # a kernel that runs learner code: every layer
TREE_ONLY = Confinement(filesystem=False, drop_user=False, limits=False)  # its processes end with it


# ---------------------------------------------------------------- scratch directories


def unprivileged_ids() -> tuple[int, int]:
    import pwd

    try:
        entry = pwd.getpwnam(UNPRIVILEGED)
        return entry.pw_uid, entry.pw_gid
    except KeyError:
        return 65534, 65534


def make_scratch(policy: Confinement) -> str:
    """A fresh scratch directory for one kernel (its owner: the user the kernel becomes)."""
    folder = tempfile.mkdtemp(prefix="ptfund-scratch-", dir=policy.scratch_root)
    if policy.drop_user and os.geteuid() == 0:
        os.chown(folder, *unprivileged_ids())
    return folder


def remove_scratch(folder: str | None) -> None:
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


# ---------------------------------------------------------------- Linux calls

_libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 16384, 1 << 18
MS_BIND, MNT_DETACH = 4096, 2
PR_SET_PDEATHSIG, PR_SET_KEEPCAPS, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT = 1, 8, 24, 38, 47
PR_CAP_AMBIENT_RAISE, PR_SET_CHILD_SUBREAPER = 2, 36
CAP_DAC_READ_SEARCH = 2
CAP_LAST = 63
SYS_LANDLOCK_CREATE_RULESET, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
SYS_CAPSET = {"x86_64": 126, "aarch64": 91}.get(os.uname().machine) if hasattr(os, "uname") else None
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}.get(os.uname().machine) if hasattr(os, "uname") else None
NET_CONNECT_TCP = 1 << 1  # Landlock ABI 4: connecting a TCP socket


def _call(name: str, *args: object) -> int:
    if _libc is None:
        raise OSError(0, "not Linux")
    result = getattr(_libc, name)(*args)
    if result < 0 or (name == "syscall" and result == -1):
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))
    return result


def _prctl(option: int, *args: int) -> None:
    values = [*args, 0, 0, 0, 0][:4]
    _call("prctl", ctypes.c_int(option), *(ctypes.c_ulong(v) for v in values))


def become_subreaper() -> bool:
    """Orphaned descendants of this process are reparented to it (not to init)."""
    try:
        _prctl(PR_SET_CHILD_SUBREAPER, 1)
        return True
    except (OSError, AttributeError):
        return False


def set_death_signal(sig: int) -> bool:
    """Ask Linux to send ``sig`` to this process when its parent dies."""
    try:
        _prctl(PR_SET_PDEATHSIG, int(sig))
        return True
    except (OSError, AttributeError):
        return False


# ---------------------------------------------------------------- Landlock

FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
FS_TRUNCATE, FS_IOCTL_DEV = 1 << 14, 1 << 15
FS_ABI1 = (1 << 13) - 1  # execute ... make_sym
FS_REFER = 1 << 13
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1, 2
READ = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV
DEVICE = FS_READ_FILE | FS_WRITE_FILE | FS_TRUNCATE | FS_IOCTL_DEV | FS_READ_DIR


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def landlock_abi() -> int:
    """Landlock's ABI version here; 0 where there is none."""
    try:
        return _call(
            "syscall", ctypes.c_long(SYS_LANDLOCK_CREATE_RULESET), None, ctypes.c_size_t(0), ctypes.c_uint32(1)
        )
    except OSError:
        return 0


def _handled(abi: int) -> int:
    rights = FS_ABI1
    if abi >= 2:
        rights |= FS_REFER
    if abi >= 3:
        rights |= FS_TRUNCATE
    if abi >= 5:
        rights |= FS_IOCTL_DEV
    return rights


def _landlock(abi: int, rules: list[tuple[str, int]]) -> None:
    handled = _handled(abi)
    # No TCP connection out (a kernel only binds its own ports; the host connects to it):
    # no local service (a notebook server, a gateway, a database) is the learner's to use.
    net = NET_CONNECT_TCP if abi >= 4 else 0
    attr = _RulesetAttr(handled, net, SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    ruleset = _call(
        "syscall",
        ctypes.c_long(SYS_LANDLOCK_CREATE_RULESET),
        ctypes.byref(attr),
        ctypes.c_size_t(size),
        ctypes.c_uint32(0),
    )
    try:
        for path, access in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # absent here: nothing to allow
            try:
                if not os.path.isdir(path):
                    access &= FILE_RIGHTS
                rule = _PathBeneath(access & handled, fd)
                _call(
                    "syscall",
                    ctypes.c_long(SYS_LANDLOCK_ADD_RULE),
                    ctypes.c_int(ruleset),
                    ctypes.c_int(1),  # LANDLOCK_RULE_PATH_BENEATH
                    ctypes.byref(rule),
                    ctypes.c_uint32(0),
                )
            finally:
                os.close(fd)
        _prctl(PR_SET_NO_NEW_PRIVS, 1)
        _call("syscall", ctypes.c_long(SYS_LANDLOCK_RESTRICT_SELF), ctypes.c_int(ruleset), ctypes.c_uint32(0))
    finally:
        os.close(ruleset)


def _tutor_package() -> str:
    return str(Path(__file__).resolve().parents[1])


def _beneath(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _allowed(roots: list[str], hidden: list[str]) -> list[str]:
    """``roots`` as rules, minus ``hidden``: a root that holds a hidden path is replaced
    by its entries (Landlock only allows; it has no rule that denies)."""
    out: list[str] = []
    for root in roots:
        real = os.path.realpath(root)
        if not os.path.exists(real) or any(_beneath(real, h) for h in hidden):
            continue
        if not any(_beneath(h, real) for h in hidden):
            out.append(real)
            continue
        try:
            entries = sorted(os.listdir(real))
        except OSError:
            continue
        out += _allowed([os.path.join(real, e) for e in entries], hidden)
    return out


def readable_roots(policy: Confinement) -> list[str]:
    """What a confined kernel reads: the system's directories and this Python's."""
    roots = ["/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc", "/sys", "/proc"]
    roots += [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]
    roots += [os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))]
    try:
        import site

        user_site = site.getusersitepackages()
        if user_site in sys.path:
            roots.append(user_site)
    except Exception:
        pass
    return roots + list(policy.read)


def _filesystem_rules(policy: Confinement, scratch: str) -> list[tuple[str, int]]:
    hidden = [os.path.realpath(p) for p in (*policy.hide, _tutor_package())]
    rules = [(path, READ) for path in _allowed(readable_roots(policy), hidden)]
    everything = (1 << 16) - 1
    rules += [(path, everything) for path in (scratch, "/dev/shm", *policy.write)]
    rules += [(path, DEVICE) for path in ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")]
    rules += [(path, DEVICE) for path in glob.glob("/dev/nvidia*")]  # CUDA opens and ioctls these
    return rules


# ---------------------------------------------------------------- the layers


def _unshare(report: dict) -> bool:
    """New PID and mount namespaces (and a user namespace when not root)."""
    if _libc is None:
        report["namespaces"] = f"none: {sys.platform} has no namespaces"
        return False
    uid, gid = os.geteuid(), os.getegid()
    flags = CLONE_NEWPID | CLONE_NEWNS | (0 if uid == 0 else CLONE_NEWUSER)
    try:
        _call("unshare", ctypes.c_int(flags))
        if uid != 0:
            for name, text in (("uid_map", f"{uid} {uid} 1"), ("setgroups", "deny"), ("gid_map", f"{gid} {gid} 1")):
                with open(f"/proc/self/{name}", "w") as f:
                    f.write(text)
    except OSError as exc:
        report["namespaces"] = f"none: unshare refused ({exc.strerror or exc})"
        return False
    report["namespaces"] = "PID and mount" + ("" if uid == 0 else " (in a user namespace)")
    return True


def _wait_and_mirror(child: int, scratch: str | None) -> None:
    """The waiter: end as the kernel ended (a signal as that signal), never return. It
    removes the scratch directory, also when its own parent dies (the fork server killed)
    or it is asked to stop (SIGTERM): it kills the kernel first."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # interrupts are the kernel's
    signal.signal(signal.SIGTERM, lambda *_: os.kill(child, signal.SIGKILL))
    set_death_signal(signal.SIGTERM)
    os.closerange(3, 1 << 16)  # the kernel's sockets are its own: EOF must reach their peers
    while True:
        try:
            _, status = os.waitpid(child, 0)
            break
        except ChildProcessError:
            os._exit(1)
        except InterruptedError:
            continue
    remove_scratch(scratch)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            import resource

            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # the kernel's crash, not a core of this
            if sig not in (signal.SIGKILL, signal.SIGSTOP):
                signal.signal(sig, signal.SIG_DFL)
            os.kill(os.getpid(), sig)
        except (OSError, ValueError, RuntimeError):
            pass
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status))


def _fresh_proc(report: dict) -> None:
    try:
        _call("mount", None, b"/", None, ctypes.c_ulong(MS_REC | MS_PRIVATE), None)
        _call("mount", b"proc", b"/proc", b"proc", ctypes.c_ulong(MS_NOSUID | MS_NODEV | MS_NOEXEC), None)
        report["namespaces"] += ", a /proc of its own"
    except OSError as exc:
        report["namespaces"] += f" (the host's /proc: mounting one was refused, {exc.strerror})"


def _mount(source: bytes | None, target: str, fstype: bytes | None, flags: int, data: bytes | None = None) -> None:
    _call("mount", source, os.fsencode(target), fstype, ctypes.c_ulong(flags), data)


def _own_root(policy: Confinement, scratch: str, report: dict) -> None:
    """A root of the kernel's own: a tmpfs that holds, at their usual paths, only what
    Landlock lets it use (the readable roots, its scratch directory, the policy's paths,
    the devices) as bind mounts, and a fresh /proc. Landlock governs opening files but not
    connecting to a Unix socket: on the host's filesystem, learner code running as the
    user could reach every socket of the user's (a tmux server, the session bus,
    ssh-agent, the warm server) and have it act outside the confinement. Here none exists."""
    root = os.path.join(scratch, ".root")
    try:
        if SYS_PIVOT_ROOT is None:
            raise OSError(0, "no pivot_root on this machine")
        os.mkdir(root, 0o755)
        _mount(b"tmpfs", root, b"tmpfs", MS_NOSUID | MS_NODEV, b"mode=0755")
        hidden = [os.path.realpath(p) for p in (*policy.hide, _tutor_package())]
        readable = _allowed(readable_roots(policy), hidden)
        binds = [(path, True) for path in readable if path != "/proc"]
        binds += [(path, False) for path in (scratch, *policy.write)]  # not recursive: the tmpfs is in scratch
        binds += [(path, False) for path in (*_DEVICES, *glob.glob("/dev/nvidia*"))]
        bound: list[str] = []
        for path, recursive in sorted(binds, key=lambda b: b[0].count("/")):
            real = os.path.realpath(path)
            if not os.path.exists(real) or (recursive and any(_beneath(real, b) for b in bound)):
                continue
            inside = root + real
            if os.path.isdir(real):
                os.makedirs(inside, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(inside), exist_ok=True)
                open(inside, "a").close()
            _mount(os.fsencode(real), inside, None, MS_BIND | (MS_REC if recursive else 0))
            bound.append(real)
        for path in readable_roots(policy):  # /lib -> usr/lib and the like, as on the host
            if os.path.islink(path) and not os.path.lexists(root + path):
                os.makedirs(os.path.dirname(root + path), exist_ok=True)
                os.symlink(os.readlink(path), root + path)
        for name, target in _DEVICE_LINKS:
            os.symlink(target, root + name)
        # Shared memory of its own (DataLoader workers' semaphores): what the host's /dev/shm
        # holds is not the kernel's, and what it leaves there would outlive it.
        os.makedirs(root + "/dev/shm", exist_ok=True)
        _mount(b"tmpfs", root + "/dev/shm", b"tmpfs", MS_NOSUID | MS_NODEV, b"mode=1777")
        os.makedirs(root + "/proc", exist_ok=True)
        _mount(b"proc", root + "/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        os.makedirs(root + "/tmp", exist_ok=True)
        old = root + "/.old"
        os.mkdir(old)
        _call("syscall", ctypes.c_long(SYS_PIVOT_ROOT), os.fsencode(root), os.fsencode(old))
        os.chdir("/")
        _call("umount2", b"/.old", ctypes.c_int(MNT_DETACH))
        os.rmdir("/.old")
        with contextlib.suppress(OSError):
            os.rmdir(root)  # the mount point, as the scratch directory shows it now
        report["namespaces"] += ", a root of its own (only what it may read and write)"
    except OSError as exc:
        report["namespaces"] += f" (the host's root: {exc.strerror or exc})"


_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
_DEVICE_LINKS = (
    ("/dev/fd", "/proc/self/fd"),
    ("/dev/stdin", "/proc/self/fd/0"),
    ("/dev/stdout", "/proc/self/fd/1"),
    ("/dev/stderr", "/proc/self/fd/2"),
)


def _set_limits(report: dict) -> None:
    import resource

    wanted = [(resource.RLIMIT_CORE, 0, "no core dumps"), (resource.RLIMIT_FSIZE, FILE_SIZE_LIMIT, "files up to 4 GiB")]
    wanted.append((resource.RLIMIT_NPROC, PROCESS_LIMIT, f"{PROCESS_LIMIT} processes"))
    if not glob.glob("/dev/nvidiactl"):  # CUDA's mappings would count against it
        try:
            memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
            wanted.append((resource.RLIMIT_DATA, memory, f"data up to {memory >> 30} GiB (the machine's memory)"))
        except (OSError, ValueError):
            pass
    said = []
    for which, value, words in wanted:
        _, hard = resource.getrlimit(which)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        try:
            resource.setrlimit(which, (value, value))
            said.append(words)
        except (OSError, ValueError):
            pass
    report["rlimits"] = ", ".join(said) or "none could be set"


def _reachable(uid: int, paths: list[str]) -> bool:
    """Can ``uid`` (as "other") walk to each of ``paths``?"""
    for path in paths:
        parts = Path(path).resolve().parts
        for i in range(1, len(parts) + 1):
            try:
                st = os.stat(os.path.join(*parts[:i]))
            except OSError:
                return False
            if st.st_uid != uid and not st.st_mode & 0o001:
                return False
    return True


def _capset(keep: int) -> None:
    """This process's capabilities: only ``keep`` (a bit mask of the first 32)."""
    if SYS_CAPSET is None:
        raise OSError(0, "no capset on this machine")
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (ctypes.c_uint32 * 6)(keep, keep, keep, 0, 0, 0)  # effective, permitted, inheritable x2
    _call("syscall", ctypes.c_long(SYS_CAPSET), ctypes.byref(header), ctypes.byref(data))


def _drop_user(report: dict, policy: Confinement) -> None:
    if os.geteuid() != 0:
        report["user"] = f"not started as root: stays uid {os.geteuid()}"
        try:
            _capset(0)  # whatever the user namespace gave is dropped
        except OSError:
            pass
        return
    uid, gid = unprivileged_ids()
    # Where this Python, or a directory the kernel was given (its working directory), lies
    # out of nobody's reach (under /root, in a directory of mode 0700), it keeps one
    # capability, reading past directory permissions; Landlock still decides what it may read.
    needed = [sys.base_prefix, sys.prefix, os.path.realpath(sys.executable), *policy.read, *policy.write]
    keep = 0 if _reachable(uid, needed) else 1 << CAP_DAC_READ_SEARCH
    try:
        for cap in range(CAP_LAST + 1):
            if not keep >> cap & 1:
                try:
                    _prctl(PR_CAPBSET_DROP, cap)
                except OSError:
                    break  # past the last capability this kernel knows
        if keep:
            _prctl(PR_SET_KEEPCAPS, 1)
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
        if keep:
            _capset(keep)
            _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_DAC_READ_SEARCH)  # kept across exec
    except (OSError, AttributeError) as exc:  # AttributeError: no setresuid (macOS)
        report["user"] = f"failed: {getattr(exc, 'strerror', None) or exc}"
        return
    report["user"] = f"{UNPRIVILEGED} (uid {uid})" + (
        ", keeping CAP_DAC_READ_SEARCH (this Python is under a directory nobody cannot enter)" if keep else ""
    )


# What is not protected when a layer is missing (doctor prints these).
UNPROTECTED = {
    "namespaces": "a process the kernel starts that leaves its process group (setsid) can outlive its verification",
    "landlock": "learner code can read and write every file the kernel's user can (the pack, the grade cache, results.json)",
    "user": "learner code runs as root",
    "root": "learner code can connect to the user's Unix sockets (a tmux server, the session bus, ssh-agent, "
    "the warm server) and have them act outside the confinement; files it leaves in /dev/shm outlive it",
}


def _missing(report: dict, policy: Confinement) -> list[str]:
    missing = []
    if report.get("namespaces", "").startswith("none"):
        missing.append(UNPROTECTED["namespaces"])
    if policy.filesystem and not report.get("landlock", "").startswith("ABI"):
        missing.append(UNPROTECTED["landlock"])
    if policy.filesystem and "a root of its own" not in report.get("namespaces", ""):
        missing.append(UNPROTECTED["root"])
    if policy.drop_user and os.geteuid() == 0:
        missing.append(UNPROTECTED["user"])
    return missing


def turned_off() -> set[str]:
    """The layers ``$PTFUND_TUTOR_NO_CONFINE`` leaves out (for a platform where one
    misbehaves; doctor then says what is not protected)."""
    names = {n.strip().lower() for n in os.environ.get(OFF_ENV, "").split(",") if n.strip()}
    return set(LAYERS) if "all" in names else names & set(LAYERS)


def kernel_environment(report: dict) -> dict[str, str]:
    """The variables a confined kernel runs with: its homes and caches in the scratch
    directory when nothing else is writable, and the report."""
    env = {REPORT_ENV: json.dumps(report), HOST_PID_ENV: str(report.get("pid", os.getpid()))}
    scratch = report.get("scratch")
    if scratch:
        for name in ("HOME", "TMPDIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME"):
            env[name] = scratch
        for name, sub in (("IPYTHONDIR", "ipython"), ("MPLCONFIGDIR", "matplotlib"), ("JUPYTER_CONFIG_DIR", "jupyter")):
            env[name] = os.path.join(scratch, sub)
        env["JUPYTER_DATA_DIR"] = env["JUPYTER_RUNTIME_DIR"] = os.path.join(scratch, "jupyter")
        # torch writes the cache it chose into its own environment (so compile workers share
        # it): a kernel started from such a process, or from a shell that set one, would be
        # given a directory outside its scratch, which it can neither create nor write, and
        # torch._dynamo's import fails on it (every meta-device op, every torch.compile).
        for name, sub in (("TORCHINDUCTOR_CACHE_DIR", "torchinductor"), ("TRITON_CACHE_DIR", "triton")):
            env[name] = os.path.join(scratch, sub)
    return env


def enter(policy: Confinement, scratch: str | None) -> dict:
    """Confine this (single-threaded) process; returns the report, in the confined child
    only (the parent waits for it and ends as it ended)."""
    report: dict = {"pid": os.getpid(), "scratch": scratch if policy.filesystem else None}
    off = turned_off()
    why_off = f"turned off by {OFF_ENV}"
    if "namespaces" in off:
        report["namespaces"] = f"none: {why_off}"
    elif _unshare(report):
        child = os.fork()
        if child:
            _wait_and_mirror(child, scratch)
        report["pid"] = int(os.readlink("/proc/self"))  # the host's /proc, still: the tutor's pid for it
        set_death_signal(signal.SIGKILL)  # the waiter died: so does the namespace
        _fresh_proc(report)
        if policy.filesystem and scratch is not None:
            _own_root(policy, scratch, report)
    if "rlimits" in off:
        report["rlimits"] = why_off
    elif policy.limits:
        _set_limits(report)
    else:
        report["rlimits"] = "not asked for"
    abi = landlock_abi() if _libc is not None else 0
    if not policy.filesystem:
        report["landlock"] = "not asked for"
    elif "landlock" in off:
        report["landlock"] = why_off
    elif scratch is None:
        report["landlock"] = "not applied: no scratch directory"
    elif abi == 0:
        report["landlock"] = "unavailable: this kernel has no Landlock (Linux 5.13 or later, enabled at boot)"
    else:
        try:
            _landlock(abi, _filesystem_rules(policy, scratch))
            report["landlock"] = (
                f"ABI {abi}: writes only {scratch}; reads only the Python installation and system directories"
                + ("; connects no TCP socket" if abi >= 4 else "")
            )
        except OSError as exc:
            report["landlock"] = f"failed: {exc.strerror or exc}"
    if "user" in off:
        report["user"] = f"not dropped: {why_off}"
    elif policy.drop_user:
        _drop_user(report, policy)
    else:
        report["user"] = "not dropped: not asked for"
    set_death_signal(signal.SIGKILL)  # a change of user clears it
    report["unprotected"] = _missing(report, policy)
    os.environ.update(kernel_environment(report))
    if scratch and policy.filesystem:
        tempfile.tempdir = scratch  # cached from before: the old one is not writable now
        os.chdir(scratch)
    return report


def launcher_argv(policy: Confinement, scratch: str | None) -> list[str]:
    """The start of a new kernel process's command line that confines it (``main``)."""
    return [sys.executable, "-m", "tutor.engine.confine", json.dumps(policy.to_json()), scratch or "", "--"]


def main(argv: list[str]) -> None:
    """``python -m tutor.engine.confine POLICY SCRATCH -- COMMAND...``: confine, then exec
    COMMAND. Its connection file (after ``-f``) is copied into the scratch directory: the
    tutor wrote it for itself only, where the kernel's user may not reach."""
    policy, scratch = Confinement.from_json(json.loads(argv[0])), argv[1] or None
    command = argv[argv.index("--") + 1 :]
    if scratch and "-f" in command[:-1]:
        at = command.index("-f") + 1
        copy = os.path.join(scratch, "kernel.json")
        shutil.copyfile(command[at], copy)
        if policy.drop_user and os.geteuid() == 0:
            os.chown(copy, *unprivileged_ids())
        command[at] = copy
    enter(policy, scratch)
    os.execv(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
