"""Execute the book's lectures in forks of one warm interpreter, into myst-nb's jupyter-cache.

A Jupyter kernel per lecture starts a fresh Python, which then imports numpy, sympy, scipy,
matplotlib and the package and loads the derived records: about 2.5 s of CPU before the first
line of the lecture runs, eleven times.  Here one process (the *zygote*) does that once; each
lecture then runs in a fork of it, in a clean copy of that state (its own namespace, warning
registry, matplotlib state and random state), in an IPython shell that records what a kernel
would send to the notebook: ``stream`` (stdout, stderr, including what C code writes to the
file descriptors), ``display_data`` (figures from the inline backend, ``display(...)``) and
``execute_result`` outputs, with the execution count.  The executed notebooks are stored in
the jupyter-cache that myst-nb reads, exactly as jupyter-cache's own executors store them.

A lecture that fails here (an error in a cell, a timeout, a crash) is not stored: myst-nb then
executes it in a real kernel while reading it and the build fails with that kernel's traceback.
So this module is a speed-up only; the kernel stays the reference.
"""

from __future__ import annotations

import base64
import io
import os
import re
import select
import signal
import sys
import tempfile
import time
from pathlib import Path

#: what the zygote imports once (each lecture still imports what it uses; these are then cached
#: in sys.modules).  torch is left out: a fork must not inherit its thread pools.
PRELOAD = ("numpy", "sympy", "scipy.stats", "scipy.optimize", "scipy.integrate", "matplotlib.pyplot",
           "IPython.display", "grpo_theory", "grpo_theory.model", "grpo_theory.simulation",
           "grpo_theory.theory.drift", "grpo_theory.theory.fixed_points", "grpo_theory.theory.discrete",
           "grpo_theory.theory.noise", "grpo_theory.theory.oscillator", "grpo_theory.theory.stability",
           "grpo_theory.theory.collapse", "grpo_theory.theory.adam", "grpo_theory.theory.atlas",
           "grpo_theory.runs.logs", "grpo_theory.runs.curves", "grpo_theory.runs.compare")

#: the language_info a Python kernel reports (myst-nb takes the code cells' lexer from it)
LANGUAGE_INFO = {
    "name": "python",
    "version": ".".join(map(str, sys.version_info[:3])),
    "mimetype": "text/x-python",
    "codemirror_mode": {"name": "ipython", "version": 3},
    "pygments_lexer": "ipython3",
    "nbconvert_exporter": "python",
    "file_extension": ".py",
}

_OUTPUTS: list = []          # the outputs of the cell being executed (one list per fork)


def _clean(data: dict) -> dict:
    """A display bundle as JSON: bytes (PNG) base64-encoded, as a kernel's session does."""
    return {k: base64.b64encode(v).decode("ascii") if isinstance(v, bytes) else v for k, v in data.items()}


class _Stream(io.TextIOBase):
    """sys.stdout / sys.stderr of a lecture: text becomes ``stream`` outputs (consecutive writes
    to the same stream merged, as a kernel's frontend merges them)."""

    def __init__(self, name: str):
        self.name = name

    def writable(self):
        return True

    def write(self, text):
        if text:
            _stream_output(self.name, text)
        return len(text)


def _stream_output(name: str, text: str) -> None:
    import nbformat

    last = _OUTPUTS[-1] if _OUTPUTS else None
    if last is not None and last.get("output_type") == "stream" and last["name"] == name:
        last["text"] += text
    else:
        _OUTPUTS.append(nbformat.v4.new_output("stream", name=name, text=text))


def _shell():
    """An IPython shell whose display hook and publisher record outputs (as ipykernel's do),
    with matplotlib's inline backend, as in a kernel."""
    from IPython.core.displayhook import DisplayHook
    from IPython.core.displaypub import DisplayPublisher
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config
    import nbformat

    class Publisher(DisplayPublisher):
        def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kwargs):
            _OUTPUTS.append(nbformat.v4.new_output("display_data", data=_clean(data), metadata=metadata or {}))

        def clear_output(self, wait=False):
            _OUTPUTS.clear()

    class Hook(DisplayHook):
        def start_displayhook(self):
            pass

        def write_output_prompt(self):
            pass

        def write_format_data(self, format_dict, md_dict=None):
            _OUTPUTS.append(nbformat.v4.new_output("execute_result", data=_clean(format_dict),
                                                   metadata=md_dict or {}, execution_count=self.prompt_count))

        def finish_displayhook(self):
            pass

    class RecordingShell(InteractiveShell):
        def _showtraceback(self, etype, evalue, stb):
            _OUTPUTS.append(nbformat.v4.new_output("error", ename=etype.__name__, evalue=str(evalue),
                                                   traceback=list(stb)))

    config = Config()
    config.HistoryManager.enabled = False
    config.InteractiveShell.colors = "NoColor"
    try:   # cells compiled as ipykernel compiles them (tracebacks and warnings name the same files)
        from ipykernel.compiler import XCachingCompiler as compiler
    except ImportError:
        from IPython.core.compilerop import CachingCompiler as compiler
    shell = RecordingShell.instance(config=config, displayhook_class=Hook, display_pub_class=Publisher,
                                    compiler_class=compiler)
    return shell


def _zygote_setup(code: str) -> None:
    """The shell, then what the lectures to run import (of :data:`PRELOAD`, the modules whose
    top-level package their ``code`` names) and, if they use the package, its derived records."""
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"   # what ipykernel sets
    os.environ.setdefault("IPYTHONDIR", tempfile.mkdtemp(prefix="grpo-book-ipython-"))
    _shell()
    import importlib

    for name in PRELOAD:
        if re.search(rf"\b{name.split('.')[0]}\b", code):
            try:
                importlib.import_module(name)
            except ImportError:
                pass
    if "grpo_theory" in code:
        try:   # the derived records into memory (the lectures then never read the disk cache)
            from grpo_theory.theory.derived import all_names, get

            for name in all_names():
                get(name)
        except Exception:   # noqa: BLE001 - a failing derivation fails in the lecture that uses it
            pass


def _tail(fd: int, offset: int) -> tuple[str, int]:
    os.lseek(fd, offset, os.SEEK_SET)
    chunks = []
    while True:
        b = os.read(fd, 65536)
        if not b:
            break
        chunks.append(b)
    data = b"".join(chunks)
    return data.decode("utf-8", "replace"), offset + len(data)


def _run_lecture(nb, workdir: Path, out_path: Path) -> int:
    """In a fork: execute ``nb``'s code cells in ``workdir`` and write the executed notebook to
    ``out_path``; 0 when every cell ran (a cell tagged ``raises-exception`` may raise)."""
    import nbformat
    from IPython import get_ipython

    shell = get_ipython()
    os.chdir(workdir)
    sys.path.insert(0, str(workdir))
    # what C code writes to the file descriptors becomes stream output too (as ipykernel does)
    fds = {}
    for fd, name in ((1, "stdout"), (2, "stderr")):
        f = tempfile.TemporaryFile(dir=workdir)
        os.dup2(f.fileno(), fd)
        fds[name] = [f.fileno(), 0, f]
    sys.stdout, sys.stderr = _Stream("stdout"), _Stream("stderr")
    ok = True
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        tags = cell.metadata.get("tags", [])
        if "skip-execution" in tags:
            continue
        _OUTPUTS.clear()
        result = shell.run_cell(cell.source, store_history=True)
        for name, rec in fds.items():
            text, rec[1] = _tail(rec[0], rec[1])
            if text:
                _stream_output(name, text)
        cell.outputs = list(_OUTPUTS)
        cell.execution_count = shell.execution_count - 1
        if not result.success and "raises-exception" not in tags:
            ok = False
            break
    if not ok:
        return 1
    nb.metadata["language_info"] = dict(LANGUAGE_INFO)
    out_path.write_text(nbformat.writes(nb), encoding="utf-8")
    return 0


def _zygote(jobs: list, parallel: int, timeout: float, result_fd: int) -> None:
    """Fork one child per job, ``parallel`` at a time; report ``pk seconds cpu_seconds status``
    lines (wall and CPU time of each lecture's fork; pk 0 is the zygote's own set-up).  A fork
    that runs longer than ``timeout`` seconds is killed (and reported as failed)."""
    report = os.fdopen(result_fd, "w")
    start, cpu0 = time.monotonic(), time.process_time()
    _zygote_setup("\n".join(c.source for _, nb, _, _ in jobs for c in nb.cells if c.cell_type == "code"))
    report.write(f"0 {time.monotonic() - start:.3f} {time.process_time() - cpu0:.3f} ok\n")
    report.flush()
    pending, running = list(jobs), {}
    while pending or running:
        while pending and len(running) < parallel:
            pk, nb, workdir, out_path = pending.pop(0)
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    code = _run_lecture(nb, workdir, out_path)
                except BaseException:   # noqa: BLE001 - reported as a failure, the kernel reruns it
                    code = 1
                finally:
                    os._exit(code)
            running[pid] = (pk, time.monotonic())
        pid, status, usage = os.wait4(-1, os.WNOHANG)
        if pid == 0:
            now = time.monotonic()
            for child, (_, started) in running.items():
                if now - started > timeout:
                    os.kill(child, signal.SIGKILL)
            time.sleep(0.02)
            continue
        if pid in running:
            pk, started = running.pop(pid)
            ok = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
            cpu = usage.ru_utime + usage.ru_stime
            report.write(f"{pk} {time.monotonic() - started:.3f} {cpu:.3f} {'ok' if ok else 'failed'}\n")
            report.flush()
    report.close()


def _expected_cost(nb) -> tuple:
    """A guess of a lecture's cost known before running it, to start the longest first (so that
    the parallel forks finish together): a lecture that trains networks first, then by length
    of code."""
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    return ("deepnet" in code or "torch" in code, len(code))


def execute(cache, records, *, parallel: int = 2, timeout: float = 300.0) -> dict:
    """Execute the project notebooks ``records`` of a jupyter-cache ``cache`` that have no cached
    execution, in forks of a warm zygote, ``parallel`` at a time; store each executed notebook
    in the cache.  Returns ``{"setup": (wall s, CPU s), "lectures": {uri: (wall s, CPU s)}}``
    (the lectures stored: a failed one is missing), or ``{}`` when nothing was to be executed or
    forking is not available (then myst-nb executes every lecture in a kernel)."""
    if not hasattr(os, "fork"):
        return {}
    from jupyter_cache.base import CacheBundleIn

    todo = []
    for record in records:
        nb = cache.get_project_notebook(record.pk).nb     # read once (each read looks up the reader)
        try:
            cache.match_cache_notebook(nb)                # executed before with this code: nothing to do
        except KeyError:
            todo.append((record, nb))
    if not todo:
        return {}
    with tempfile.TemporaryDirectory(prefix="grpo-book-exec-") as tmp:
        jobs = []
        for record, nb in sorted(todo, key=lambda r_nb: _expected_cost(r_nb[1]), reverse=True):
            workdir = Path(tmp) / f"run{record.pk}"
            workdir.mkdir()
            jobs.append((record.pk, nb, workdir, Path(tmp) / f"{record.pk}.ipynb"))
        read_fd, write_fd = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            code = 0
            try:
                os.setpgid(0, 0)          # its own process group: a timeout ends it with its forks
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, 1)
                os.dup2(devnull, 2)
                _zygote(jobs, parallel, timeout + 30, write_fd)
            except BaseException:   # noqa: BLE001
                code = 1
            finally:
                os._exit(code)
        os.close(write_fd)
        lines = []
        with os.fdopen(read_fd) as fh:
            while True:
                ready, _, _ = select.select([fh], [], [], timeout * len(jobs) + 60)
                if not ready:
                    os.killpg(pid, signal.SIGKILL)
                    break
                line = fh.readline()
                if not line:
                    break
                lines.append(line.split())
        os.waitpid(pid, 0)
        import nbformat

        setup, stored = None, {}
        by_pk = {r.pk: r for r, _ in todo}
        for pk, seconds, cpu, status in lines:
            if int(pk) == 0:
                setup = (float(seconds), float(cpu))
                continue
            record = by_pk[int(pk)]
            path = Path(tmp) / f"{pk}.ipynb"
            if status != "ok" or not path.exists():
                continue
            nb = nbformat.reads(path.read_text(encoding="utf-8"), as_version=4)
            cache.cache_notebook_bundle(CacheBundleIn(nb, record.uri, data={"execution_seconds": float(seconds),
                                                                     "cpu_seconds": float(cpu)}),
                                        check_validity=False, overwrite=True)
            stored[record.uri] = (float(seconds), float(cpu))
        return {"setup": setup, "lectures": stored}
