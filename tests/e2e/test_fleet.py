"""Continuous profiles (`sonde attach PID --period S`, src/fleet/): one
profile per period to a rotated directory and to a Pyroscope-compatible
/ingest. A receiver written for the tests listens on loopback and decodes
every payload (the multipart form, gzip, then the pprof protobuf with a
small parser below, or the JSON report before the registry has pprof). The
directory of periods (--period-dir) is the ground truth of which periods
there were. Runs once (VERSIONS): the sampler is the attach reader's, tested on
every interpreter elsewhere; this is the transport."""
import email.parser
import email.policy
import gzip
import http.server
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from attach_support import Target, program  # noqa: E402
from support import check  # noqa: E402

VERSIONS = ("once: the transport of continuous profiles (the sampler is attach's, tested on every "
            "interpreter)")

NAME_RE = re.compile(r"^sonde-(\d{13})-(\d{13})\.(.+)$")


# ---- decoding a payload ---------------------------------------------------------------

def _varint(data, i):
    value, shift = 0, 0
    while True:
        check(i < len(data), "protobuf: varint runs past the end")
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, i
        shift += 7
        check(shift < 64, "protobuf: varint too long")


def parse_protobuf(data):
    """Every (field, wire type, value) of one message; a length-delimited
    value is the bytes. Fails on anything malformed."""
    fields, i = [], 0
    while i < len(data):
        key, i = _varint(data, i)
        field, wire = key >> 3, key & 7
        check(field > 0, "protobuf: field 0")
        if wire == 0:
            value, i = _varint(data, i)
        elif wire == 1:
            value, i = data[i:i + 8], i + 8
        elif wire == 2:
            n, i = _varint(data, i)
            check(i + n <= len(data), "protobuf: length past the end")
            value, i = data[i:i + n], i + n
        elif wire == 5:
            value, i = data[i:i + 4], i + 4
        else:
            raise AssertionError("protobuf: wire type %d" % wire)
        fields.append((field, wire, value))
    check(i == len(data), "protobuf: trailing bytes")
    return fields


def decode_pprof(raw):
    """profile.proto (perftools.profiles.Profile), gzipped: its sample
    types and the sum of each sample's first value."""
    data = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    fields = parse_protobuf(data)
    strings = [v.decode("utf-8") for f, w, v in fields if f == 6]
    check(strings and strings[0] == "", "pprof: string_table[0] is not empty")
    types = []
    for f, w, v in fields:
        if f == 1:
            vt = {ff: vv for ff, _, vv in parse_protobuf(v)}
            types.append(strings[vt.get(1, 0)])
    total = 0
    for f, w, v in fields:
        if f == 2:
            for ff, ww, vv in parse_protobuf(v):
                if ff == 2 and ww == 2:  # packed values
                    first, _ = _varint(vv, 0) if vv else (0, 0)
                    total += first
                    break
                if ff == 2 and ww == 0:
                    total += vv
                    break
    return {"types": types, "total": total}


def decode_payload(fmt, raw):
    if fmt == "pprof":
        return decode_pprof(raw)
    check(fmt == "json", "format=%r" % fmt)
    doc = json.loads(raw.decode("utf-8"))
    check("n_samples" in doc and "files" in doc, "JSON profile fields: %r" % sorted(doc)[:8])
    return {"types": ["samples"], "total": doc["n_samples"]}


def parse_multipart(content_type, body):
    msg = email.parser.BytesParser(policy=email.policy.default).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body)
    check(msg.is_multipart(), "body is not multipart: %r" % content_type)
    parts = {}
    for part in msg.iter_parts():
        parts[part.get_param("name", header="content-disposition")] = part.get_payload(decode=True)
    return parts


# ---- the receiver ---------------------------------------------------------------------

class Receiver:
    """/ingest on 127.0.0.1:port. behave(n) says what the n-th request
    (from 0) gets: an HTTP status, or ("hang", seconds) then 200. Keeps
    every accepted payload decoded, in arrival order."""

    def __init__(self, port=0, behave=None):
        self.behave = behave or (lambda n: 200)
        self.lock = threading.Lock()
        self.requests = 0          # every request seen
        self.statuses = []         # what each got
        self.accepted = []         # (from, until, query, decoded), 2xx only
        self.errors = []           # payloads that did not decode
        self.port = port
        self.server = None

    def start(self):
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with receiver.lock:
                    n = receiver.requests
                    receiver.requests += 1
                what = receiver.behave(n)
                if isinstance(what, tuple):  # ("hang", seconds)
                    time.sleep(what[1])
                    what = 200
                with receiver.lock:
                    receiver.statuses.append(what)
                if what == 200:
                    try:
                        receiver.take(self.path, dict(self.headers), body)
                    except Exception as e:  # noqa: BLE001 - kept for the test to report
                        with receiver.lock:
                            receiver.errors.append("%s: %s" % (self.path, e))
                try:
                    self.send_response(what)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                except OSError:
                    pass  # the client gave up (a hang past its timeout)

            def log_message(self, *args):
                pass

        http.server.ThreadingHTTPServer.allow_reuse_address = True
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def take(self, path, headers, body):
        url = urllib.parse.urlsplit(path)
        check(url.path == "/ingest", "path %r" % url.path)
        q = dict(urllib.parse.parse_qsl(url.query))
        for key in ("name", "from", "until", "format", "spyName", "sampleRate"):
            check(key in q, "query without %s: %r" % (key, q))
        check(q["spyName"] == "sonde", "spyName %r" % q["spyName"])
        parts = parse_multipart(headers.get("Content-Type", ""), body)
        check("profile" in parts, "no profile part: %r" % list(parts))
        decoded = decode_payload(q["format"], parts["profile"])
        with self.lock:
            self.accepted.append((int(q["from"]), int(q["until"]), q, decoded, headers,
                                  parts["profile"]))

    def stop(self):
        if self.server:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def spans(self):
        with self.lock:
            return [(a[0], a[1]) for a in self.accepted]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def period_files(directory):
    """The period directory's files, oldest first: (from_ms, until_ms, name)."""
    out = []
    for name in sorted(os.listdir(directory)):
        m = NAME_RE.match(name)
        check(m, "unexpected file in the period directory: %r" % name)
        out.append((int(m.group(1)), int(m.group(2)), name))
    return out


def start_attach(env, pid, args):
    return subprocess.Popen([env.sonde, "attach", str(pid)] + args, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=env.tmp, env=env.base_env())


def finish(proc, timeout=60):
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError("sonde attach did not end: %s" % err[-2000:])
    check(proc.returncode == 0, "sonde attach: exit %d: %s" % (proc.returncode, err[-2000:]))
    return err


def check_every_period_once(receiver, directory):
    """Each period of the directory arrived, and the receiver, deduplicating
    on from/until, has each exactly once, in order."""
    files = period_files(directory)
    expected = [(f // 1000, u // 1000) for f, u, _ in files]
    check(len(set(expected)) == len(expected), "periods share a from/until: %r" % expected)
    seen, unique = set(), []
    for span in receiver.spans():
        if span not in seen:
            seen.add(span)
            unique.append(span)
    check(unique == expected, "received (deduplicated) %r, periods %r" % (unique, expected))
    check(not receiver.errors, "payloads that did not decode: %r" % receiver.errors[:3])
    check(all(a[3]["total"] >= 0 for a in receiver.accepted), "negative totals")


def check_with_go_pprof(env, accepted):
    """Every payload read by the real tool (`go tool pprof -raw`, when Go is
    installed): the sample counts agree with the parser above, and hot()
    is in the locations of those with samples."""
    go = shutil.which("go")
    if not go:
        return
    path = os.path.join(env.tmp, "payload.pb.gz")
    for a in accepted:
        with open(path, "wb") as f:
            f.write(a[5])
        proc = subprocess.run([go, "tool", "pprof", "-raw", path], capture_output=True, text=True,
                              timeout=60, env=dict(os.environ, HOME=env.tmp))
        check(proc.returncode == 0, "go tool pprof -raw: %s" % proc.stderr[-500:])
        body = proc.stdout.split("Samples:", 1)[1].split("Locations", 1)[0]
        counts = [int(line.split()[0]) for line in body.splitlines()
                  if re.match(r"^\s+\d+\s+\d+:", line)]
        check(sum(counts) == a[3]["total"], "go tool pprof reads %d samples, the parser %d"
              % (sum(counts), a[3]["total"]))
        if counts:
            check(re.search(r" hot \S+hot\.py:\d+", proc.stdout), "hot() not in: %s"
                  % proc.stdout[:800])


# ---- tests -----------------------------------------------------------------------------

def test_fleet_receiver_down_then_up(env):
    """The backend is down for three periods, then up: every period
    arrives, each once after deduplication, in order, with the tags and
    the headers of SONDE_UPLOAD_HEADERS."""
    port = free_port()
    receiver = Receiver(port)
    periods = os.path.join(env.tmp, "periods")
    spool = os.path.join(env.tmp, "spool")
    with Target(env, program("hot.py"), [30]) as target:
        proc = subprocess.Popen(
            [env.sonde, "attach", str(target.pid), "--period", "1", "-d", "7.5", "--period-dir",
             periods, "--keep", "100", "--upload", "http://127.0.0.1:%d" % port, "--app-name",
             "svc", "--tag", "env=test", "--tag", "region=x1", "--upload-timeout", "1",
             "--spool-dir", spool], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            cwd=env.tmp, env=env.base_env({"SONDE_UPLOAD_HEADERS": "Authorization: Bearer t0k\n"
                                                                    "X-Scope-OrgID: team"}))
        time.sleep(3.3)  # three periods with nothing listening
        check(len(os.listdir(spool)) >= 3, "backlog while down: %r" % os.listdir(spool))
        receiver.start()
        try:
            err = finish(proc)
        finally:
            receiver.stop()
    check("failed" in err and "answers again" in err, "no down/up lines: %s" % err)
    check(len(period_files(periods)) >= 7, "periods: %r" % os.listdir(periods))
    check_every_period_once(receiver, periods)
    first = receiver.accepted[0]
    check(first[2]["name"] == "svc{env=test,region=x1}", "name %r" % first[2]["name"])
    check(first[2]["sampleRate"] == "100", "sampleRate %r" % first[2]["sampleRate"])
    check(first[4].get("Authorization") == "Bearer t0k" and first[4].get("X-Scope-OrgID") == "team",
          "headers: %r" % first[4])
    check(all(a[2]["format"] == "pprof" for a in receiver.accepted),
          "formats: %r" % sorted(set(a[2]["format"] for a in receiver.accepted)))
    check(sum(a[3]["total"] for a in receiver.accepted) > 0, "no samples in any profile")
    check_with_go_pprof(env, receiver.accepted)
    check(os.listdir(spool) == [], "backlog left: %r" % os.listdir(spool))
    check(" 0 dropped" in err, "summary: %s" % err)


def test_fleet_500_then_200(env):
    """The backend answers 500 to the first three requests, then 200; SIGINT
    ends sampling and the last, partial period is sent too."""
    receiver = Receiver(behave=lambda n: 500 if n < 3 else 200).start()
    periods = os.path.join(env.tmp, "periods500")
    try:
        with Target(env, program("hot.py"), [30]) as target:
            proc = start_attach(env, target.pid, [
                "--period", "1", "--period-dir", periods, "--upload",
                "http://127.0.0.1:%d/ingest" % receiver.port, "--upload-timeout", "2"])
            time.sleep(4.5)
            proc.send_signal(signal.SIGINT)
            err = finish(proc)
    finally:
        receiver.stop()
    check(receiver.statuses[:3] == [500, 500, 500], "statuses %r" % receiver.statuses)
    files = period_files(periods)
    check(len(files) >= 4, "periods: %r" % files)
    last_ms = files[-1][1] - files[-1][0]
    check(last_ms < 900, "the last period is not the partial one: %d ms" % last_ms)
    check_every_period_once(receiver, periods)


def test_fleet_receiver_hangs(env):
    """The backend takes 4 s to answer its first two requests (past
    --upload-timeout 0.5): sampling goes on (a period file every period),
    the requests time out, and everything arrives once it answers."""
    receiver = Receiver(behave=lambda n: ("hang", 4) if n < 2 else 200).start()
    periods = os.path.join(env.tmp, "periods_hang")
    try:
        with Target(env, program("hot.py"), [30]) as target:
            t0 = time.monotonic()
            proc = start_attach(env, target.pid, [
                "--period", "1", "-d", "6.5", "--period-dir", periods, "--upload",
                "http://127.0.0.1:%d" % receiver.port, "--upload-timeout", "0.5"])
            err = finish(proc)
            wall = time.monotonic() - t0
    finally:
        receiver.stop()
    files = period_files(periods)
    check(len(files) == 7, "period files: %r" % files)
    gaps = [(files[i + 1][0] - files[i][1]) for i in range(len(files) - 1)]
    check(max(gaps) < 300, "sampling stalled between periods: gaps %r ms" % gaps)
    check("failed" in err and "timed out" in err.lower(), "no timeout line: %s" % err)
    check(wall < 6.5 + 5, "sonde attach took %.1f s" % wall)
    check_every_period_once(receiver, periods)


def _rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def test_fleet_many_periods_flat_rss(env):
    """500 periods of 0.02 s uploaded and written to a directory that keeps
    5: the sonde process's RSS after the first 50 periods stays within 5 %,
    the directory holds exactly the newest 5, and SIGTERM sends the last
    partial period."""
    receiver = Receiver().start()
    periods = os.path.join(env.tmp, "periods_many")
    rss = []  # (periods received so far, VmRSS kB)
    try:
        with Target(env, program("hot.py"), [60]) as target:
            proc = start_attach(env, target.pid, [
                "--period", "0.02", "--period-dir", periods, "--keep", "5", "--upload",
                "http://127.0.0.1:%d" % receiver.port, "--upload-timeout", "2"])
            deadline = time.monotonic() + 45
            while time.monotonic() < deadline and proc.poll() is None:
                n = len(receiver.spans())
                kb = _rss_kb(proc.pid)
                if kb:
                    rss.append((n, kb))
                if n >= 500:
                    break
                time.sleep(0.02)
            proc.send_signal(signal.SIGTERM)
            err = finish(proc)
    finally:
        receiver.stop()
    n = len(receiver.spans())
    check(n >= 500, "only %d periods arrived in 45 s" % n)
    after = [kb for count, kb in rss if count >= 50]
    check(len(after) >= 20, "too few RSS readings after 50 periods: %d" % len(after))
    base = after[0]
    # ASan keeps freed memory in quarantine (256 MB): RSS says nothing there;
    # its leak checker covers that build instead.
    check(env.sanitize or max(after) <= base * 1.05,
          "RSS grew from %d kB (period 50) to %d kB (%d periods)" % (base, max(after), n))
    files = period_files(periods)
    check(len(files) == 5, "the directory keeps %d files, not 5" % len(files))
    m = re.search(r"(\d+) periods of pid", err)
    check(m and int(m.group(1)) == n, "summary %r, %d received" % (m and m.group(0), n))
    check("0 waiting" in err and "0 dropped" in err, "summary: %s" % err)
    check(not receiver.errors, "payloads that did not decode: %r" % receiver.errors[:3])


def _needed(path):
    out = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def test_fleet_libcurl_in_command_only(env):
    """libcurl is loaded by the sonde command when it uploads, and linked
    into nothing: not the command (whose every start would load it and its
    thirty libraries), not what is loaded into the profiled process (the
    extension modules, the allocator shim). A system without libcurl gets
    one line naming what to install, and only when it asks for an upload."""
    pkg = os.path.join(env.lib, "sonde")
    libs = [os.path.join(pkg, n) for n in os.listdir(pkg) if n.endswith(".so")]
    check(any("shim" in p for p in libs) and any("_sonde" in p for p in libs),
          "extension or shim missing: %r" % libs)
    for path in [env.sonde] + libs:
        check(not any(n.startswith("libcurl") for n in _needed(path)),
              "%s links libcurl: %r" % (path, _needed(path)))
    no_curl = env.base_env({"SONDE_TEST_LIBCURL": "libsonde-test-no-curl.so.4"})
    periods = os.path.join(env.tmp, "periods-no-curl")
    with Target(env, program("hot.py"), [30]) as target:
        proc = subprocess.run(
            [env.sonde, "attach", str(target.pid), "--period", "0.5", "-d", "1", "--upload",
             "http://127.0.0.1:9", "--spool-dir", os.path.join(env.tmp, "spool-no-curl")],
            capture_output=True, text=True, cwd=env.tmp, env=no_curl, timeout=60)
        lines = [line for line in proc.stderr.strip().splitlines()
                 if not line.startswith("sonde: sampling pid")]
        check(proc.returncode != 0 and len(lines) == 1 and "needs libcurl" in lines[0]
              and "libsonde-test-no-curl.so.4" in lines[0] and "install" in lines[0],
              "without libcurl, --upload: exit %d: %r" % (proc.returncode, proc.stderr))
        # without --upload, libcurl is never asked for
        proc = subprocess.run(
            [env.sonde, "attach", str(target.pid), "--period", "0.5", "-d", "1", "--period-dir",
             periods], capture_output=True, text=True, cwd=env.tmp, env=no_curl, timeout=60)
        check(proc.returncode == 0 and "libcurl" not in proc.stderr,
              "without libcurl, --period-dir: exit %d: %s" % (proc.returncode, proc.stderr))
    check(len(period_files(periods)) >= 1, "periods: %r" % os.listdir(periods))


def test_fleet_second_signal_leaves_backlog(env):
    """SIGTERM while the backend hangs: sonde starts sending the backlog
    (for up to twice --upload-timeout); a second SIGTERM ends it after the
    request under way, leaving the periods in --spool-dir for a later run."""
    receiver = Receiver(behave=lambda n: ("hang", 20)).start()
    spool = os.path.join(env.tmp, "spool_cancel")
    try:
        with Target(env, program("hot.py"), [30]) as target:
            proc = start_attach(env, target.pid, [
                "--period", "0.5", "--upload", "http://127.0.0.1:%d" % receiver.port,
                "--upload-timeout", "3", "--spool-dir", spool])
            time.sleep(1.7)
            proc.send_signal(signal.SIGTERM)
            time.sleep(0.5)
            t0 = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            err = finish(proc, timeout=30)
            after = time.monotonic() - t0
    finally:
        receiver.stop()
    check("sending the" in err and "Ctrl-C again" in err, "no drain line: %s" % err)
    check(after < 4.5, "sonde took %.1f s after the second SIGTERM (the drain is 6 s)" % after)
    left = [n for n in os.listdir(spool) if NAME_RE.match(n)]
    check(len(left) >= 3, "the backlog was not kept: %r" % os.listdir(spool))
    check(re.search(r"0 uploaded, %d waiting" % len(left), err), "summary: %s" % err)


# ---- sonde run --period: the collector process -------------------------------------------

SERVICE = """\
import os, subprocess, sys, time
if len(sys.argv) == 1:  # the program, with one child process of its own
    child = subprocess.Popen([sys.executable, __file__, str(os.getpid())])
    print("serving", flush=True)
def handle():
    end = time.thread_time() + 0.002
    while time.thread_time() < end: pass
while len(sys.argv) == 1 or os.getppid() == int(sys.argv[1]):  # the child ends with the program
    handle()
    time.sleep(0.003)
"""


def _start_run(env, args, name="service.py"):
    script = env.write(name, SERVICE)
    return subprocess.Popen([env.sonde, "run"] + args + [script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=env.tmp, env=env.base_env())


def _finish_run(proc, timeout=60):
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError("sonde run did not end: %s" % err[-2000:])
    # the program died by SIGTERM, and sonde run ends the same way
    check(proc.returncode == -signal.SIGTERM, "sonde run: exit %d: %s"
          % (proc.returncode, err[-2000:]))
    return err


def _period_helper(root):
    """The pid of `sonde _periods DIR ROOT ...` for the program root, or None."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % name, "rb") as f:
                words = f.read().split(b"\0")
        except OSError:
            continue
        if len(words) > 3 and words[1] == b"_periods" and words[3] == str(root).encode():
            return int(name)
    return None


def test_fleet_run_many_periods_flat_rss(env):
    """`sonde run --period 0.02` of a program and its child process, 500
    periods uploaded and written to a directory that keeps 5: the period
    helper's RSS after the first 50 periods stays within 5 %, every payload decodes,
    the directory holds the newest 5, and SIGTERM ends the run as it ends
    the program, with the last partial period sent."""
    receiver = Receiver().start()
    periods = os.path.join(env.tmp, "run_periods_many")
    rss = []
    try:
        proc = _start_run(env, ["--period", "0.02", "--period-dir", periods, "--keep", "5",
                                "--upload", "http://127.0.0.1:%d" % receiver.port,
                                "--upload-timeout", "2"])
        deadline = time.monotonic() + 60
        helper = None
        while time.monotonic() < deadline and proc.poll() is None:
            n = len(receiver.spans())
            # the period helper (`sonde _periods ... <root pid>`): the process
            # that merges, encodes and sends; proc.pid is the program itself
            helper = helper or _period_helper(proc.pid)
            kb = _rss_kb(helper) if helper else None
            if kb:
                rss.append((n, kb))
            if n >= 500:
                break
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        err = _finish_run(proc)
    finally:
        receiver.stop()
    n = len(receiver.spans())
    check(n >= 500, "only %d periods arrived in 60 s" % n)
    after = [kb for count, kb in rss if count >= 50]
    check(len(after) >= 20, "too few RSS readings after 50 periods: %d" % len(after))
    check(env.sanitize or max(after) <= after[0] * 1.05,
          "the period helper's RSS grew from %d kB (period 50) to %d kB (%d periods)"
          % (after[0], max(after), n))
    check(len(period_files(periods)) == 5, "the directory keeps %r" % os.listdir(periods))
    m = re.search(r"(\d+) periods of the program", err)
    check(m and int(m.group(1)) == n, "summary %r, %d received" % (m and m.group(0), n))
    check(not receiver.errors, "payloads that did not decode: %r" % receiver.errors[:3])
    # A floor on the ticks' timing, not a sampled estimate: every 20 ms
    # period holds ticks of both processes (10 ms +- 25 %, bounded, not
    # random) unless they were delayed; one in ten may miss them on a
    # loaded machine.
    with_samples = sum(1 for a in receiver.accepted if a[3]["total"] > 0)
    check(with_samples >= 0.9 * n, "only %d of %d periods have samples" % (with_samples, n))
    return "%d periods; helper RSS %d..%d kB after period 50" % (n, after[0], max(after))


def test_fleet_run_second_signal_leaves_backlog(env):
    """`sonde run --period` while the backend hangs: SIGTERM ends the
    program, the collector starts sending the backlog; a second SIGTERM
    ends that after the request under way, the periods stay in
    --spool-dir, and sonde still dies by SIGTERM like the program."""
    receiver = Receiver(behave=lambda n: ("hang", 20)).start()
    spool = os.path.join(env.tmp, "run_spool_cancel")
    try:
        proc = _start_run(env, ["--period", "0.5", "--upload",
                                "http://127.0.0.1:%d" % receiver.port, "--upload-timeout", "3",
                                "--spool-dir", spool], name="service2.py")
        time.sleep(1.8)
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.7)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        err = _finish_run(proc, timeout=30)
        after = time.monotonic() - t0
    finally:
        receiver.stop()
    check("sending the" in err and "Ctrl-C again" in err, "no drain line: %s" % err)
    check(after < 4.5, "sonde took %.1f s after the second SIGTERM (the drain is 6 s)" % after)
    left = [n for n in os.listdir(spool) if NAME_RE.match(n)]
    check(len(left) >= 3, "the backlog was not kept: %r" % os.listdir(spool))
    check(re.search(r"0 uploaded, %d waiting" % len(left), err), "summary: %s" % err)


def test_fleet_run_sigterm_drain_fits_a_container_stop(env):
    """`sonde run --period` while the backend hangs and --upload-timeout
    would allow a 30 s drain: one SIGTERM (a container stop, which sends
    SIGKILL 10 s later) ends the program, and sonde run ends by SIGTERM
    within SONDE_PERIOD_DRAIN_TERM_SEC (7 s) and a margin, counting the
    periods left in the spool."""
    receiver = Receiver(behave=lambda n: ("hang", 60)).start()
    spool = os.path.join(env.tmp, "run_spool_term")
    try:
        proc = _start_run(env, ["--period", "0.5", "--upload",
                                "http://127.0.0.1:%d" % receiver.port, "--upload-timeout", "20",
                                "--spool-dir", spool], name="service3.py")
        time.sleep(1.8)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        err = _finish_run(proc, timeout=40)
        after = time.monotonic() - t0
    finally:
        receiver.stop()
    check("sending the" in err and "up to 7 s" in err, "no drain line: %s" % err)
    check(after < 10.0, "sonde took %.1f s after SIGTERM (a container stop allows 10)" % after)
    left = [n for n in os.listdir(spool) if NAME_RE.match(n)]
    check(len(left) >= 2 and re.search(r"0 uploaded, %d waiting" % len(left), err),
          "summary: %s; spool %r" % (err, os.listdir(spool)))
    return "ended %.1f s after SIGTERM, %d periods left in the spool" % (after, len(left))
