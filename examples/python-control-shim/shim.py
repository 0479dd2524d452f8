#!/usr/bin/env python3
"""A control-protocol shim in Python (standard library only).

It shows that the Synchro control protocol (docs/control-protocol.md) is
language neutral: the shim runs beside a Synchro server that has no controls
of its own, and answers these controls from outside it:

  capture.await  from the database's capture position: it flushes the WAL,
                 notes the flushed position, and waits until the server's
                 recorded acknowledgement (synchro.wal_progress) reaches it;
  logs.mark, logs.since
                 from the server's own log output (the shim starts the server
                 process and keeps what it writes to stderr);
  clients.expire, clients.retire, clients.run-expiry, clients.counters
                 on the server's client records in its database: expire a
                 client, retire it (through the server's SQL entry point),
                 expire every client idle for longer than the stale-client
                 interval by the database clock, read and set a client's
                 counters;
  reset          the per-scenario reset: it stops the server, drops and
                 creates its database again, and starts the server anew on
                 the same port.

PostgreSQL is reached through the `psql` program (no driver: the standard
library has none), so `psql` must be on PATH.

Usage:

  python3 shim.py --admin-url postgres://user:pw@host:port/postgres --database app \
      [--listen 127.0.0.1:0] [--stale-client-interval-ms 2592000000] \
      -- <server command with {database_url} and {port}>

The shim picks a free loopback port for the server, starts the command with
{database_url} and {port} substituted, and once the server listens prints one
JSON line on stdout: {"control_url": ..., "base_url": ..., "database_url": ...}.
The control URL answers loopback peers only. SIGTERM or SIGINT stops the
server and the shim.
"""
import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PROTOCOL = "synchro-control"
VERSION = 1
START_DEADLINE_S = 60
# The reference server's default stale-client interval (--stale-client-interval 30d).
DEFAULT_STALE_CLIENT_INTERVAL_MS = 30 * 24 * 3600 * 1000
# The reference refuses longer ones: past this, instant arithmetic stops being exact.
MAX_STALE_CLIENT_INTERVAL_MS = 8640000000000000
POLL_S = 0.05


class ControlError(Exception):
    def __init__(self, status, code, message):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def psql(url, sql, variables=None):
    """Runs SQL through psql and returns the last output line (unaligned, tuples only).

    Values from a request never go into the SQL text: they travel as psql
    variables (`-v name=value`, one argv entry each, no shell) and the SQL
    reads them as :'name', which psql sends as a correctly quoted literal. psql
    interpolates variables only in the script it reads, not in a -c string, so
    SQL with variables goes to psql on stdin.
    """
    argv = ["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", url]
    if variables is None:
        argv += ["-c", sql]
    else:
        for name, value in variables.items():
            argv += ["-v", "%s=%s" % (name, value)]
    done = subprocess.run(
        argv, input=None if variables is None else sql, capture_output=True, text=True, encoding="utf-8", timeout=30,
        env=dict(os.environ, PGCLIENTENCODING="UTF8"))
    if done.returncode != 0:
        raise ControlError(500, "failed", "psql: " + done.stderr.strip()[-500:])
    lines = [line for line in done.stdout.splitlines() if line.strip() != ""]
    return lines[-1] if lines else ""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def quote_literal(text):
    return "'" + text.replace("'", "''") + "'"


class Logs:
    """The server's stderr lines, numbered from the shim's start: a mark is the number of the next line."""

    def __init__(self, limit=5000):
        self.lock = threading.Lock()
        self.lines = []
        self.first = 0
        self.limit = limit

    def add(self, line):
        with self.lock:
            self.lines.append(line)
            if len(self.lines) > self.limit:
                drop = len(self.lines) - self.limit
                self.lines = self.lines[drop:]
                self.first += drop

    def mark(self):
        with self.lock:
            return self.first + len(self.lines)

    def since(self, mark):
        with self.lock:
            start = max(0, mark - self.first)
            text = "".join(line + "\n" for line in self.lines[start:])
            return {"mark": self.first + len(self.lines), "text": text, "dropped": max(0, self.first - mark)}


class Server:
    """The supervised server process: started, stopped and restarted from outside."""

    def __init__(self, command, admin_url, database, logs):
        self.command, self.admin_url, self.database, self.logs = command, admin_url, database, logs
        parts = urllib.parse.urlsplit(admin_url)
        self.database_url = urllib.parse.urlunsplit((parts.scheme, parts.netloc, "/" + database, parts.query, ""))
        self.port = free_port()
        self.process = None
        self.base_url = None

    def start(self):
        argv = [part.replace("{database_url}", self.database_url).replace("{port}", str(self.port)) for part in self.command]
        self.process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        threading.Thread(target=self._read_logs, args=(self.process,), daemon=True).start()
        deadline = time.monotonic() + START_DEADLINE_S
        # The reference prints one JSON line on stdout when it listens; another server may print nothing,
        # so a successful TCP connect to the port counts too.
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ControlError(500, "failed", "the server exited with status %s while starting" % self.process.returncode)
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    self.base_url = "http://127.0.0.1:%d" % self.port
                    return
            except OSError:
                time.sleep(POLL_S)
        raise ControlError(504, "deadline_exceeded", "the server did not listen within %d s" % START_DEADLINE_S)

    def _read_logs(self, process):
        for line in process.stderr:
            self.logs.add(line.rstrip("\n"))

    def stop(self):
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def recreate_database(self):
        # One psql for the three statements (a reset runs once per scenario); read from stdin, each
        # statement is a transaction of its own, as DROP and CREATE DATABASE require.
        # The capture slot pins the database; with the server stopped it is inactive.
        psql(self.admin_url, """
SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = :'database' AND NOT active;
DROP DATABASE IF EXISTS :"database" WITH (FORCE);
CREATE DATABASE :"database";
""", {"database": self.database})


def await_materialized(server, timeout_ms):
    """Everything committed before the call is materialized: the server's acknowledged position reaches the flushed WAL position."""
    url = server.database_url
    target = psql(url, "SELECT pg_logical_emit_message(false, 'synchro_flush', '', true); SELECT pg_current_wal_flush_lsn()")
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        # The NOTIFY wakes the server's capture worker, as its own source triggers do.
        row = psql(url, "NOTIFY synchro_capture; SELECT (acknowledged_end_lsn >= %s::pg_lsn)::text || ',' || "
                        "EXISTS (SELECT 1 FROM synchro.wal_poison WHERE lifecycle = 'active' AND retry_requested_at IS NULL)::text "
                        "FROM synchro.wal_progress" % quote_literal(target))
        reached, _, blocked = row.partition(",")
        if reached == "true":
            return {"materialized": True}
        if blocked == "true":
            raise ControlError(409, "capture_blocked", "capture is blocked by a quarantined transaction")
        if time.monotonic() > deadline:
            raise ControlError(504, "deadline_exceeded", "capture did not reach %s in %d ms" % (target, timeout_ms))
        time.sleep(POLL_S)


# The clients controls act on the server's client records from outside, in its
# database: expiry and the counters are SQL on the reference server's table
# synchro.clients, retirement goes through the reference's own SQL entry point
# synchro.synchro_retire_client. A shim for another server does the same on
# that server's storage: the rows (or documents) where it keeps each client's
# generation, scope set version, last activity and expired flag, and the
# operator entry point it offers for retirement.

EXPIRE_CLIENT_SQL = """
WITH marked AS (
  UPDATE synchro.clients SET expired = true
   WHERE NOT expired AND user_id = :'user_id' AND client_id = :'client_id'
   RETURNING client_generation)
SELECT coalesce((SELECT client_generation FROM marked),
                (SELECT client_generation FROM synchro.clients WHERE user_id = :'user_id' AND client_id = :'client_id'))::text;
"""

RETIRE_CLIENT_SQL = "SELECT synchro.synchro_retire_client(:'user_id', :'client_id')::text;"

# A client is stale when its last cursor acknowledgement (or, before any, its
# creation) is more than the interval before the database clock's now. The age
# is compared in milliseconds rather than as now - interval, which would leave
# the timestamp range for an interval of some hundred thousand years.
RUN_EXPIRY_SQL = """
WITH clock AS (SELECT statement_timestamp() AS now),
expired AS (
  UPDATE synchro.clients AS c SET expired = true FROM clock
   WHERE NOT c.expired
     AND extract(epoch FROM clock.now - coalesce(c.last_acknowledged_at, c.created_at)) * 1000 > :interval_ms
   RETURNING c.user_id, c.client_id, c.client_generation)
SELECT jsonb_build_object(
  'now', (SELECT to_char(now AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') FROM clock),
  'expired', coalesce((SELECT jsonb_agg(jsonb_build_object('user_id', user_id, 'client_id', client_id, 'client_generation', client_generation)
                                        ORDER BY user_id, client_id) FROM expired), '[]'::jsonb))::text;
"""

# The counters a scenario may set, with the least value each may hold; their
# names are SQL column names written here, never taken from a request.
COUNTER_FLOORS = {"client_generation": 1, "scope_set_version": 0}

def unknown_client():
    return ControlError(404, "not_found", "the server has no record of that client")


def client_identity(body, optional=()):
    """The {user_id, client_id} of a clients control, both non-empty text PostgreSQL can store."""
    if not isinstance(body, dict):
        raise ControlError(400, "invalid_request", "the request body must be a JSON object")
    keys = set(body.keys())
    if not {"user_id", "client_id"} <= keys or not keys <= {"user_id", "client_id", *optional}:
        allowed = ["user_id", "client_id"] + ["%s (optional)" % name for name in optional]
        raise ControlError(400, "invalid_request", "members must be: %s" % ", ".join(allowed))
    user_id, client_id = body["user_id"], body["client_id"]
    if not isinstance(user_id, str) or user_id == "" or not isinstance(client_id, str) or client_id == "":
        raise ControlError(400, "invalid_request", "user_id and client_id must be non-empty strings")
    for text in (user_id, client_id):
        # PostgreSQL text holds neither U+0000 nor a lone surrogate (which has no UTF-8 form).
        if "\x00" in text or any(0xD800 <= ord(ch) <= 0xDFFF for ch in text):
            raise ControlError(400, "invalid_request", "user_id and client_id may not contain U+0000 or a lone surrogate")
    return {"user_id": user_id, "client_id": client_id}


def expire_client(server, identity):
    generation = psql(server.database_url, EXPIRE_CLIENT_SQL, identity)
    if generation == "":
        raise unknown_client()
    return {"expired": True, "client_generation": int(generation)}


def retire_client(server, identity):
    # Retiring twice answers the first retirement's id; an identity the server never saw is retired all the same.
    return {"retirement_id": psql(server.database_url, RETIRE_CLIENT_SQL, identity)}


def run_expiry(server, interval_ms):
    answer = json.loads(psql(server.database_url, RUN_EXPIRY_SQL, {"interval_ms": str(interval_ms)}))
    return {"now": answer["now"], "stale_client_interval_ms": interval_ms, "expired": answer["expired"]}


def client_counters(server, identity, wanted):
    """Sets the counters named in `wanted` (validated here) and answers the stored pair."""
    if not isinstance(wanted, dict):
        raise ControlError(400, "invalid_request", "set must be an object")
    changes = []
    for name, value in wanted.items():
        if name not in COUNTER_FLOORS:
            raise ControlError(400, "invalid_request", "set may hold only %s" % " and ".join(COUNTER_FLOORS))
        if not whole(value, COUNTER_FLOORS[name]):
            raise ControlError(400, "invalid_request", "%s must be a safe integer of at least %d" % (name, COUNTER_FLOORS[name]))
        # A validated int is written as digits; the column name comes from COUNTER_FLOORS.
        changes.append("%s = %d" % (name, value))
    answer = "jsonb_build_object('client_generation', client_generation, 'scope_set_version', scope_set_version)::text"
    where = "WHERE user_id = :'user_id' AND client_id = :'client_id'"
    if changes:
        sql = "UPDATE synchro.clients SET %s %s RETURNING %s;" % (", ".join(changes), where, answer)
    else:
        sql = "SELECT %s FROM synchro.clients %s;" % (answer, where)
    stored = psql(server.database_url, sql, identity)
    if stored == "":
        raise unknown_client()
    return json.loads(stored)


CONTROLS = {
    "capture.await": ("POST", "capture/await"),
    "clients.expire": ("POST", "clients/expire"),
    "clients.retire": ("POST", "clients/retire"),
    "clients.run-expiry": ("POST", "clients/run-expiry"),
    "clients.counters": ("POST", "clients/counters"),
    "logs.mark": ("POST", "logs/mark"),
    "logs.since": ("POST", "logs/since"),
    "reset": ("POST", "reset"),
}


def members(body, required):
    if not isinstance(body, dict) or sorted(body.keys()) != sorted(required):
        raise ControlError(400, "invalid_request", "members must be exactly: %s" % (", ".join(required) or "(none)"))


def whole(value, minimum):
    return isinstance(value, int) and not isinstance(value, bool) and minimum <= value <= 9007199254740991


def make_handler(server, logs, reset_lock, stale_client_interval_ms):
    by_path = {path: (name, method) for name, (method, path) in CONTROLS.items()}

    def run(name, body):
        if name == "capture.await":
            members(body, ["timeout_ms"])
            if not whole(body["timeout_ms"], 1):
                raise ControlError(400, "invalid_request", "timeout_ms must be a positive integer")
            return await_materialized(server, body["timeout_ms"])
        if name == "clients.expire":
            return expire_client(server, client_identity(body))
        if name == "clients.retire":
            return retire_client(server, client_identity(body))
        if name == "clients.run-expiry":
            members(body, [])
            return run_expiry(server, stale_client_interval_ms)
        if name == "clients.counters":
            identity = client_identity(body, ["set"])
            return client_counters(server, identity, body.get("set", {}))
        if name == "logs.mark":
            members(body, [])
            return {"mark": logs.mark()}
        if name == "logs.since":
            members(body, ["mark"])
            if not whole(body["mark"], 0):
                raise ControlError(400, "invalid_request", "mark must be a non-negative integer returned by logs.mark")
            return logs.since(body["mark"])
        if name == "reset":
            members(body, [])
            with reset_lock:
                server.stop()
                server.recreate_database()
                server.start()
            return {"reset": True, "log_mark": logs.mark()}
        raise ControlError(404, "unknown_control", name)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def send(self, status, value, extra=None):
            data = json.dumps(value).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, val in (extra or {}).items():
                self.send_header(key, val)
            self.end_headers()
            self.wfile.write(data)

        def fail(self, error, control, extra=None):
            self.send(error.status, {"error": {"code": error.code, "message": error.message, "control": control}}, extra)

        def handle_any(self, method):
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length > 0 else b""
            if not self.client_address[0].startswith("127.") and self.client_address[0] != "::1":
                return self.fail(ControlError(404, "unknown_control", "no such endpoint"), None)
            path = urllib.parse.urlsplit(self.path).path.strip("/")
            if path == "capabilities":
                if method != "GET":
                    return self.fail(ControlError(405, "method_not_allowed", "GET only"), None, {"Allow": "GET"})
                controls = {name: {"method": m, "path": p} for name, (m, p) in CONTROLS.items()}
                return self.send(200, {"protocol": PROTOCOL, "version": VERSION, "implementation": "python control shim (examples/python-control-shim)", "controls": controls})
            found = by_path.get(path)
            if found is None:
                return self.fail(ControlError(404, "unknown_control", "no control at /%s; GET /capabilities lists them" % path), None)
            name, wanted = found
            if method != wanted:
                return self.fail(ControlError(405, "method_not_allowed", "%s only" % wanted), name, {"Allow": wanted})
            try:
                try:
                    body = json.loads(raw.decode("utf-8") or "null")
                except ValueError:
                    raise ControlError(400, "invalid_request", "the body is not JSON")
                self.send(200, run(name, body))
            except ControlError as error:
                self.fail(error, name)
            except Exception as error:  # a shim bug still answers in the envelope
                self.fail(ControlError(500, "failed", str(error)), name)

        def do_GET(self):
            self.handle_any("GET")

        def do_POST(self):
            self.handle_any("POST")

    return Handler


def stale_interval(text):
    """--stale-client-interval-ms: a positive whole number of milliseconds, as finite as the reference's."""
    if not text.isdigit() or not 1 <= int(text) <= MAX_STALE_CLIENT_INTERVAL_MS:
        raise argparse.ArgumentTypeError("must be a whole number of milliseconds from 1 to %d, not %r" % (MAX_STALE_CLIENT_INTERVAL_MS, text))
    return int(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--admin-url", required=True, help="PostgreSQL URL of the maintenance database, as a user that may create and drop databases")
    parser.add_argument("--database", required=True, help="name of the server's database (dropped and created again by each reset)")
    parser.add_argument("--listen", default="127.0.0.1:0", help="loopback host:port of the control endpoint")
    parser.add_argument("--stale-client-interval-ms", type=stale_interval, default=DEFAULT_STALE_CLIENT_INTERVAL_MS,
                        help="clients.run-expiry expires a client idle for longer than this (default 30 days, the reference server's default)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the server command, after --")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the server command after --")
    host, _, port = args.listen.rpartition(":")
    if host not in ("127.0.0.1", "localhost", "::1"):
        parser.error("--listen must be a loopback address: the controls are for a test harness on this machine")

    logs = Logs()
    server = Server(command, args.admin_url, args.database, logs)
    server.recreate_database()
    server.start()
    httpd = ThreadingHTTPServer((host, int(port)), make_handler(server, logs, threading.Lock(), args.stale_client_interval_ms))
    control_url = "http://%s:%d" % (host, httpd.server_address[1])
    print(json.dumps({"control_url": control_url, "base_url": server.base_url, "database_url": server.database_url}), flush=True)

    def shutdown(*_):
        threading.Thread(target=httpd.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, shutdown)
    signal.signal(signal.SIGINT, shutdown)
    try:
        httpd.serve_forever()
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
