"""A machine's history: an SQLite index of every run (Python's own sqlite3),
with per id the run-level figures and a path back to the results directory
that keeps the raw samples. The database is an index, never a copy.

    runs     one row per run directory: host, time, kernel, preset, osmeter's
             commit, the run's conditions (flattened, the volatile ones left
             out: analysis/conditions.py) and its path
    figures  (run, id): unit, the run's figure (results.model.Measurement:
             the median of its processes' medians; its column keeps schema
             1's name, median) and its 95% interval (lo, hi), the samples'
             mean, std and n, the within-run CV (std / mean). A run added
             before 2026-12 holds the pooled median of its samples where
             several processes measured an id: add it again to replace it
    meta     schema_version
    windows  per host, id, change-point parameters and window: the digest of
             the window's values and the breaks found in it (changes.find's
             cache, made again whenever the digest differs)

Where it is: $OSMETER_HISTORY, else results/history.sqlite in the tree.
Several writers at once (two runs ending together, a fleet's hosts on a
shared file system) are serialized by SQLite: WAL journal, every write one
BEGIN IMMEDIATE transaction, a busy timeout of BUSY_S seconds. On a network
file system (NFS) SQLite's locks are only as good as the server's: keep the
file on a local disk, or give each machine its own and add their
directories later (`osmeter history add`).
"""
from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import numpy as np

from osmeter.core.errors import RunError

APP_ID = 0x6F736D68  # "osmh": PRAGMA application_id of an osmeter history
SCHEMA_VERSION = 3
READABLE = 2  # the oldest schema a read-only history is read at (3 adds an index and a cache)
BUSY_S = 60.0

# each version's statements, applied in order from the database's version to SCHEMA_VERSION
MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: ("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        "CREATE TABLE runs (id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, host TEXT NOT NULL, "
        "started_utc TEXT NOT NULL, kernel TEXT, preset TEXT, commit_id TEXT, facts TEXT NOT NULL, "
        "added_utc TEXT NOT NULL)",
        "CREATE TABLE figures (run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, mid TEXT NOT NULL, "
        "unit TEXT NOT NULL, median REAL, mean REAL, std REAL, n INTEGER, lo REAL, hi REAL, "
        "PRIMARY KEY (run, mid))",
        "CREATE INDEX runs_host_time ON runs (host, started_utc)"),
    # version 2: the within-run CV of each figure, and the campaign a run belongs to
    2: ("ALTER TABLE figures ADD COLUMN cv REAL",
        "ALTER TABLE runs ADD COLUMN campaign TEXT"),
    # version 3: an id's series read without a scan of every figure, and each window's breaks kept
    3: ("CREATE INDEX figures_mid ON figures (mid, run)",
        "CREATE TABLE windows (host TEXT NOT NULL, mid TEXT NOT NULL, params TEXT NOT NULL, k INTEGER NOT NULL, "
        "digest TEXT NOT NULL, found TEXT NOT NULL, PRIMARY KEY (host, mid, params, k))"),
}


def default_path() -> Path:
    env = os.environ.get("OSMETER_HISTORY")
    if env:
        return Path(env)
    from osmeter.core.tree import repo_root
    return repo_root() / "results" / "history.sqlite"


def _version(con: sqlite3.Connection, path: Path) -> int:
    # one statement, so one snapshot: read apart, another process's first migration could commit between
    # the id (still 0) and the tables (now there), and the new history would pass for a foreign database
    app, meta, tables = con.execute(
        "SELECT (SELECT application_id FROM pragma_application_id()), "
        "(SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'), "
        "(SELECT count(*) FROM sqlite_master WHERE type = 'table')").fetchone()
    if app == 0 and not tables:
        return 0  # a new, empty file
    if app != APP_ID or not meta:
        raise RunError(f"{path}: an SQLite database, but not an osmeter history (application_id {app:#x}): "
                       "give another path (--db or OSMETER_HISTORY)")
    row = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    try:
        return int(row[0])
    except (TypeError, ValueError):
        raise RunError(f"{path}: an osmeter history without a schema version: damaged") from None


@contextmanager
def opened(path: Path | None = None, write: bool = False) -> Iterator[sqlite3.Connection]:
    """The history, migrated to SCHEMA_VERSION (inside one immediate
    transaction, so two processes migrate once). A file that is not SQLite,
    a foreign database, or one from a newer osmeter is a RunError."""
    path = Path(path or default_path())
    if not write and not path.exists():
        raise RunError(f"{path}: no history yet (osmeter run adds each run; osmeter history add DIR adds old ones)")
    if write:
        path.parent.mkdir(parents=True, exist_ok=True)
    ro = _read_only(path)
    if write and ro:
        raise RunError(f"{path}: cannot add to the history: {ro} (give a writable one with --db or OSMETER_HISTORY)")
    try:
        con = _connect(path, bool(ro))
    except sqlite3.Error as e:
        raise RunError(f"{path}: cannot open the history: {e}") from None
    with closing(con):
        try:
            con.execute("PRAGMA foreign_keys = ON")
            have = _version(con, path)  # before anything is written: a foreign file stays as it is
            if have > SCHEMA_VERSION:
                raise RunError(f"{path}: a history of schema {have}, newer than this osmeter's {SCHEMA_VERSION}: "
                               "update osmeter")
            if write:
                _into_wal(con)
            if have < READABLE and not write:
                raise RunError(f"{path}: a history of schema {have}: any writing command (osmeter history add) "
                               f"migrates it to {SCHEMA_VERSION}")
            if have < SCHEMA_VERSION and not ro:  # a reader too: what 3 adds is for reading
                con.execute("BEGIN IMMEDIATE")
                try:
                    have = _version(con, path)  # another process may have migrated it meanwhile
                    for v in range(have + 1, SCHEMA_VERSION + 1):
                        for stmt in MIGRATIONS[v]:
                            con.execute(stmt)
                    con.execute(f"PRAGMA application_id = {APP_ID}")
                    con.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
                    con.execute("COMMIT")
                except BaseException:
                    con.execute("ROLLBACK")
                    raise
            yield con
        except sqlite3.OperationalError as e:  # locked, read-only, out of space: the file itself may be fine
            raise RunError(f"{path}: the history cannot be {'written' if write else 'read'} now: {e}") from None
        except sqlite3.DatabaseError as e:
            raise RunError(f"{path}: not a readable osmeter history ({e}): damaged, or not SQLite") from None


def _read_only(path: Path) -> str:
    """Why path cannot be written here ('' when it can): a read-only file system, or a file or directory
    this user may not write (SQLite's WAL needs its -wal and -shm files beside the database)."""
    where = path if path.exists() else path.parent
    try:
        if os.statvfs(where).f_flag & os.ST_RDONLY:
            return "a read-only file system"
    except OSError:
        return ""
    if path.exists() and not os.access(path, os.W_OK):
        return "a read-only file"
    return "" if os.access(path.parent, os.W_OK) else "a directory this user cannot write"


def _into_wal(con: sqlite3.Connection) -> None:
    """PRAGMA journal_mode = WAL, tried again for up to BUSY_S: switching a
    new file's mode takes its exclusive lock, and SQLite may answer "locked"
    at once, without its busy timeout, while another writer opens it (a
    fresh CI saw one of four concurrent adds fail so)."""
    end = time.monotonic() + BUSY_S
    while True:
        try:
            con.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > end:
                raise
            time.sleep(0.05)


def _connect(path: Path, ro: bool) -> sqlite3.Connection:
    """The history opened: read-write where this user can write it and its directory; else read-only
    (mode=ro), and where even that fails (a WAL database whose -shm cannot be made on a read-only file
    system) as an immutable file, which nothing there can write either."""
    if not ro:
        return sqlite3.connect(path, timeout=BUSY_S, isolation_level=None)
    uri = "file:" + urllib.parse.quote(str(path.resolve()))
    con = sqlite3.connect(uri + "?mode=ro", uri=True, timeout=BUSY_S, isolation_level=None)
    try:
        con.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return con
    except sqlite3.OperationalError:
        con.close()
        return sqlite3.connect(uri + "?immutable=1", uri=True, timeout=BUSY_S, isolation_level=None)


# ------------------------------------------------------------ adding runs

def run_dirs(path: Path) -> list[Path]:
    """The run directories under a run, campaign, ab or fleet directory."""
    from osmeter.results import store
    path = store.run_dir(Path(path))
    if (path / store.RESULTS).is_file():
        return [path]
    if store.is_campaign(path):
        return sorted(d for d in path.glob(store.RUN_GLOB) if (d / store.RESULTS).is_file())
    out: list[Path] = []
    if store.is_fleet(path):
        for h in store.read_fleet(path)["hosts"]:
            d = path / h["label"]
            if d.is_dir():
                out += run_dirs(d)
        return out
    a, b = store.ab_sides(path)
    if a.is_dir() and b.is_dir():
        return run_dirs(a) + run_dirs(b)
    raise RunError(f"{path}: not a run, campaign, ab or fleet directory")


def _db_path(p: Path) -> str | bytes:
    """A path as the database keeps it: text, or its bytes where it is not valid UTF-8 (a name the file
    system holds but no text can: SQLite's TEXT must be UTF-8)."""
    s = str(p)
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return os.fsencode(s)


def _from_db(v) -> str | None:
    return os.fsdecode(v) if isinstance(v, bytes) else v


def _row(run: Path, doc: dict) -> tuple[dict, list[tuple]]:
    from osmeter.analysis.conditions import VOLATILE, flatten
    from osmeter.results import store
    from osmeter.results.model import measurements
    facts = flatten("machine", doc.get("machine", {}))
    facts.update(flatten("conditions", doc.get("conditions", {})))
    facts = {k: v for k, v in facts.items() if k not in VOLATILE and not any(k.startswith(p + ".") for p in VOLATILE)}
    cond, mach = doc["conditions"], doc["machine"]
    campaign = run.parent if store.is_campaign(run.parent) else None
    info = {"path": _db_path(run.resolve()), "host": str(mach.get("hostname") or "unknown"),
            "started_utc": str(cond.get("started_utc") or ""), "kernel": mach.get("kernel") or mach.get("kernel_version"),
            "preset": cond.get("preset"), "commit_id": (cond.get("osmeter") or {}).get("commit"),
            "facts": json.dumps(facts, sort_keys=True), "campaign": _db_path(campaign.resolve()) if campaign else None}
    figs = []
    for m in measurements(doc):
        if m.figure is None:
            continue
        lo, hi = m.figure_ci95 or (None, None)
        cv = m.std / abs(m.mean) if m.std is not None and m.mean else None
        figs.append((m.id, m.unit, m.figure, m.mean, m.std, m.n, lo, hi, cv))
    return info, figs


def add(paths: list[Path], db: Path | None = None) -> tuple[int, int]:
    """Adds the runs under paths (each run once: a run added again is
    replaced). Returns (runs added, runs already there and replaced)."""
    from osmeter.results import store
    runs = [r for p in paths for r in run_dirs(p)]
    docs = []
    for r in runs:  # every file checked before the database is touched
        try:
            docs.append((r, store.load(r)))
        except ValueError as e:
            raise RunError(str(e)) from None
    added = replaced = 0
    with opened(db, write=True) as con:
        con.execute("BEGIN IMMEDIATE")  # all the runs, or none of them
        try:
            now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
            for run, doc in docs:
                info, figs = _row(run, doc)
                old = con.execute("SELECT id FROM runs WHERE path = ?", (info["path"],)).fetchone()
                if old:
                    con.execute("DELETE FROM runs WHERE id = ?", (old[0],))
                    replaced += 1
                else:
                    added += 1
                cur = con.execute("INSERT INTO runs (path, host, started_utc, kernel, preset, commit_id, facts, "
                                  "added_utc, campaign) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                  (info["path"], info["host"], info["started_utc"], info["kernel"], info["preset"],
                                   info["commit_id"], info["facts"], now, info["campaign"]))
                con.executemany("INSERT INTO figures (run, mid, unit, median, mean, std, n, lo, hi, cv) "
                                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", [(cur.lastrowid, *f) for f in figs])
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    return added, replaced


# ------------------------------------------------------------ reading

class WindowCache:
    """changes.find's cache of one host's id: each window's breaks under the digest of its values and
    the parameters, read at once, kept by flush() in one transaction. A history this process cannot
    write (read-only, or of schema 2) keeps nothing: what is put is then only remembered until flush."""

    def __init__(self, con: sqlite3.Connection, host: str, mid: str, params: str):
        self.con, self.key, self.new, self.kept = con, (host, mid, params), {}, True
        try:
            self.have = {k: (d, f) for k, d, f in con.execute(
                "SELECT k, digest, found FROM windows WHERE host = ? AND mid = ? AND params = ?", self.key)}
        except sqlite3.OperationalError:  # no such table: a read-only history of schema 2
            self.have, self.kept = {}, False

    def get(self, k: int, digest: str) -> dict | None:
        if k in self.new and self.new[k][0] == digest:
            return self.new[k][1]
        d, found = self.have.get(k, (None, None))
        return json.loads(found) if d == digest else None

    def put(self, k: int, digest: str, found: dict) -> None:
        self.new[k] = (digest, found)

    def flush(self) -> None:
        rows = [(*self.key, k, d, json.dumps(f)) for k, (d, f) in self.new.items()]
        self.new = {}
        if not rows or not self.kept:
            return
        try:
            self.con.execute("BEGIN IMMEDIATE")
            self.con.executemany("INSERT OR REPLACE INTO windows VALUES (?, ?, ?, ?, ?, ?)", rows)
            self.con.execute("COMMIT")
        except sqlite3.OperationalError:  # read-only, or busy past BUSY_S: searched again next time
            if self.con.in_transaction:
                self.con.execute("ROLLBACK")
            self.kept = False


def hosts(con: sqlite3.Connection) -> list[tuple[str, int, str, str, int]]:
    """(host, runs, first, last, ids) per host."""
    return con.execute("SELECT r.host, COUNT(DISTINCT r.id), MIN(r.started_utc), MAX(r.started_utc), "
                       "COUNT(DISTINCT f.mid) FROM runs r LEFT JOIN figures f ON f.run = r.id "
                       "GROUP BY r.host ORDER BY r.host").fetchall()


def host_names(con: sqlite3.Connection) -> list[str]:
    return [h for h, in con.execute("SELECT DISTINCT host FROM runs ORDER BY host")]


def only_host(con: sqlite3.Connection, host: str | None) -> str:
    """The host asked for, or the only one there is."""
    from osmeter.present.values import printable
    names = host_names(con)
    listed = ", ".join(map(printable, names)) or "none"
    if host:
        if host not in names:
            raise RunError(f"no host {printable(repr(host))} in the history (hosts: {listed})")
        return host
    if len(names) != 1:
        raise RunError(f"the history holds {len(names)} hosts ({listed}): name one with --host")
    return names[0]


SERIES = ("SELECT r.id, r.path, r.started_utc, r.kernel, r.commit_id, r.facts, f.unit, f.median, f.mean, f.std, "
          "f.n, f.lo, f.hi, f.cv FROM figures f JOIN runs r ON r.id = f.run WHERE r.host = ? AND f.mid = ?")
KEYS = ("run", "path", "time", "kernel", "commit", "facts", "unit", "figure", "mean", "std", "n", "lo", "hi", "cv")


def series(con: sqlite3.Connection, host: str, mid: str, since: str | None = None,
           runs: list[int] | None = None, last: int | None = None) -> list[dict]:
    """One id's runs on a host, oldest first (runs: only these; last: only the last so many)."""
    q = (SERIES + (" AND r.started_utc >= ?" if since else "")
         + (f" AND r.id IN ({','.join('?' * len(runs))})" if runs else "")
         + (f" ORDER BY r.started_utc DESC, r.id DESC LIMIT {int(last)}" if last else " ORDER BY r.started_utc, r.id"))
    rows = [dict(zip(KEYS, row)) for row in con.execute(q, (host, mid, *([since] if since else []), *(runs or [])))]
    if last:
        rows.reverse()
    for r in rows:
        r["path"] = _from_db(r["path"])
    return rows


def figures(con: sqlite3.Connection, host: str, mids: list[str]) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Each id's runs on a host, oldest first, as three arrays (run ids, start times, figures: NaN where
    there is none): what a search for change points and a long series' trend read, without a dict a run.
    The host's runs are read in order once, and each id's figures found by the index on figures (mid,
    run), with no join and no sort (the figure is read from its row);
    an id's runs are put in the host's order here."""
    if not mids:
        return {}
    order = con.execute("SELECT id, started_utc FROM runs WHERE host = ? ORDER BY started_utc, id", (host,)).fetchall()
    runs = np.array([r for r, _ in order], dtype=np.int64)
    times = np.array([t for _, t in order], dtype=object)
    by_id = np.argsort(runs)
    known = runs[by_id]
    out = {}
    for mid in mids:
        got = con.execute("SELECT run, median FROM figures WHERE mid = ?", (mid,)).fetchall()
        run = np.array([r for r, _ in got], dtype=np.int64)
        med = np.array([m if isinstance(m, (int, float)) else None for _, m in got], dtype=float)  # None: NaN
        i = np.searchsorted(known, run).clip(0, max(len(known) - 1, 0))
        mine = known[i] == run if len(known) else np.zeros(len(run), dtype=bool)  # the host's runs only
        pos = by_id[i[mine]]
        k = np.argsort(pos, kind="stable")
        out[mid] = (runs[pos[k]], times[pos[k]], med[mine][k])
    return out


def ids(con: sqlite3.Connection, host: str) -> list[str]:
    return [r[0] for r in con.execute("SELECT m.mid FROM (SELECT DISTINCT mid FROM figures) m WHERE EXISTS "
                                      "(SELECT 1 FROM figures f JOIN runs r ON r.id = f.run WHERE f.mid = m.mid "
                                      "AND r.host = ?) ORDER BY m.mid", (host,))]
