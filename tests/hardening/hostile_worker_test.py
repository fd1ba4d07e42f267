#!/usr/bin/env python3
"""A hostile worker against a real ablate-coordinator, from an independent client (Python grpcio
and the system protoc's Python messages, generated here at test time; gRPC's generic calls, no
generated stubs). With a valid attempt and fencing token it sends what a buggy script or a
hostile client could: a batch of 50,002 points, step -5, step 2^62, a loss of 1e300, NaN, a
1 MiB stderr tail, and a result for an attempt it does not hold. Each must be refused: Ack plus
a Cancel whose reason says what was wrong, a line in the coordinator's log, nothing stored.
Issue 24: a second worker writing to this worker's attempt with its id and fencing token, a
result whose stderr tail is not UTF-8 (the coordinator cannot parse it), a summary the stored
points do not support, seq 0, a step twice in a batch, training time going backwards and
unbounded Hellos; each changes nothing of another worker's runs.

Environment: ABLATE_COORDINATOR_BIN, ABLATE_PROTO_DIR (the repository's proto/)."""
import math
import os
import queue
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import json

SPEC = """name: hostile
baseline: {preset: r9-shortcuts, scale: tiny}
seeds: 4
gpus_per_run: 0
max_attempts: 3
ablations:
  - {name: softcap-15, set: {logit_softcap: 15}}
"""


def generate_messages(out_dir):
    proto_dir = os.environ["ABLATE_PROTO_DIR"]
    os.makedirs(out_dir, exist_ok=True)
    files = [os.path.join("ablate/v1", f) for f in ("types.proto", "worker.proto", "client.proto")]
    subprocess.run(["protoc", "-I", proto_dir, "--python_out", out_dir] + files, check=True)
    sys.path.insert(0, out_dir)


class Coordinator:
    def __init__(self, data_dir):
        self.data_dir = data_dir
        self.log_path = os.path.join(data_dir, "coordinator.log")
        self.log = open(self.log_path, "w")
        port_file = os.path.join(data_dir, "port")
        self.proc = subprocess.Popen(
            [os.environ["ABLATE_COORDINATOR_BIN"], "--listen", "127.0.0.1:0", "--data-dir", data_dir,
             "--port-file", port_file, "--http", "off", "--lease-ms", "60000"],
            stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(500):
            if os.path.exists(port_file):
                break
            time.sleep(0.02)
        with open(port_file) as f:
            self.address = "127.0.0.1:" + f.read().strip()

    def log_text(self):
        with open(self.log_path) as f:
            return f.read()

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=20)
        self.log.close()


class WorkerStream:
    """One Connect stream: send() WorkerMessages, next() the CoordinatorMessages in order."""

    def __init__(self, channel, v1):
        self.v1 = v1
        self.outgoing = queue.Queue()
        self.incoming = queue.Queue()
        self.skipped = []
        connect = channel.stream_stream(
            "/ablate.v1.WorkerService/Connect",
            request_serializer=lambda m: m if isinstance(m, bytes) else m.SerializeToString(),
            response_deserializer=v1.CoordinatorMessage.FromString)
        self.call = connect(iter(self.outgoing.get, None))
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            for m in self.call:
                self.incoming.put(m)
        except Exception as e:  # the stream ended: tests see it as a missing message
            self.incoming.put(e)

    def send(self, **kwargs):
        self.outgoing.put(self.v1.WorkerMessage(**kwargs))

    def send_raw(self, data):
        """Bytes as they are: what a proto library would refuse to build (invalid UTF-8)."""
        self.outgoing.put(data)

    def next(self, timeout=20):
        m = self.incoming.get(timeout=timeout)
        if isinstance(m, Exception):
            raise m
        return m

    def next_of(self, kind, timeout=20):
        """The next message of `kind` ('assignment', 'ack', 'cancel'). Messages of other kinds are
        kept for later calls: the coordinator may send the next Assignment (from its scheduling
        thread) before the Ack of the result that freed the slot (from the stream's thread)."""
        for i, m in enumerate(self.skipped):
            if m.WhichOneof("msg") == kind:
                del self.skipped[i]
                return getattr(m, kind)
        deadline = time.time() + timeout
        while True:
            m = self.next(max(0.1, deadline - time.time()))
            if m.WhichOneof("msg") == kind:
                return getattr(m, kind)
            self.skipped.append(m)

    def close(self):
        self.outgoing.put(None)
        self.call.cancel()


class HostileWorkerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import grpc
        cls.tmp = tempfile.TemporaryDirectory()
        generate_messages(os.path.join(cls.tmp.name, "gen"))
        from ablate.v1 import client_pb2, types_pb2, worker_pb2
        cls.v1 = type("v1", (), {})
        for mod in (types_pb2, worker_pb2, client_pb2):
            for name in mod.DESCRIPTOR.message_types_by_name:
                setattr(cls.v1, name, getattr(mod, name))
        cls.coordinator = Coordinator(cls.tmp.name)
        cls.channel = grpc.insecure_channel(cls.coordinator.address)
        submit = cls.channel.unary_unary(
            "/ablate.v1.AblateService/SubmitSweep",
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=cls.v1.SubmitSweepResponse.FromString)
        sweep = submit(cls.v1.SubmitSweepRequest(spec_yaml=SPEC), timeout=20).sweep
        cls.stream = WorkerStream(cls.channel, cls.v1)
        cls.stream.send(hello=cls.v1.Hello(worker_id="hostile", host="nowhere", cpu_slots=1,
                                           datasets=[sweep.dataset]))
        cls.stream.next_of("welcome")

    @classmethod
    def tearDownClass(cls):
        cls.stream.close()
        cls.channel.close()
        cls.coordinator.stop()
        cls.tmp.cleanup()

    def db(self):
        uri = "file:" + os.path.join(self.tmp.name, "ablate.db") + "?mode=ro"
        return sqlite3.connect(uri, uri=True)

    def start_attempt(self):
        a = self.stream.next_of("assignment")
        self.stream.send(run_started=self.v1.RunStarted(attempt_id=a.attempt_id,
                                                        fencing_token=a.fencing_token))
        return a

    def batch(self, a, seq, points):
        return self.v1.MetricBatch(attempt_id=a.attempt_id, fencing_token=a.fencing_token, seq=seq,
                                   points=points)

    def expect_refused(self, a, reply_kind, reason_part):
        """Ack (or finished Ack) then Cancel naming the problem; the attempt failed with it."""
        ack = self.stream.next_of("ack")
        self.assertEqual(ack.attempt_id, a.attempt_id)
        cancel = self.stream.next_of("cancel")
        self.assertEqual(cancel.attempt_id, a.attempt_id)
        self.assertIn(reason_part, cancel.reason)
        self.assertIn("from worker hostile refused", cancel.reason)
        with self.db() as db:
            state, error = db.execute("SELECT state, error FROM attempts WHERE id = ?",
                                      (a.attempt_id,)).fetchone()
        self.assertEqual(state, "failed")
        self.assertIn(reason_part, error)
        deadline = time.time() + 5
        while reason_part not in self.coordinator.log_text() and time.time() < deadline:
            time.sleep(0.05)
        self.assertIn(reason_part, self.coordinator.log_text())
        return ack

    def finish_cancelled(self, a):
        """What a real worker does after Cancel: report; the (already failed) attempt frees the slot."""
        self.stream.send(run_finished=self.v1.RunFinished(
            attempt_id=a.attempt_id, fencing_token=a.fencing_token, status="cancelled"))
        self.assertTrue(self.stream.next_of("ack").finished)

    def stored_points(self, attempt_id):
        with self.db() as db:
            return db.execute("SELECT COUNT(*) FROM metrics WHERE attempt_id = ?",
                              (attempt_id,)).fetchone()[0]

    def refuse_batch(self, points, reason_part, good_first=False, seq=1):
        a = self.start_attempt()
        if good_first:
            self.stream.send(metrics=self.batch(a, 1, [self.v1.MetricPoint(step=1, train_loss=10.5)]))
            ack = self.stream.next_of("ack")
            self.assertEqual((ack.attempt_id, ack.seq), (a.attempt_id, 1))
            seq = 2
        self.stream.send(metrics=self.batch(a, seq, points))
        ack = self.expect_refused(a, "ack", reason_part)
        self.assertEqual(ack.seq, seq)
        self.assertEqual(self.stored_points(a.attempt_id), 1 if good_first else 0)
        self.finish_cancelled(a)
        return a

    def test_hostile_inputs(self):
        P = self.v1.MetricPoint
        points_before = self.total_points()
        # The issue's batch: 50,002 points, step -5, step 2^62, 1e300, NaN. A good batch first, so
        # the stream and the token are known to work and what was committed stays.
        big = [P(step=i % 100, train_loss=3.0) for i in range(50002)]
        big[7] = P(step=-5, train_loss=3.0)
        big[8] = P(step=2 ** 62, train_loss=1e300)
        big[9] = P(step=3, train_loss=math.nan)
        self.refuse_batch(big, "batch of 50002 points is over the limit of 5000", good_first=True)

        a = self.refuse_batch([P(step=2, train_loss=4.0), P(step=-5, train_loss=4.0)],
                              "point 1 (step -5): step -5 is negative")
        steps = json.loads(a.config_json)["num_iterations"]
        self.refuse_batch([P(step=2 ** 62, train_loss=4.0)],
                          f"step {2 ** 62} is beyond the run's {steps} configured steps")
        self.refuse_batch([P(step=steps + 1, train_loss=4.0)],
                          f"step {steps + 1} is beyond the run's {steps} configured steps")
        self.refuse_batch([P(step=3, train_loss=1e300)], "train_loss 1e+300 is out of range")
        self.refuse_batch([P(step=3, val_loss=math.nan)], "val_loss is not finite")
        self.refuse_batch([P(step=3, lr=math.inf)], "lr is not finite")

        # An oversized stderr tail: the result is refused, the attempt failed, no tail stored.
        b = self.start_attempt()
        self.stream.send(run_finished=self.v1.RunFinished(
            attempt_id=b.attempt_id, fencing_token=b.fencing_token, status="ok",
            stderr_tail="x" * (1 << 20)))
        ack = self.expect_refused(b, "ack", "stderr tail of 1048576 bytes is over the limit")
        self.assertTrue(ack.finished)
        with self.db() as db:
            tail, = db.execute("SELECT stderr_tail FROM attempts WHERE id = ?",
                               (b.attempt_id,)).fetchone()
        self.assertEqual(tail, "")

        # A result for an attempt this worker does not hold (finished before) is refused as now:
        # acknowledged, nothing changed.
        with self.db() as db:
            before = db.execute("SELECT state, error, finished_ms FROM attempts WHERE id = ?",
                                (a.attempt_id,)).fetchone()
        self.stream.send(run_finished=self.v1.RunFinished(
            attempt_id=a.attempt_id, fencing_token=a.fencing_token, status="ok",
            summary=self.v1.RunSummary(final_val_loss=1.0, steps=steps)))
        self.assertTrue(self.stream.next_of("ack").finished)
        with self.db() as db:
            after = db.execute("SELECT state, error, finished_ms FROM attempts WHERE id = ?",
                               (a.attempt_id,)).fetchone()
            run_state, = db.execute("SELECT state FROM runs WHERE id = ?", (a.run_id,)).fetchone()
        self.assertEqual(before, after)
        self.assertNotEqual(run_state, "succeeded")

        # In all, only the one good point was stored.
        self.assertEqual(self.total_points(), points_before + 1)

    def total_points(self):
        with self.db() as db:
            return db.execute("SELECT COUNT(*) FROM metrics").fetchone()[0]

    def run_row(self, run_id):
        with self.db() as db:
            db.row_factory = sqlite3.Row
            return dict(db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone())

    def attempt_row(self, attempt_id):
        with self.db() as db:
            db.row_factory = sqlite3.Row
            return dict(db.execute("SELECT * FROM attempts WHERE id = ?",
                                   (attempt_id,)).fetchone())

    def test_issue24_a_worker_cannot_write_to_an_attempt_it_does_not_hold(self):
        P = self.v1.MetricPoint
        a = self.start_attempt()
        # Unguessable tokens: not the attempt number, not small.
        self.assertNotEqual(a.fencing_token, a.attempt_id)
        self.assertGreater(a.fencing_token, 1 << 20)
        thief = WorkerStream(self.channel, self.v1)
        try:
            thief.send(hello=self.v1.Hello(worker_id="thief", host="elsewhere", cpu_slots=0))
            thief.next_of("welcome")
            deadline = time.time() + 10  # the holder's RunStarted is in
            while self.attempt_row(a.attempt_id)["state"] != "running" and time.time() < deadline:
                time.sleep(0.05)
            run_before, attempt_before = self.run_row(a.run_id), self.attempt_row(a.attempt_id)
            points_before = self.total_points()
            thief.send(metrics=self.batch(a, 1, [P(step=1, train_loss=0.001)]))
            thief.next_of("ack")
            cancel = thief.next_of("cancel")
            self.assertIn("worker thief refused: the worker does not hold that attempt",
                          cancel.reason)
            thief.send(run_started=self.v1.RunStarted(attempt_id=a.attempt_id,
                                                      fencing_token=a.fencing_token))
            thief.send(run_finished=self.v1.RunFinished(
                attempt_id=a.attempt_id, fencing_token=a.fencing_token, status="failed",
                error="stolen", summary=self.v1.RunSummary(steps=5, final_val_loss=0.001)))
            self.assertTrue(thief.next_of("ack").finished)
            self.assertIn("does not hold", thief.next_of("cancel").reason)
            # Nothing of the victim's run changed.
            self.assertEqual(self.run_row(a.run_id), run_before)
            self.assertEqual(self.attempt_row(a.attempt_id), attempt_before)
            self.assertEqual(self.total_points(), points_before)
        finally:
            thief.close()
        # The holder's own batch with the same seq is stored, not dropped as a duplicate, and
        # its result ends the run as it says.
        self.stream.send(metrics=self.batch(a, 1, [P(step=1, train_loss=4.5)]))
        ack = self.stream.next_of("ack")
        self.assertEqual((ack.attempt_id, ack.seq), (a.attempt_id, 1))
        self.assertEqual(self.stored_points(a.attempt_id), 1)
        self.stream.send(run_finished=self.v1.RunFinished(
            attempt_id=a.attempt_id, fencing_token=a.fencing_token, status="ok",
            last_batch_seq=1))
        self.assertTrue(self.stream.next_of("ack").finished)
        self.assertEqual(self.run_row(a.run_id)["state"], "succeeded")

    def test_issue24_a_result_that_is_not_utf8_ends_the_attempt_with_the_reason(self):
        a = self.start_attempt()
        tail = "A" * 2001
        raw = self.v1.WorkerMessage(run_finished=self.v1.RunFinished(
            attempt_id=a.attempt_id, fencing_token=a.fencing_token, status="ok",
            stderr_tail=tail)).SerializeToString()
        # A 2000-byte cut inside a 3-byte character, as the worker made before the fix.
        raw = raw.replace(tail.encode(), b"A" * 1999 + b"\xe2\x96")
        self.stream.send_raw(raw)
        reason = "RunFinished.stderr_tail (2001 bytes) is not valid UTF-8"
        ack = self.expect_refused(a, "ack", reason)
        self.assertTrue(ack.finished)
        # The stream is still up: the next assignment arrives on it.
        b = self.start_attempt()
        self.finish_cancelled(b)

    def test_issue24_a_summary_is_not_taken_on_the_workers_word(self):
        a = self.start_attempt()
        self.stream.send(run_finished=self.v1.RunFinished(
            attempt_id=a.attempt_id, fencing_token=a.fencing_token, status="ok",
            summary=self.v1.RunSummary(steps=2 ** 62, final_val_loss=0.001, time_to_target_ms=1,
                                       target_step=1, reached_target=True, train_time_ms=1)))
        self.assertTrue(self.stream.next_of("ack").finished)
        run = self.run_row(a.run_id)
        self.assertEqual(run["state"], "succeeded")
        self.assertEqual(run["steps"], 0)
        self.assertIsNone(run["final_val_loss"])
        self.assertIsNone(run["time_to_target_ms"])
        self.assertIsNone(run["train_time_ms"])
        self.assertFalse(run["reached_target"])

    def test_issue24_bad_seqs_duplicate_steps_and_backward_times_are_refused(self):
        P = self.v1.MetricPoint
        points_before = self.total_points()
        self.refuse_batch([P(step=1, train_loss=4.0)], "seq 0 is below 1", seq=0)
        self.refuse_batch([P(step=1, train_loss=4.0)], "seq -7 is below 1", seq=-7)
        self.refuse_batch([P(step=3, train_loss=4.0), P(step=3, val_loss=4.0)],
                          "step 3 appears twice in the batch")
        self.refuse_batch([P(step=1, train_time_ms=50.0), P(step=2, train_time_ms=10.0)],
                          "train_time_ms goes backwards: step 2 has 10 after step 1 had 50")
        self.assertEqual(self.total_points(), points_before)

    def test_issue24_unbounded_hellos_are_refused_before_anything_is_stored(self):
        import grpc
        H = self.v1.Hello
        cases = [
            (H(worker_id="w" * (3 << 20), cpu_slots=1), "Hello.worker_id is 3145728 bytes"),
            (H(worker_id="w\x1b[2J", cpu_slots=1), "Hello.worker_id has byte 0x1b"),
            (H(worker_id="w\nroot", cpu_slots=1), "Hello.worker_id has byte 0xa"),
            (H(worker_id="w-rtl", host="evil\u202ecom", cpu_slots=1),
             "Hello.host has a control or bidirectional character"),
            (H(worker_id="w-slots", cpu_slots=-5), "Hello.cpu_slots is -5"),
            (H(worker_id="w-data", datasets=["d%d" % i for i in range(60000)]),
             "60000 datasets, over the limit of 256"),
            (H(worker_id="w-gpus", gpus=[self.v1.Gpu(index=i) for i in range(100000)]),
             "the number of GPUs is 100000"),
        ]
        for hello, says in cases:
            s = WorkerStream(self.channel, self.v1)
            try:
                s.send(hello=hello)
                with self.assertRaises(grpc.RpcError) as refused:
                    s.next()
                self.assertEqual(refused.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
                self.assertIn(says, refused.exception.details())
            finally:
                s.close()
        # Past the 4 MiB message limit the transport refuses the Hello before it is parsed.
        s = WorkerStream(self.channel, self.v1)
        try:
            s.send(hello=H(worker_id="w" * (5 << 20), cpu_slots=1))
            with self.assertRaises(grpc.RpcError) as refused:
                s.next()
            self.assertEqual(refused.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
        finally:
            s.close()
        with self.db() as db:
            ids = [r[0] for r in db.execute("SELECT id FROM workers")]
        self.assertTrue(set(ids) <= {"hostile", "thief"}, ids)


if __name__ == "__main__":
    unittest.main()
