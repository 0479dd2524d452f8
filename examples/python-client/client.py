#!/usr/bin/env python3
"""A tiny client adapter in Python, to show the adapter protocol is language
agnostic: JSON-RPC 2.0, one JSON object per line on stdin and stdout, logs on
stderr. It keeps application tables in SQLite under the data directory and
answers the local-SQL and status methods; it does not sync (a real adapter
wraps a real Synchro client here). Methods it does not offer answer the
standard JSON-RPC "method not found" error.
"""
import json
import os
import sqlite3
import sys

STATE = {"db": None, "status": "uninitialized", "log": []}


class RpcError(Exception):
    def __init__(self, code, message, data=None):
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


def enter(status):
    STATE["status"] = status
    STATE["log"].append(status)


def db():
    if STATE["db"] is None:
        raise RpcError(-32000, "open has not been called", {"type": "not_opened", "retryable": False})
    return STATE["db"]


def bind(params):
    # Positional (list) or named (dict) values, as sqlite3 accepts both.
    return params.get("params", [])


def open_(params):
    os.makedirs(params["dataDir"], exist_ok=True)
    # isolation_level=None: each statement commits on its own unless inside an explicit transaction.
    STATE["db"] = sqlite3.connect(os.path.join(params["dataDir"], "app.sqlite3"), isolation_level=None)
    STATE["db"].row_factory = sqlite3.Row
    enter("local_ready")
    print(f"python sample opened {params['dataDir']} for {params['clientId']}", file=sys.stderr, flush=True)
    return {}


def execute(params):
    try:
        cursor = db().execute(params["sql"], bind(params))
    except sqlite3.Error as error:
        raise RpcError(-32001, "statement failed", {"sqlError": str(error)})
    return {"changes": max(cursor.rowcount, 0)}


def query(params):
    try:
        rows = db().execute(params["sql"], bind(params)).fetchall()
    except sqlite3.Error as error:
        raise RpcError(-32001, "query failed", {"sqlError": str(error)})
    return {"rows": [dict(row) for row in rows]}


def transaction(params):
    connection = db()
    try:
        connection.execute("BEGIN")
        for statement in params["statements"]:
            connection.execute(statement["sql"], statement.get("params", []))
        connection.execute("COMMIT")
    except sqlite3.Error as error:
        connection.execute("ROLLBACK")
        raise RpcError(-32001, "transaction failed", {"sqlError": str(error)})
    return {}


def stop(_params):
    enter("stopped")
    return {"status": STATE["status"]}


METHODS = {
    "open": open_,
    "execute": execute,
    "query": query,
    "transaction": transaction,
    "getStatus": lambda _p: {"status": STATE["status"], "statusLog": STATE["log"]},
    "crashPoints": lambda _p: {"points": []},
    "stop": stop,
    "close": stop,
}


def answer(request):
    method = METHODS.get(request.get("method"))
    if method is None:
        return {"jsonrpc": "2.0", "id": request.get("id"), "error": {"code": -32601, "message": "method not found"}}
    try:
        return {"jsonrpc": "2.0", "id": request["id"], "result": method(request.get("params") or {})}
    except RpcError as error:
        body = {"code": error.code, "message": error.message}
        if error.data is not None:
            body["data"] = error.data
        return {"jsonrpc": "2.0", "id": request["id"], "error": body}


for line in sys.stdin:
    if line.strip():
        print(json.dumps(answer(json.loads(line))), flush=True)
