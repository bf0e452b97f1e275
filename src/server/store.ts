/**
 * The gateway's embedded store (SQLite through better-sqlite3, WAL journal): runs, each run's event log (the
 * SSE stream, numbered per run), log lines, metrics per step, and rollouts with their Agent Lightning events.
 * Every ingestion is one transaction that also advances the run's cursor (log offset, terminal-rollout
 * cursor), so a gateway killed at any moment restarts exactly where the store says, with nothing lost and
 * nothing read twice. The store holds every run's Agent Lightning key and every prompt: a folder it creates is
 * owner-only (0700), its files are created owner-only (0600; SQLite gives the -wal and -shm files the
 * database file's mode), and an existing store's files are tightened to 0600 when it is opened.
 */
import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import type {
  MetricRow,
  RolloutSummary,
  RunEvent,
  RunState,
  RunSummary,
  SequencedEvent,
} from './protocol/api';
import { eventData, parseRunEvent } from './protocol/api';
import type { ParamValues } from './protocol/params';

const SCHEMA_VERSION = '1';

/** A stored run: the summary's own fields, plus what the server keeps to follow the job. */
export interface RunRow
  extends Pick<
    RunSummary,
    | 'id'
    | 'name'
    | 'template'
    | 'params'
    | 'state'
    | 'message'
    | 'submissionId'
    | 'createdMs'
    | 'updatedMs'
    | 'missedRollouts'
  > {
  rayAddress: string;
  aglKey: string;
  aglUrl: string | null;
  /** the job's rollout spool (launch.py): where the gateway reads finished rollouts by cursor */
  spoolUrl: string | null;
  /** Ray's session name when the run was submitted; another one means the cluster restarted */
  raySession: string | null;
  logOffset: number;
  rolloutCursor: number;
  lastSeq: number;
}

export interface StoredRollout extends RolloutSummary {
  doc: string;
}

interface DbRun {
  id: string;
  name: string;
  template: string;
  params: string;
  state: string;
  message: string;
  submission_id: string | null;
  ray_address: string;
  agl_key: string;
  agl_url: string | null;
  spool_url: string | null;
  ray_session: string | null;
  created_ms: number;
  updated_ms: number;
  log_offset: number;
  rollout_cursor: number;
  missed_rollouts: number;
  last_seq: number;
}

function toRow(r: DbRun): RunRow {
  return {
    id: r.id,
    name: r.name,
    template: r.template,
    params: JSON.parse(r.params) as ParamValues,
    state: r.state as RunState,
    message: r.message,
    submissionId: r.submission_id,
    rayAddress: r.ray_address,
    aglKey: r.agl_key,
    aglUrl: r.agl_url,
    spoolUrl: r.spool_url,
    raySession: r.ray_session,
    createdMs: r.created_ms,
    updatedMs: r.updated_ms,
    logOffset: r.log_offset,
    rolloutCursor: r.rollout_cursor,
    missedRollouts: r.missed_rollouts,
    lastSeq: r.last_seq,
  };
}

export class GatewayStore {
  readonly db: Database.Database;

  constructor(path: string) {
    if (path !== ':memory:') {
      const dir = dirname(path);
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      closeSync(openSync(path, 'a', 0o600));
      for (const f of [path, `${path}-wal`, `${path}-shm`]) if (existsSync(f)) chmodSync(f, 0o600);
    }
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = FULL');
    this.db.pragma('foreign_keys = ON');
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS runs (
        id TEXT PRIMARY KEY, name TEXT NOT NULL, template TEXT NOT NULL, params TEXT NOT NULL,
        state TEXT NOT NULL, message TEXT NOT NULL DEFAULT '', submission_id TEXT, ray_address TEXT NOT NULL,
        agl_key TEXT NOT NULL, agl_url TEXT, created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL,
        log_offset INTEGER NOT NULL DEFAULT 0, rollout_cursor INTEGER NOT NULL DEFAULT 0,
        missed_rollouts INTEGER NOT NULL DEFAULT 0, last_seq INTEGER NOT NULL DEFAULT 0);
      CREATE TABLE IF NOT EXISTS events (
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE, seq INTEGER NOT NULL, kind TEXT NOT NULL,
        data TEXT NOT NULL, ms INTEGER NOT NULL, PRIMARY KEY (run_id, seq));
      CREATE TABLE IF NOT EXISTS logs (
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE, n INTEGER NOT NULL, text TEXT NOT NULL,
        PRIMARY KEY (run_id, n));
      CREATE TABLE IF NOT EXISTS metrics (
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE, step INTEGER NOT NULL, data TEXT NOT NULL,
        PRIMARY KEY (run_id, step));
      CREATE TABLE IF NOT EXISTS rollouts (
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE, rollout_id TEXT NOT NULL, seq INTEGER NOT NULL,
        state TEXT NOT NULL, data_id TEXT NOT NULL, is_train INTEGER NOT NULL, reward REAL, calls INTEGER NOT NULL,
        step INTEGER, doc TEXT NOT NULL, PRIMARY KEY (run_id, rollout_id));
    `);
    // columns added since schema version 1 (nullable, so older rows read as "not known")
    const cols = new Set(
      (this.db.prepare('PRAGMA table_info(runs)').all() as { name: string }[]).map((c) => c.name),
    );
    for (const c of ['spool_url', 'ray_session'])
      if (!cols.has(c)) this.db.exec(`ALTER TABLE runs ADD COLUMN ${c} TEXT`);
    const v = this.getMeta('schema_version');
    if (v === null) this.setMeta('schema_version', SCHEMA_VERSION);
    else if (v !== SCHEMA_VERSION)
      throw new Error(
        `gateway store ${path} has schema version ${v}; this gateway reads version ${SCHEMA_VERSION}`,
      );
  }

  close(): void {
    this.db.close();
  }

  getMeta(key: string): string | null {
    const r = this.db.prepare('SELECT value FROM meta WHERE key = ?').get(key) as
      | { value: string }
      | undefined;
    return r ? r.value : null;
  }

  setMeta(key: string, value: string): void {
    this.db
      .prepare(
        'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value',
      )
      .run(key, value);
  }

  createRun(
    r: Omit<
      RunRow,
      'logOffset' | 'rolloutCursor' | 'missedRollouts' | 'lastSeq' | 'spoolUrl' | 'raySession'
    > &
      Partial<Pick<RunRow, 'raySession'>>,
  ): void {
    this.db
      .prepare(
        `INSERT INTO runs (id, name, template, params, state, message, submission_id, ray_address, agl_key, agl_url,
          created_ms, updated_ms, ray_session) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        r.id,
        r.name,
        r.template,
        JSON.stringify(r.params),
        r.state,
        r.message,
        r.submissionId,
        r.rayAddress,
        r.aglKey,
        r.aglUrl,
        r.createdMs,
        r.updatedMs,
        r.raySession ?? null,
      );
  }

  run(id: string): RunRow | null {
    const r = this.db.prepare('SELECT * FROM runs WHERE id = ?').get(id) as DbRun | undefined;
    return r ? toRow(r) : null;
  }

  runs(): RunRow[] {
    return (this.db.prepare('SELECT * FROM runs ORDER BY created_ms DESC, id').all() as DbRun[]).map(toRow);
  }

  deleteRun(id: string): void {
    this.db.prepare('DELETE FROM runs WHERE id = ?').run(id);
  }

  summary(r: RunRow): RunSummary {
    const last = this.db.prepare('SELECT MAX(step) AS s FROM metrics WHERE run_id = ?').get(r.id) as {
      s: number | null;
    };
    const n = this.db.prepare('SELECT COUNT(*) AS n FROM rollouts WHERE run_id = ?').get(r.id) as {
      n: number;
    };
    return {
      id: r.id,
      name: r.name,
      template: r.template,
      params: r.params,
      state: r.state,
      message: r.message,
      submissionId: r.submissionId,
      createdMs: r.createdMs,
      updatedMs: r.updatedMs,
      lastStep: last.s,
      rollouts: n.n,
      missedRollouts: r.missedRollouts,
      aglGateway: r.aglUrl,
    };
  }

  private appendTx(runId: string, events: RunEvent[], now: number): number[] {
    const r = this.db.prepare('SELECT last_seq FROM runs WHERE id = ?').get(runId) as
      | { last_seq: number }
      | undefined;
    if (!r) throw new Error(`no run ${runId}`);
    const ins = this.db.prepare('INSERT INTO events (run_id, seq, kind, data, ms) VALUES (?, ?, ?, ?, ?)');
    const seqs: number[] = [];
    let seq = r.last_seq;
    for (const e of events) {
      seq++;
      ins.run(runId, seq, e.kind, JSON.stringify(eventData(e)), now);
      seqs.push(seq);
    }
    this.db.prepare('UPDATE runs SET last_seq = ? WHERE id = ?').run(seq, runId);
    return seqs;
  }

  /** Sets the run's state/message (and any other fields) and records a status event when the state changed. */
  updateRun(
    id: string,
    patch: Partial<
      Pick<RunRow, 'state' | 'message' | 'submissionId' | 'aglUrl' | 'rayAddress' | 'raySession'>
    >,
    now = Date.now(),
  ): RunRow {
    return this.db.transaction(() => {
      const before = this.run(id);
      if (!before) throw new Error(`no run ${id}`);
      const after = { ...before, ...patch, updatedMs: now };
      this.db
        .prepare(
          'UPDATE runs SET state = ?, message = ?, submission_id = ?, agl_url = ?, ray_address = ?, ray_session = ?, updated_ms = ? WHERE id = ?',
        )
        .run(
          after.state,
          after.message,
          after.submissionId,
          after.aglUrl,
          after.rayAddress,
          after.raySession,
          now,
          id,
        );
      if (after.state !== before.state || after.message !== before.message)
        this.appendTx(id, [{ kind: 'status', state: after.state, message: after.message }], now);
      return after;
    })();
  }

  appendEvents(runId: string, events: RunEvent[], now = Date.now()): number[] {
    return this.db.transaction(() => this.appendTx(runId, events, now))();
  }

  /** Events with seq > after, oldest first. */
  eventsAfter(runId: string, after: number, limit = 1000): SequencedEvent[] {
    const rows = this.db
      .prepare('SELECT seq, kind, data FROM events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?')
      .all(runId, after, limit) as { seq: number; kind: string; data: string }[];
    return rows.map((r) => ({ seq: r.seq, event: parseRunEvent(r.kind, JSON.parse(r.data)) }));
  }

  /**
   * Log text consumed up to `newOffset` (characters of the job log): its complete lines, the metrics parsed
   * from them (merged into the step's row, later sources overriding earlier keys), the job gateway's URL if a
   * line announced it — all in one transaction with the offset.
   */
  ingestLog(
    runId: string,
    chunk: {
      newOffset: number;
      lines: string[];
      metrics: { step: number; data: Record<string, number>; source: 'console' | 'file' }[];
      aglUrl?: string | null;
      spoolUrl?: string | null;
      notices?: string[];
    },
    now = Date.now(),
  ): void {
    this.db.transaction(() => {
      const r = this.run(runId);
      if (!r) throw new Error(`no run ${runId}`);
      const base = (
        this.db.prepare('SELECT COUNT(*) AS n FROM logs WHERE run_id = ?').get(runId) as { n: number }
      ).n;
      const ins = this.db.prepare('INSERT INTO logs (run_id, n, text) VALUES (?, ?, ?)');
      chunk.lines.forEach((l, i) => {
        ins.run(runId, base + i, l);
      });
      const events: RunEvent[] = [];
      if (chunk.lines.length) events.push({ kind: 'log', lines: chunk.lines });
      const get = this.db.prepare('SELECT data FROM metrics WHERE run_id = ? AND step = ?');
      const put = this.db.prepare(
        'INSERT INTO metrics (run_id, step, data) VALUES (?, ?, ?) ON CONFLICT(run_id, step) DO UPDATE SET data = excluded.data',
      );
      for (const m of chunk.metrics) {
        const old = get.get(runId, m.step) as { data: string } | undefined;
        const merged = { ...(old ? (JSON.parse(old.data) as Record<string, number>) : {}), ...m.data };
        put.run(runId, m.step, JSON.stringify(merged));
        events.push({ kind: 'metric', step: m.step, data: m.data, source: m.source });
      }
      for (const n of chunk.notices ?? []) events.push({ kind: 'notice', level: 'warning', message: n });
      if (events.length) this.appendTx(runId, events, now);
      this.db
        .prepare('UPDATE runs SET log_offset = ?, updated_ms = ? WHERE id = ?')
        .run(chunk.newOffset, now, runId);
      if (chunk.aglUrl && chunk.aglUrl !== r.aglUrl)
        this.db.prepare('UPDATE runs SET agl_url = ? WHERE id = ?').run(chunk.aglUrl, runId);
      if (chunk.spoolUrl && chunk.spoolUrl !== r.spoolUrl)
        this.db.prepare('UPDATE runs SET spool_url = ? WHERE id = ?').run(chunk.spoolUrl, runId);
    })();
  }

  logLines(runId: string, tail: number): { lines: string[]; total: number } {
    const total = (
      this.db.prepare('SELECT COUNT(*) AS n FROM logs WHERE run_id = ?').get(runId) as { n: number }
    ).n;
    const rows = this.db
      .prepare('SELECT text FROM logs WHERE run_id = ? AND n >= ? ORDER BY n')
      .all(runId, Math.max(0, total - tail)) as { text: string }[];
    return { lines: rows.map((r) => r.text), total };
  }

  metrics(runId: string): MetricRow[] {
    return (
      this.db.prepare('SELECT step, data FROM metrics WHERE run_id = ? ORDER BY step').all(runId) as {
        step: number;
        data: string;
      }[]
    ).map((r) => ({ step: r.step, data: JSON.parse(r.data) as Record<string, number> }));
  }

  /**
   * Rollouts read from the job's gateway for terminal-listing positions [cursor, nextCursor): stored with their
   * events, `missed` counting the ones the gateway had deleted before they could be read; the cursor moves in
   * the same transaction.
   */
  ingestRollouts(
    runId: string,
    batch: { nextCursor: number; rollouts: Omit<StoredRollout, 'seq'>[]; missed: number; notices?: string[] },
    now = Date.now(),
  ): void {
    this.db.transaction(() => {
      const r = this.run(runId);
      if (!r) throw new Error(`no run ${runId}`);
      let seq = (
        this.db.prepare('SELECT COUNT(*) AS n FROM rollouts WHERE run_id = ?').get(runId) as { n: number }
      ).n;
      const ins = this.db.prepare(
        `INSERT OR IGNORE INTO rollouts (run_id, rollout_id, seq, state, data_id, is_train, reward, calls, step, doc)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      );
      const events: RunEvent[] = [];
      for (const x of batch.rollouts) {
        const res = ins.run(
          runId,
          x.rolloutId,
          seq,
          x.state,
          x.dataId,
          x.isTrain ? 1 : 0,
          x.reward,
          x.calls,
          x.step,
          x.doc,
        );
        if (res.changes === 0) continue;
        seq++;
        const { doc: _doc, ...summary } = x;
        events.push({ kind: 'rollout', ...summary });
      }
      if (batch.missed > 0)
        events.push({
          kind: 'notice',
          level: 'warning',
          message: `${batch.missed} rollout(s) were deleted by the job's trainer before its spool read them`,
        });
      for (const n of batch.notices ?? []) events.push({ kind: 'notice', level: 'warning', message: n });
      if (events.length) this.appendTx(runId, events, now);
      this.db
        .prepare(
          'UPDATE runs SET rollout_cursor = ?, missed_rollouts = missed_rollouts + ?, updated_ms = ? WHERE id = ?',
        )
        .run(batch.nextCursor, batch.missed, now, runId);
    })();
  }

  rollouts(runId: string): RolloutSummary[] {
    return (
      this.db
        .prepare(
          'SELECT rollout_id, seq, state, data_id, is_train, reward, calls, step FROM rollouts WHERE run_id = ? ORDER BY seq',
        )
        .all(runId) as {
        rollout_id: string;
        seq: number;
        state: string;
        data_id: string;
        is_train: number;
        reward: number | null;
        calls: number;
        step: number | null;
      }[]
    ).map((r) => ({
      rolloutId: r.rollout_id,
      seq: r.seq,
      state: r.state,
      dataId: r.data_id,
      isTrain: r.is_train === 1,
      reward: r.reward,
      calls: r.calls,
      step: r.step,
    }));
  }

  /** Stored `{rollout, events}` documents with seq in [after, after + limit). */
  rolloutDocs(runId: string, after: number, limit: number): string[] {
    return (
      this.db
        .prepare('SELECT doc FROM rollouts WHERE run_id = ? AND seq >= ? ORDER BY seq LIMIT ?')
        .all(runId, after, limit) as { doc: string }[]
    ).map((r) => r.doc);
  }
}
