"""The fork server process: one warm parent from which every fresh kernel is forked.

Run by the tutor as ``python -c "...; from tutor.engine.forkserver import main; main()" FD``
(see forkclient.py), never imported by the UI or CLI process: it imports torch.

The parent imports ipykernel, torch, numpy and the check library and warms them with small
operations only, so that at fork time it has one thread, no zmq context, no CUDA or MPS
state and torch's intra-op thread pool not started: everything a child needs is already in
memory, and a child may start threads, GPUs and sockets of its own safely. One import
waits: torch._dynamo (about a second), which the first meta-device operation would pull in
(ptfund_checks.lazydynamo): the first kernels, a cold check's, are forked without it, and
the parent imports it once idle, before the later ones.

Each child is a complete ipykernel in its own process group; it dies with the server
(PR_SET_PDEATHSIG on Linux, a watcher thread elsewhere), and the server dies with the tutor
(EOF on the control socket, or its own death signal). A child is forked *before* it is
asked for: the *standby* builds its kernel (IPython shell, sockets bound to ports of its own
choosing) and waits; a request hands it the environment, working directory and log of the
kernel wanted, and it answers with the ports and key it listens on. The next standby is
forked once the last one has answered, so a request finds one ready.

A request may ask for a confinement (confine.py: its policy as JSON): a standby is
confined as soon as it is forked, while it has one thread, so it is built for the policy
of the request before; a request with another policy gets a standby forked for it.

Protocol on the control socket, one JSON object per line:
  server -> tutor   {"ready": true, "pid": ...} | {"ready": false, "error": "..."}
  tutor -> server   {"id": N, "connection_file": ..., "env": {...}, "cwd": ..., "log": ...,
                     "confine": {...} | null}
  server -> tutor   {"id": N, "pid": ..., "connection": {...}, "scratch": ..., "confinement": {...}}
                    | {"id": N, "error": "..."}
  server -> tutor   {"exit": PID, "status": S}  (S as subprocess's returncode: -N for signal N)
On a standby's socket: the request goes to it, with the kernel's log as a descriptor the
server opened (a confined kernel may not open it); {"connection": {...}, "confinement":
{...}} or {"error": "..."} comes back (the connection file's fields: ports, ip,
transport, key, signature_scheme). A kernel's scratch directory is removed when it exits.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import selectors
import signal
import socket
import sys
import time

from tutor.engine import codecache, confine
from tutor.engine.confine import set_death_signal as _set_death_signal

# The kernel's boot wraps os._exit to flush the learner's output first (device.py); the
# kernel's own end, after its output is flushed, need not wait for that.
_real_exit = os._exit

ENDING_BOUND = 2.0  # seconds a kernel's exit waits for the rest of its process group
# The first kernels are forked before the server imports torch._dynamo (lazydynamo.py): a
# cold check's two and the spares forked while it runs, a second sooner. The server imports
# it once it has been idle a moment, or before forking more than that many; a kernel forked
# before imports it itself only if its code needs it (an optimizer's step, torch.compile).
LEAN_KERNELS = 6
LATE_IMPORT_IDLE = 0.5  # seconds


def _thread_count() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        import threading

        return threading.active_count()


# What a kernel's start-up imports (measured: the modules a forked IPKernelApp.initialize()
# and a first execute load), so that children find them already in memory.
KERNEL_MODULES = (
    "ipykernel.kernelapp",
    "ipykernel.ipkernel",
    "ipykernel.zmqshell",
    "ipykernel.debugger",  # without debugpy (warm() blocks it): ipykernel imports it all the same
    "IPython.core.completer",
    "IPython.core.history",
    "IPython.core.completerlib",
    "IPython.core.debugger",
    "IPython.core.oinspect",
    "IPython.extensions.storemagic",
    "IPython.utils.wildcard",
    "sqlite3",
    "pdb",
    "psutil",
    "tornado.gen",
    "tornado.locks",
    "tornado.queues",
    "tornado.platform.asyncio",
    "http.server",
    "xmlrpc.server",
    "faulthandler",
    "mimetypes",
    "pydoc",
)

# Before torch 2.x (some release) every process started from this seed; newer ones draw one.
TORCH_FIXED_SEED = 67280421310721
_torch_seeds_randomly = True

# numpy's OpenBLAS starts its worker threads when it loads; it stops them itself before a
# fork (pthread_atfork) and starts them again in the child when needed, so those are the
# only threads allowed: the count after importing numpy is the most a fork may see.
_allowed_threads = 1


def warm() -> None:
    """Import and warm what every kernel needs, touching neither threads nor GPUs. The
    cyclic garbage collector is off meanwhile: the imports allocate millions of objects and
    almost no garbage, and its passes over the growing heap cost a sixth of the warm-up.
    What was loaded is then frozen (never walked again) and the collector is back on."""
    gc.disable()
    try:
        _warm()
    finally:
        gc.freeze()
        gc.enable()


def _warm() -> None:
    global _allowed_threads
    import numpy  # noqa: F401

    _allowed_threads = _thread_count()
    # No kernel of the tutor is debugged through Jupyter's debugger: without debugpy (and
    # pydevd, some 120 modules) ipykernel builds kernels that have none, 60-80 ms sooner.
    sys.modules.setdefault("debugpy", None)  # type: ignore[arg-type]  # None: "cannot be imported"
    for name in KERNEL_MODULES:
        importlib.import_module(name)
    import torch

    from tutor.engine.inject import checks_bootstrap_source

    # A fresh process's RNG state: the warm-up below must not leave children a used one.
    rng = torch.get_rng_state()
    global _torch_seeds_randomly
    _torch_seeds_randomly = torch.initial_seed() != TORCH_FIXED_SEED
    exec(compile(checks_bootstrap_source(), "<ptfund_checks bootstrap>", "exec"), {})
    finder = next((f for f in sys.meta_path if getattr(f, "ptfund_package", None) == "ptfund_checks"), None)
    codecache.load_into(finder)  # compiled by an earlier fork server of this library, if any
    import ptfund_checks

    from tutor.engine.device import install_boot

    install_boot()

    # CPU and meta only: a GPU touched here would be unusable in every child. torch._dynamo
    # waits (lazydynamo.py): the first kernels, a cold check's, are forked without it.
    lazy = importlib.import_module("ptfund_checks.lazydynamo")
    lazy.defer()
    ptfund_checks.warm_up(None)  # compiles every module of the library (sealed.compile_all)
    lazy.defer()  # the wrappers of what the warm-up imported
    codecache.save_from(finder)
    torch.set_rng_state(rng)


def import_dynamo_late() -> None:
    """Import torch._dynamo in the fork server, once its first kernels are forked: every
    optimizer step and torch.compile imports it, which no later kernel should pay again."""
    if "torch._dynamo" in sys.modules or "torch" not in sys.modules:
        return
    try:
        importlib.import_module("torch._dynamo")
    except Exception:  # each kernel then imports it if it needs it, as torch would
        pass


def _fork_problem() -> str | None:
    """Why forking this process now would be unsafe, or None."""
    import threading

    threads = _thread_count()
    if threads > _allowed_threads or threading.active_count() != 1:
        return f"the fork server has {threads} threads after warming up"
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return "CUDA was initialised in the fork server"
    return None


class Standby:
    """A forked child building its kernel, or waiting with it built, for a request."""

    def __init__(self, pid: int, sock: socket.socket, policy: dict | None, scratch: str | None):
        self.pid = pid
        self.sock = sock
        self.policy = policy  # the confinement it entered (JSON), None for none
        self.scratch = scratch
        self.request: dict | None = None  # the request it serves, once handed one
        self.buffer = b""
        self.status: int | None = None  # how it ended, when that was seen before its answer
        self.lean = "torch._dynamo" not in sys.modules  # forked before the server imported it


class Server:
    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.children: set[int] = set()  # kernels handed out: their exits are reported
        self.standby: Standby | None = None  # the next request's kernel
        self.claimed: dict[int, Standby] = {}  # socket fd -> a standby handed a request
        self.selector = selectors.DefaultSelector()
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        self.buffer = b""
        self.problem = ""  # why the last standby could not be forked
        self.policy: dict | None = None  # the confinement the next standby enters
        self.scratches: dict[int, str] = {}  # pid -> its scratch directory, removed at its exit
        self.draining: dict[int, str] = {}  # process group -> scratch, once its leader has exited
        # leader -> (exit status, deadline): a confined kernel's waiter leads its group and may
        # be reaped while the kernel itself is still ending; its exit is reported once the
        # group is empty (or after a bound: something left in the group must not hide an exit).
        self.ending: dict[int, tuple[int, float]] = {}
        # How many more kernels may be forked before torch._dynamo is imported here.
        self.lean = LEAN_KERNELS if "torch._dynamo" not in sys.modules else 0
        self.active = time.monotonic()  # when a request or a standby was last heard

    def send(self, obj: dict) -> None:
        try:
            self.sock.sendall(json.dumps(obj).encode() + b"\n")
        except OSError:
            self.stop()

    def serve(self) -> None:
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # only to wake the selector
        signal.signal(signal.SIGTERM, lambda *_: self.stop())
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is the tutor's to handle
        self.selector.register(self.sock, selectors.EVENT_READ)
        self.selector.register(self.wake_r, selectors.EVENT_READ)
        self.send({"ready": True, "pid": os.getpid()})
        self.standby = self.fork_standby()
        while True:
            timeout = 0.05 if self.ending else LATE_IMPORT_IDLE if self.lean else None
            events = self.selector.select(timeout=timeout)
            if events:
                self.active = time.monotonic()
            elif self.lean and not self.claimed and time.monotonic() - self.active >= LATE_IMPORT_IDLE:
                self.end_lean()
            for key, _ in events:
                if key.fd == self.wake_r:
                    try:
                        while os.read(self.wake_r, 512):
                            pass
                    except BlockingIOError:
                        pass
                    self.reap()
                elif key.fd in self.claimed:
                    self.hear_standby(self.claimed[key.fd])
                else:
                    data = self.sock.recv(1 << 16)
                    if not data:
                        self.stop()  # the tutor is gone
                    self.buffer += data
                    while b"\n" in self.buffer:
                        line, self.buffer = self.buffer.split(b"\n", 1)
                        self.handle(json.loads(line))
            self.report_ended()

    def handle(self, request: dict) -> None:
        """Hand the request to the standby (forking one if there is none)."""
        standby, self.standby = self.standby, None
        wanted = request.get("confine")
        if standby is not None and standby.policy != wanted:
            self.kill(standby.pid)  # built for another confinement; reaped as any other
            standby.sock.close()
            standby = None
        self.policy = wanted
        if standby is None:
            standby = self.fork_standby()
            if standby is None:
                return self.send({"id": request["id"], "error": self.problem})
        standby.request = request
        self.claimed[standby.sock.fileno()] = standby
        self.selector.register(standby.sock, selectors.EVENT_READ)
        try:
            log = os.open(request["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600) if request.get("log") else None
        except OSError as exc:
            request["log_error"] = f"{type(exc).__name__}: {exc}"
            log = None
        try:
            socket.send_fds(standby.sock, [json.dumps(request).encode() + b"\n"], [] if log is None else [log])
        except OSError:
            self.hear_standby(standby)  # it died: its EOF is read (and reported) at once
        finally:
            if log is not None:
                os.close(log)

    def hear_standby(self, standby: Standby) -> None:
        """The claimed standby answered (or died): tell the tutor, then fork the next one."""
        try:
            data = standby.sock.recv(1 << 16)
        except OSError:
            data = b""
        standby.buffer += data
        if data and b"\n" not in standby.buffer:
            return
        self.selector.unregister(standby.sock)
        del self.claimed[standby.sock.fileno()]
        standby.sock.close()
        request = standby.request or {}
        answer = json.loads(standby.buffer.split(b"\n", 1)[0]) if b"\n" in standby.buffer else {}
        if "connection" in answer:
            reply = {"id": request.get("id"), "pid": standby.pid, "connection": answer["connection"]}
            reply.update(scratch=standby.scratch, confinement=answer.get("confinement"))
            self.send(reply)
            if standby.status is None:
                self.children.add(standby.pid)
            else:  # it answered, then ended before its answer was read: say both, in order
                self.send({"exit": standby.pid, "status": standby.status})
        else:
            self.kill(standby.pid)
            error = answer.get("error") or "it exited while starting"
            self.send({"id": request.get("id"), "error": f"the forked kernel could not start: {error}"})
        if self.standby is None:
            self.standby = self.fork_standby()

    def end_lean(self) -> None:
        """Import torch._dynamo here, and replace a standby forked without it."""
        self.lean = 0
        import_dynamo_late()
        standby = self.standby
        if standby is not None and standby.lean and "torch._dynamo" in sys.modules:
            self.kill(standby.pid)  # reaped as any other
            standby.sock.close()
            self.standby = self.fork_standby()

    def fork_standby(self) -> Standby | None:
        if self.lean:
            self.lean -= 1
        else:
            import_dynamo_late()
        problem = _fork_problem()
        if problem is not None:
            self.problem = problem
            return None
        sys.stdout.flush()
        sys.stderr.flush()
        policy = self.policy
        try:
            scratch = confine.make_scratch(confine.Confinement.from_json(policy)) if policy is not None else None
        except OSError as exc:
            self.problem = f"no scratch directory for a confined kernel ({exc})"
            return None
        ours, theirs = socket.socketpair()
        # The parent's objects stay out of the children's collections: a collection would
        # walk (and, by touching, copy) the whole inherited heap: 0.7 s per gc.collect().
        gc.freeze()
        pid = os.fork()
        if pid == 0:
            ours.close()
            self.become_kernel(theirs, policy, scratch)  # never returns
        theirs.close()
        if scratch is not None:
            self.scratches[pid] = scratch
        try:
            os.setpgid(pid, pid)  # also done by the child: whichever runs first
        except OSError:
            pass
        return Standby(pid, ours, policy, scratch)

    def reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                pid = 0
            if pid == 0:
                self.remove_scratches()
                return
            if pid in self.scratches:
                self.draining[pid] = self.scratches.pop(pid)
            if self.standby is not None and self.standby.pid == pid:
                self.standby.sock.close()
                self.standby = None  # died before it was needed; the next request forks anew
            if pid in self.children:
                self.children.discard(pid)
                self.ending[pid] = (os.waitstatus_to_exitcode(status), time.monotonic() + ENDING_BOUND)
            for claimed in self.claimed.values():
                if claimed.pid == pid:
                    claimed.status = os.waitstatus_to_exitcode(status)

    def report_ended(self) -> None:
        """Report each kernel whose process group is empty (or whose bound has passed) as exited."""
        for pid, (status, deadline) in list(self.ending.items()):
            try:
                os.killpg(pid, 0)
                alive = True
            except ProcessLookupError:
                alive = False
            except PermissionError:
                alive = True  # someone is there (another user's process): wait for the bound
            if alive and time.monotonic() < deadline:
                continue
            del self.ending[pid]
            self.send({"exit": pid, "status": status})

    def remove_scratches(self) -> None:
        """Remove the scratch directory of each kernel whose process group is empty: its
        waiter may have been killed with the kernel still ending (an orphan, reaped here:
        the server is their subreaper), and only then is nothing left that could write."""
        for pgid, scratch in list(self.draining.items()):
            try:
                os.killpg(pgid, 0)
                continue
            except ProcessLookupError:
                pass
            except PermissionError:
                continue
            confine.remove_scratch(scratch)
            del self.draining[pgid]

    @staticmethod
    def kill(pid: int) -> None:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def stop(self) -> None:
        pids = set(self.children) | {s.pid for s in self.claimed.values()}
        if self.standby is not None:
            pids.add(self.standby.pid)
        for pid in pids:
            self.kill(pid)
        self.draining.update(self.scratches)
        deadline = time.monotonic() + 2
        while self.draining and time.monotonic() < deadline:
            self.reap()
            time.sleep(0.01)
        os._exit(0)

    # ---------------------------------------------------------------- in the child

    def become_kernel(self, sock: socket.socket, policy: dict | None, scratch: str | None) -> None:
        code = 1
        try:
            server_pid = os.getppid()
            try:
                os.setpgid(0, 0)  # signals for this kernel reach its own subprocesses too
            except OSError:
                pass
            if _set_death_signal(signal.SIGKILL) and os.getppid() != server_pid:
                os._exit(1)  # the server died between fork and prctl
            # Nothing of the server survives in the kernel: its sockets, pipes and handlers.
            signal.set_wakeup_fd(-1)
            self.selector.close()
            self.sock.close()
            for standby in [self.standby, *self.claimed.values()]:
                if standby is not None:
                    standby.sock.close()
            os.close(self.wake_r)
            os.close(self.wake_w)
            for sig in (signal.SIGCHLD, signal.SIGTERM):
                signal.signal(sig, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            report = None
            if policy is not None:  # from here on, the only process left is the confined kernel
                report = confine.enter(confine.Confinement.from_json(policy), scratch)
            _redirect_to_null()
            if not sys.platform.startswith("linux"):
                _watch_parent(server_pid)
            _seed_like_a_fresh_process()
            code = _run_kernel(sock, report)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            try:
                import atexit

                atexit._run_exitfuncs()
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                _real_exit(code)


def _seed_like_a_fresh_process() -> None:
    """Random generators start as in a new process: from the OS's entropy where torch and
    numpy seed that way (Python's random reseeds itself after a fork), else torch's fixed
    seed, which the parent kept unused. Only the CPU generator: the parent never started a
    GPU, so the child's GPU generators start as a new process's do (``torch.seed()`` would
    also queue a lazy GPU seeding, recording a stack trace to do so)."""
    import numpy
    import torch

    numpy.random.seed()
    if _torch_seeds_randomly:
        torch.default_generator.seed()


def _redirect_to_null() -> None:
    """stdin, stdout and stderr (the C level too) from and to /dev/null: a standby's own
    start-up chatter is nobody's (a failure is answered to the server)."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)


def _redirect_kernel_output(out: int | None) -> None:
    """Send what reaches a started kernel's stdout and stderr descriptors to ``out`` (its
    log, opened by the server).
    ipykernel captures descriptors 1 and 2 through a pipe and echoes what it reads to a
    copy of the descriptors it found (``_original_stdstream_copy``), so that copy is the
    one pointed at the log; where it captured nothing, 1 and 2 themselves are."""
    if out is None:
        return
    try:
        for stream, fd in ((sys.stdout, 1), (sys.stderr, 2)):
            copy = getattr(stream, "_original_stdstream_copy", None)
            os.dup2(out, copy if isinstance(copy, int) else fd)
    finally:
        os.close(out)


def _watch_parent(server_pid: int) -> None:
    """Without PR_SET_PDEATHSIG: a thread that ends the kernel once the server is gone."""
    import threading
    import time

    def watch() -> None:
        while os.getppid() == server_pid:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="ptfund-server-watch", daemon=True).start()


def _run_kernel(sock: socket.socket, confinement: dict | None) -> int:
    """Build the kernel on ports of its own, wait for the request, answer with the
    connection (and the ``confinement`` it entered), then serve as that kernel."""
    import tempfile

    from ipykernel.kernelapp import IPKernelApp

    before = dict(os.environ)
    try:
        folder = tempfile.mkdtemp(prefix="ptfund-standby-")
        own_file = os.path.join(folder, "kernel.json")  # absent: ipykernel picks the ports
        sys.argv = [sys.executable, "-f", own_file]
        app = IPKernelApp.instance()
        # History lives in memory: parallel kernels would otherwise queue on one SQLite file,
        # and nothing reads a fresh kernel's history back.
        app.initialize(["-f", own_file, "--HistoryManager.enabled=False"])
        with open(own_file) as f:
            connection = json.load(f)
        os.unlink(own_file)
        os.rmdir(folder)
    except BaseException as exc:
        _answer(sock, {"error": f"{type(exc).__name__}: {exc}"})
        raise
    request, log = _read_request(sock)
    if request is None:
        return 0  # the server is gone, or stopped this standby
    try:
        # The environment asked for, plus what ipykernel set in its own (MPLBACKEND, ...).
        own = {k: v for k, v in os.environ.items() if before.get(k) != v}
        env = request.get("env")
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
            os.environ.update(own)
            if confinement is not None:  # its homes in the scratch directory, and the report
                os.environ.update(confine.kernel_environment(confinement))
        if request.get("log_error"):
            raise OSError(request["log_error"])
        if request.get("cwd"):
            os.chdir(request["cwd"])
        _redirect_kernel_output(log)
    except Exception as exc:  # a working directory that is gone, a log that cannot be opened
        _answer(sock, {"error": f"{type(exc).__name__}: {exc}"})
        return 1
    app.connection_file = request["connection_file"]  # where the tutor writes this connection
    _answer(
        sock, {"connection": {k: v for k, v in connection.items() if k != "kernel_name"}, "confinement": confinement}
    )
    sock.close()
    app.start()
    return 0


def _answer(sock: socket.socket, obj: dict) -> None:
    try:
        sock.sendall(json.dumps(obj).encode() + b"\n")
    except OSError:
        pass


def _read_request(sock: socket.socket) -> tuple[dict | None, int | None]:
    """The request, and the log descriptor that came with it."""
    buffer = b""
    fds: list[int] = []
    while b"\n" not in buffer:
        data, received, _, _ = socket.recv_fds(sock, 1 << 16, 1)
        fds += received
        if not data:
            return None, None
        buffer += data
    return json.loads(buffer.split(b"\n", 1)[0]), (fds[0] if fds else None)


def main() -> None:
    fd = int(sys.argv[1])
    sock = socket.socket(fileno=fd)
    sock.setblocking(True)
    tutor_pid = os.getppid()
    if _set_death_signal(signal.SIGTERM) and os.getppid() != tutor_pid:
        os._exit(0)
    confine.become_subreaper()  # a kernel whose waiter was killed comes back here to be reaped
    # The kernel's cwd is not where the tutor was started; neither is its import path.
    if sys.path and sys.path[0] in ("", "."):
        del sys.path[0]
    try:
        warm()
        problem = _fork_problem()
    except BaseException as exc:  # reported to the tutor, which falls back to spawning
        problem = f"the fork server could not warm up ({type(exc).__name__}: {exc})"
    if problem is not None:
        sock.sendall(json.dumps({"ready": False, "error": problem}).encode() + b"\n")
        os._exit(1)
    Server(sock).serve()


if __name__ == "__main__":
    main()
