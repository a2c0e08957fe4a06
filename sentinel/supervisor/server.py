"""The supervisor process: one single-threaded selector loop over the operator socket, worker channels
and worker pidfds. No threads, ever: workers are forked from this process and change credentials
after the fork (sentinel/leash/spawn.py).

    sup = Supervisor(Settings(...)); sup.open(); sup.serve()     # `sentinel supervisor`

Start-up: the worker's execute-only interpreter is refreshed (interp.py) and Muzzle is made to answer
(muzzled.py: the supervisor starts it as its own user when none does, and restarts it with backoff).
Then recovery: runs left `running` by a previous supervisor (even one killed with -9, whose
workers died with it through pdeathsig) become `interrupted`; with `resume` on, they and paused
runs whose approval was resolved are resumed at once. Pending approvals are rows in the database
and simply stay pending.

On a store many hosts share (`store: postgresql://...`, docs/system-mode.md), this supervisor executes its own
host's runs only; a decision made on any host is heard here at once through a LISTEN session whose socket the
loop waits on, and one made while that session was down is found when it reconnects.
"""

from __future__ import annotations

import dataclasses
import os
import selectors
import signal
import socket
import stat
import sys
import time
from typing import Mapping

from sentinel.engine import db
from sentinel.engine.store import Store
from sentinel.errors import Busy, SentinelError, UsageError
from sentinel import frames as protocol
from sentinel.supervisor import agentdoor, auth, children, flows, interp, layout, ops, workers
from sentinel.supervisor.conn import Conn
from sentinel.supervisor.startup import hold, listen, listen_door, system_config
from sentinel.supervisor.startup import open_store as open_store  # where admin.py and tests open it
from sentinel.supervisor.install import ensure_group
from sentinel.supervisor.hub import Client, Settings, caller
from sentinel.supervisor.muzzled import MuzzleKeeper
from sentinel.supervisor.watchkeep import WatchKeeper
from sentinel.engine.status import RunStatus
from sentinel.jsontypes import JSONObject

MUZZLE_START_S = 30.0       # how long start-up waits for Muzzle to answer
MUZZLE_LAUNCH_S = 10.0      # how long a launch waits for a Muzzle that is (re)starting
LISTEN_RETRY_S = 2.0        # how soon a lost LISTEN session on a shared store is tried again
REMOTE_POLL_S = 0.25        # how often a followed run of another host is looked at
UNDO_S = 600.0              # an undo's longest run (SENTINEL_UNDO_TIMEOUT_S: tests shorten it)


class Stop(BaseException):
    pass


class Supervisor:
    """The Hub (sentinel/supervisor/hub.py) the handlers answer through."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.sel = selectors.DefaultSelector()
        self._db: Store | None = None
        self._lock: int | None = None  # startup.hold: one supervisor per state directory
        self.listener: socket.socket | None = None
        self.door: socket.socket | None = None  # the agent door (agentdoor.py)
        self.workers: dict[str, workers.Worker] = {}
        self.watchers: dict[str, list[ops.Watch]] = {}
        self._chains: dict[str, list[str]] = {}  # run id -> its parents, for relaying to their followers
        self.config = system_config()
        self.muzzle = MuzzleKeeper(self.config, settings.state_dir / "logs")
        self.site = workers.Site(settings.state_dir, self.config,
                                 workers.model_ports(self.config, settings.model_ports), settings.group)
        self._muzzle_pidfd: int | None = None
        self.watch_keeper = WatchKeeper(settings.state_dir, settings.socket_path, settings.state_dir / "logs")
        self.decisions: db.Listener | None = None  # a shared store's LISTEN session (decisions made on any host)
        self._listen_at: float | None = None      # when to try it again after it was lost
        self._lost = False                        # the shared store stopped answering (store_lost)

    # -- start-up -------------------------------------------------------------------------------

    def open(self) -> None:
        if os.geteuid() != 0:
            raise UsageError("the supervisor runs as root (system mode); without root, use local mode")
        os.umask(0o077)
        self._db = open_store(self.settings.state_dir, self.config)
        self._lock = hold(self.settings.state_dir)
        self.prune_egress()
        self.site.interpreter = interp.ensure(self.settings.state_dir)
        # the agent door first: the operator socket answering is how a client (and a test) knows the supervisor is
        # up, so everything it listens on is there by then
        self.door = listen_door(layout.agent_socket_path())
        self.sel.register(self.door, selectors.EVENT_READ, ("listen", agentdoor.DOOR))
        self.listener = listen(self.settings.socket_path, ensure_group(self.settings.group))
        self.sel.register(self.listener, selectors.EVENT_READ, ("listen", None))
        from sentinel.supervisor import readable, registry

        for line in readable.problems(self.config, [a.user for a in registry.all_agents(self.store)]):
            print(f"sentinel supervisor: warning: {line}", file=sys.stderr, flush=True)
        if self.muzzle_url(MUZZLE_START_S) is None:
            print(f"sentinel supervisor: warning: {self.muzzle.why_down()}", file=sys.stderr, flush=True)
        self.recover()
        self.listen_decisions()
        self.start_watchers()

    def prune_egress(self) -> None:
        """The per-UID egress table holds exactly the registered agents' uids (a removed agent's uid, which the
        next user created may get, is dropped)."""
        from sentinel.supervisor.identity import apply_egress

        try:
            applied = apply_egress(self.store)
        except SentinelError as exc:
            applied = f"not applied ({exc})"
        self.store.audit("egress_applied", {"egress": applied})

    def muzzle_url(self, wait_s: float) -> str | None:
        """Muzzle's URL once it answers (starting ours if none does); the loop then watches our Muzzle."""
        url = self.muzzle.url(wait_s)
        self._watch_muzzle()
        return url

    def _watch_muzzle(self) -> None:
        child = self.muzzle.child
        pidfd = child.pidfd if child is not None else None
        if pidfd != self._muzzle_pidfd:
            if self._muzzle_pidfd is not None:
                self.sel.unregister(self._muzzle_pidfd)
            if pidfd is not None:
                self.sel.register(pidfd, selectors.EVENT_READ, ("muzzle", None))
            self._muzzle_pidfd = pidfd

    def recover(self) -> None:
        from sentinel.leash import cgroups

        cgroups.sweep()  # groups of workers that died with a previous supervisor
        store = self.store
        for row in store.list_runs(status=[RunStatus.RUNNING]):
            if row.id not in self.workers:
                store.set_status(row.id, RunStatus.INTERRUPTED, error="the supervisor stopped while its worker ran")
        if not self.settings.resume:
            return
        candidates = [r.id for r in store.list_runs(status=[RunStatus.INTERRUPTED])]
        candidates += [r.id for r in store.list_runs(status=[RunStatus.WAITING_APPROVAL])
                       if not store.pending_approvals(r.id)]
        for run_id in reversed(candidates):
            if run_id in self.workers:  # a resumed workflow already launched its step
                continue
            try:
                self.launch(run_id)
            except SentinelError as exc:
                store.set_status(run_id, RunStatus.INTERRUPTED, error=f"resume on start failed: {exc}")

    @property
    def store(self) -> Store:
        assert self._db is not None, "the supervisor is not open"
        return self._db

    # -- the loop -------------------------------------------------------------------------------

    def serve(self) -> None:
        def stop(signum: int, frame: object) -> None:
            raise Stop()

        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, stop)
        try:
            while True:
                try:
                    self.tick(_soonest(self.muzzle.due(), self.watch_keeper.due(), self._listen_due(),
                                       REMOTE_POLL_S if self._remote_followed() else None, self._undo_due()))
                    self.expire_undos()
                    self.listen_decisions()
                    self.release_remote()
                    self.muzzle.tick()
                    self._watch_muzzle()
                    self.tick_watchers()
                except db.Unavailable as exc:
                    self.store_lost(exc)
        except Stop:
            pass
        finally:
            self.shutdown()

    def tick(self, timeout: float | None) -> None:
        for key, events in self.sel.select(timeout):
            kind, obj = key.data
            if kind == "listen":
                self.accept(obj)
            elif kind == "pidfd":
                self.exited(obj)
            elif kind == "watchers":
                self.watchers_exited()
            elif kind == "decided":
                self.hear_decisions()
            elif kind == "muzzle":
                self.sel.unregister(key.fileobj)
                self._muzzle_pidfd = None
                code = self.muzzle.exited()
                self.store.audit("muzzle_exited", {"code": code, "restart_in_s": self.muzzle.due()})
            elif events & selectors.EVENT_WRITE:
                obj.flush()
            if kind == "conn" and events & selectors.EVENT_READ and not obj.closed:
                self.readable(obj)

    def accept(self, door: str | None = None) -> None:
        listener = self.door if door == agentdoor.DOOR else self.listener
        try:
            sock, _ = listener.accept()  # type: ignore[union-attr]
        except OSError:
            return
        peer = auth.peer_of(sock, self.settings.group)
        if door == agentdoor.DOOR:  # never an operator here, whoever calls: only an agent's own user, as itself
            peer = dataclasses.replace(peer, operator=False, door=door, agent=agentdoor.agent_of(self.store, peer))
        conn = Conn(self, sock, peer=peer)
        self.sel.register(sock, selectors.EVENT_READ, ("conn", conn))

    def readable(self, conn: Conn) -> None:
        messages = conn.read()
        for message in messages or []:
            if conn.closed:
                return
            self.dispatch(conn, message)
        if messages is None:
            conn.close()

    def dispatch(self, conn: Conn, message: JSONObject | protocol.BadFrame) -> None:
        """Answer one frame. Whatever a request does, the loop goes on: a failure is one error reply."""
        worker = conn.worker
        try:
            if isinstance(message, protocol.BadFrame):
                self.store.audit("bad_frame", {"error": str(message), "run_id": worker.run_id if worker else None,
                                               "uid": conn.peer.uid if conn.peer else None})
                answer: Mapping[str, object] | None = protocol.failure("usage", str(message))
            elif worker is not None and worker.undo is None and message.get("op") in children.OPS:
                answer = children.handle(self, worker, message)
            elif worker is not None:
                answer = workers.handle(self.store, worker, message, self.relay)
            elif conn.peer is not None and conn.peer.door == agentdoor.DOOR:
                answer = agentdoor.handle(self, conn, message)
            else:
                answer = ops.handle(self, conn, message)
        except Exception as exc:  # noqa: BLE001 - a handler bug fails one request, never the supervisor
            answer = failed(self.store, message, exc, worker.run_id if worker else None)
        if answer is None:
            return
        if worker is not None:
            conn.send(answer)
        else:
            conn.finish(answer)

    def interest(self, conn: Conn) -> None:
        if conn.closed:
            return
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if conn.out else 0)
        try:
            self.sel.modify(conn.sock, events, ("conn", conn))
        except (KeyError, ValueError):
            pass

    def forget(self, conn: Conn) -> None:
        try:
            self.sel.unregister(conn.sock)
        except (KeyError, ValueError):
            pass
        for watches in self.watchers.values():
            watches[:] = [w for w in watches if w.conn is not conn]

    # -- workers --------------------------------------------------------------------------------

    def launch(self, run_id: str) -> workers.Worker | None:
        """Start the run's worker; a workflow run (no worker: the supervisor walks its steps) is advanced."""
        if self.store.get_run(run_id).get("kind") == flows.KIND:
            self.advance_workflow(run_id)
            return None
        if run_id in self.workers:
            raise Busy(f"run {run_id} is already being executed (worker pid {self.workers[run_id].spawned.pid})")
        self.store.set_status(run_id, RunStatus.RUNNING)
        try:
            return self._spawn(run_id)
        except SentinelError as exc:
            self.store.set_status(run_id, RunStatus.INTERRUPTED, error=f"worker could not start: {exc}")
            raise

    def settle(self, run_id: str) -> None:
        """An operator kept a finished subagent: a worker, as its user, writes it into that user's roster."""
        if run_id in self.workers:
            raise Busy(f"run {run_id} is already being executed (worker pid {self.workers[run_id].spawned.pid})")
        worker = self._spawn(run_id)
        worker.settling = True
        assert worker.greeting is not None
        worker.greeting["settle"] = True

    def undo(self, run_id: str, to: int | None, client: Client) -> None:
        """The run's workspace put back by a process as its agent's user (workers.start_undo); while it runs, the
        run is busy (kept in `workers`), and `client` is answered when it exits (`exited`)."""
        if run_id in self.workers:
            what = "being undone" if self.workers[run_id].undo is not None else "being executed by its worker"
            raise Busy(f"run {run_id} is {what}; undo it once that has ended (or cancel the run first)")
        who = caller(client)
        undoing = workers.Undoing(client, who.name, to, time.monotonic() + _undo_s())
        worker, channel = workers.start_undo(self.store, self.site, run_id, undoing)
        self._keep(worker, channel)
        self.store.audit("undo_started", {"run_id": run_id, "to": to, "by": who.name, "uid": worker.uid,
                                          "pid": worker.spawned.pid, "applied": worker.spawned.applied,
                                          "missing": worker.spawned.missing})

    def _undo_due(self) -> float | None:
        """Seconds until the first undo in progress is past its time."""
        deadlines = [w.undo.deadline for w in self.workers.values() if w.undo is not None]
        return max(0.0, min(deadlines) - time.monotonic()) if deadlines else None

    def expire_undos(self) -> None:
        """An undo that outlives its time (UNDO_S) is killed, and its exit answers whoever asked: whatever it waits on
        (a FIFO the agent put where the run's journal was), the run is never busy for good."""
        now = time.monotonic()
        for worker in self.workers.values():
            if worker.undo is not None and worker.undo.deadline <= now and worker.error is None:
                worker.error = (f"the undo of run {worker.run_id} did not finish within {_undo_s():g}s and was "
                                "stopped; what it put back before stays put back")
                worker.spawned.kill()

    def _undone(self, worker: workers.Worker, code: int) -> None:
        """Answer whoever asked for the undo with what its process said, or why it said nothing."""
        undoing = worker.undo
        assert undoing is not None
        answer = undoing.answer or protocol.failure(
            "error", worker.error or f"the undo of run {worker.run_id} (as {worker.agent.user}) exited with code "
                                     f"{code} before it said what it restored; see "
                                     f"{self.settings.state_dir / 'logs' / (worker.run_id + '.log')}")
        result = answer.get("result")
        done = result if isinstance(result, dict) else {}
        self.store.audit("run_undone", {"run_id": worker.run_id, "by": undoing.by, "to": done.get("to", undoing.to),
                                        "code": code, "error": None if done else answer.get("error"),
                                        "children": [*undoing.children],
                                        **{k: done.get(k) for k in ("restored", "removed", "missing") if done}})
        undoing.client.finish(answer)

    def _spawn(self, run_id: str) -> workers.Worker:
        url = self.muzzle_url(MUZZLE_LAUNCH_S)
        if url is None:
            raise SentinelError(self.muzzle.why_down())
        worker, channel = workers.start(self.store, self.site, run_id, url)
        self._keep(worker, channel)
        self.store.audit("worker_started", {"run_id": run_id, "agent": worker.agent.name, "uid": worker.uid,
                                             "pid": worker.spawned.pid, "applied": worker.spawned.applied,
                                             "missing": worker.spawned.missing})
        return worker

    def _keep(self, worker: workers.Worker, channel: socket.socket) -> None:
        """Watch a spawned worker's channel and exit."""
        run_id = worker.run_id
        worker.conn = Conn(self, channel, worker=worker)
        self.workers[run_id] = worker
        self.sel.register(channel, selectors.EVENT_READ, ("conn", worker.conn))
        self.sel.register(worker.spawned.pidfd, selectors.EVENT_READ, ("pidfd", run_id))

    def exited(self, run_id: str) -> None:
        worker = self.workers.pop(run_id)
        self._chains.pop(run_id, None)
        self.sel.unregister(worker.spawned.pidfd)
        code = worker.spawned.reap()
        if isinstance(worker.conn, Conn) and not worker.conn.closed:
            self.readable(worker.conn)  # what it wrote before exiting
            worker.conn.close()
        row = self.store.get_run(run_id)
        self.store.audit("worker_exited", {"run_id": run_id, "code": code, "pid": worker.spawned.pid})
        if worker.undo is not None:
            self._undone(worker, code)
            if worker.relaunch:  # a resume or a decision came while the undo ran: the run goes on now
                try:
                    self.launch(run_id)
                    return
                except SentinelError:
                    pass
            return self.release(run_id)
        if worker.settling:
            return
        if row["status"] == RunStatus.RUNNING:
            why = worker.error or f"worker exited with code {code}"
            self.store.set_status(run_id, RunStatus.INTERRUPTED, error=why)
        children.settle_temporary(self, run_id)
        if worker.relaunch and row["status"] == RunStatus.WAITING_APPROVAL and not self.store.pending_approvals(run_id):
            try:
                self.launch(run_id)  # the watchers stay and follow the new worker
                return
            except SentinelError:
                pass
        try:
            if children.carry_on(self, run_id):  # it waits on its child, or its child's end woke it
                return
        except SentinelError as exc:
            self.store.audit("child_wake_failed", {"run_id": run_id, "error": str(exc)})
        self.release(run_id)

    def advance_workflow(self, run_id: str) -> None:
        """Walk a workflow run; when it ends, its followers hear so and a parent waiting on it carries on."""
        try:
            status = flows.advance(self, run_id, children.Steps(self))
        except Exception as exc:  # noqa: BLE001 - a workflow's failure must not stop the supervisor
            status = RunStatus.FAILED
            self.store.set_status(run_id, status, error=f"workflow: {exc}")
            self.store.audit("workflow_failed", {"run_id": run_id, "error": str(exc)})
        if status != RunStatus.WAITING_CHILD and not children.carry_on(self, run_id):
            self.release(run_id)

    def release(self, run_id: str) -> None:
        outcome = ops.outcome(self.store, run_id)
        for watch in self.watchers.pop(run_id, []):
            watch.conn.finish(protocol.reply(outcome))

    # -- decisions made on other hosts (a shared store) ------------------------------------------

    def listen_decisions(self) -> None:
        """(Re)open the LISTEN session when the store is shared and it is due; then resume whatever was decided
        while nobody listened (a decision is a row: a lost notification delays a resume, never loses it)."""
        if not self.store.shared or self.decisions is not None or (self._listen_due() or 0.0) > 0.0:
            return
        try:
            self.decisions = db.listen(self.store.conn)
        except db.Unavailable as exc:
            self._listen_at = None
            return self.store_lost(exc)
        self._listen_at = None
        self.sel.register(self.decisions, selectors.EVENT_READ, ("decided", None))
        if self._lost:  # runs whose workers ended while the store was gone: interrupted, then resumed
            self._lost = False
            print("sentinel supervisor: the store answers again", file=sys.stderr, flush=True)
            self.recover()
        self.resume_decided()

    def _listen_due(self) -> float | None:
        if self._listen_at is None:
            return None
        return max(0.0, self._listen_at - time.monotonic())

    def hear_decisions(self) -> None:
        assert self.decisions is not None
        for run_id in dict.fromkeys(self.decisions.drain()):
            self._decided(run_id)

    def store_lost(self, exc: db.Unavailable) -> None:
        """The shared store stopped answering. Nothing is decided or executed meanwhile: a worker's decision or
        approval request fails (so its tool call does not run) and the worker ends; `status` still answers. The
        LISTEN session is tried again every LISTEN_RETRY_S; once it connects, `recover` picks the runs up."""
        if not self._lost:
            print(f"sentinel supervisor: warning: {exc}; runs are paused until it answers", file=sys.stderr,
                  flush=True)
        self._lost = True
        if self.decisions is not None:
            self.sel.unregister(self.decisions)
            self.decisions.close()
            self.decisions = None
        if self._listen_at is None:
            self._listen_at = time.monotonic() + LISTEN_RETRY_S

    def resume_decided(self) -> None:
        """This host's paused runs whose approvals were all decided (say, on another host while this one was
        not listening) resume."""
        try:
            for row in self.store.list_runs(status=["waiting_approval"]):
                self._decided(row.id)
        except SentinelError as exc:
            self.store_trouble(exc)

    def _decided(self, run_id: str) -> None:
        try:
            ops.decided(self, run_id)
        except SentinelError as exc:
            self.store_trouble(exc)

    def _remote_followed(self) -> list[str]:
        """Followed runs another host executes (a decision made here resumed them there)."""
        if not self.store.shared or not self.watchers:
            return []
        return [run_id for run_id in self.watchers
                if run_id not in self.workers and not ops.executes_here(self.store, self.store.get_run(run_id))]

    def release_remote(self) -> None:
        """A followed run of another host: its follower is told how it ended, or that it paused again, once its
        row says so (no live events cross hosts; the outcome does)."""
        try:
            for run_id in self._remote_followed():
                row = self.store.get_run(run_id)
                waiting = row["status"] == "waiting_approval" and not self.store.pending_approvals(run_id)
                if row["status"] not in ("running", "waiting_child") and not waiting:
                    self.release(run_id)
        except SentinelError as exc:
            self.store_trouble(exc)

    def store_trouble(self, exc: SentinelError) -> None:
        """One run could not be resumed: say so and go on; a store that stopped answering is `store_lost`."""
        if isinstance(exc, db.Unavailable):
            raise exc
        print(f"sentinel supervisor: warning: {exc}", file=sys.stderr, flush=True)

    # -- the watcher child (watchkeep.py) --------------------------------------------------------

    def start_watchers(self) -> None:
        """Run the watcher child when there are operator watchers, firings whose relay is still open, or `notify:`
        targets (the child delivers notifications too)."""
        from sentinel.engine import relay
        from sentinel.watchers.spec import system_dir

        if system_dir().is_dir() or relay.next_deadline(self.store.conn) is not None or self.config.notify:
            pidfd = self.watch_keeper.start()
            if pidfd is not None:
                self.sel.register(pidfd, selectors.EVENT_READ, ("watchers", None))
            else:
                self.store.audit("watchers_exited", {"error": self.watch_keeper.last_error,
                                                     "restart_in_s": self.watch_keeper.due()})

    def ensure_watchers(self) -> None:
        """A firing is open: its relay timer must run (`watch fire` without operator watcher files)."""
        if self.watch_keeper.pid is None and self.watch_keeper.restart_at is None:
            self.start_watchers()

    def tick_watchers(self) -> None:
        if self.watch_keeper.pid is None and self.watch_keeper.due() == 0.0:
            self.watch_keeper.restart_at = None
            self.start_watchers()

    def watchers_exited(self) -> None:
        self.sel.unregister(self.watch_keeper.pidfd)  # type: ignore[arg-type]
        code = self.watch_keeper.exited()
        self.store.audit("watchers_exited", {"code": code, "restart_in_s": self.watch_keeper.due()})

    def stop_watchers(self) -> None:
        if self.watch_keeper.pidfd is not None:
            self.sel.unregister(self.watch_keeper.pidfd)
            self.watch_keeper.stop()

    def muzzle_state(self) -> str:
        return self.muzzle.describe()

    def relay(self, run_id: str, event: JSONObject) -> None:
        """To whoever follows the run, and whoever follows a run above it (a parent shows its children live)."""
        for watch in self.watchers.get(run_id, []):
            watch.event(event)
        if len(self.watchers) > (run_id in self.watchers):
            for parent in self._chain(run_id):
                for watch in self.watchers.get(parent, []):
                    watch.event(event)

    def _chain(self, run_id: str) -> list[str]:
        chain = self._chains.get(run_id)
        if chain is None:  # a run's parents never change: asked once per run, not per text delta
            chain = self._chains[run_id] = self.store.parent_chain(run_id)
        return chain

    def watch(self, client: Client, run_id: str, since_seq: int = 0) -> None:
        self.watchers.setdefault(run_id, []).append(ops.Watch(client, since_seq, run_id))

    def cancel(self, run_id: str) -> bool:
        worker = self.workers.get(run_id)
        if worker is None:
            return False
        worker.spawned.kill()
        return True

    # -- shutdown -------------------------------------------------------------------------------

    def shutdown(self) -> None:
        for run_id, worker in list(self.workers.items()):
            worker.relaunch = False
            worker.spawned.kill()
            try:
                self.exited(run_id)
            except db.Unavailable:  # its row still says running: the next start marks it interrupted
                pass
        if self._muzzle_pidfd is not None:
            self.sel.unregister(self._muzzle_pidfd)
            self._muzzle_pidfd = None
        self.muzzle.stop()
        self.stop_watchers()
        for listener, path in ((self.listener, self.settings.socket_path), (self.door, layout.agent_socket_path())):
            if listener is None:
                continue
            listener.close()
            try:
                if stat.S_ISSOCK(os.lstat(path).st_mode):
                    os.unlink(path)
            except OSError:
                pass
        if self.decisions is not None:
            self.decisions.close()
        if self._db is not None:
            self._db.close()
        if self._lock is not None:  # last: its sockets are gone, so the next supervisor binds fresh ones
            os.close(self._lock)
            self._lock = None


def _undo_s() -> float:
    try:
        return max(0.1, float(os.environ.get("SENTINEL_UNDO_TIMEOUT_S", UNDO_S)))
    except ValueError:
        return UNDO_S


def _soonest(*delays: float | None) -> float | None:
    return min((d for d in delays if d is not None), default=None)


def failed(store: Store, message: object, exc: Exception, run_id: str | None = None) -> JSONObject:
    """The one error reply (and audit record) for a request whose handler raised."""
    op = str(message.get("op"))[:64] if isinstance(message, dict) else None
    detail = f"{type(exc).__name__}: {str(exc)[:300]}"
    try:
        store.audit("request_failed", {"op": op, "error": detail, "run_id": run_id})
    except Exception:  # noqa: BLE001 - the store itself may be what failed; the reply still goes out
        pass
    return protocol.failure("error", f"the supervisor could not handle {op!r} ({detail})")
