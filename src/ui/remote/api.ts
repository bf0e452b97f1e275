/**
 * The page's client of the gateway: REST with the bearer token, every reply checked with the protocol's
 * validators, and each run's SSE stream read with fetch (EventSource cannot send the token) and
 * eventsource-parser, reconnecting with backoff and `Last-Event-ID` so nothing is missed or repeated.
 */
import { createParser } from 'eventsource-parser';
import {
  type ClusterInfo,
  type MetricRow,
  parseClusterInfo,
  parseMetricRows,
  parseRolloutList,
  parseRunEvent,
  parseRunList,
  parseRunSummary,
  type RolloutSummary,
  type RunSummary,
  type SequencedEvent,
} from '../../server/protocol/api';
import type { ParamValues } from '../../server/protocol/params';

export class GatewayError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

export class GatewayApi {
  constructor(
    /** origin of the gateway ('' = the page's own origin) */
    readonly base: string,
    readonly token: string,
  ) {}

  private async call(method: string, path: string, body?: unknown): Promise<unknown> {
    let res: Response;
    try {
      res = await fetch(this.base + path, {
        method,
        headers: {
          authorization: `Bearer ${this.token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (e) {
      throw new GatewayError(
        0,
        `the gateway at ${this.base || location.origin} is unreachable (${(e as Error).message})`,
      );
    }
    const text = await res.text();
    let parsed: unknown = null;
    if (text) {
      try {
        parsed = JSON.parse(text);
      } catch {
        throw new GatewayError(
          res.status,
          `the gateway answered ${res.status} with non-JSON (${text.slice(0, 120)})`,
        );
      }
    }
    if (!res.ok) {
      const err = (parsed as { error?: { message?: string; field?: string } } | null)?.error;
      throw new GatewayError(res.status, err?.message ?? `HTTP ${res.status}`, err?.field);
    }
    return parsed;
  }

  async cluster(): Promise<ClusterInfo> {
    return parseClusterInfo(await this.call('GET', '/api/cluster'));
  }

  async setCluster(address: string): Promise<ClusterInfo> {
    return parseClusterInfo(await this.call('PUT', '/api/cluster', { address }));
  }

  async runs(): Promise<RunSummary[]> {
    return parseRunList(await this.call('GET', '/api/runs'));
  }

  async run(id: string): Promise<RunSummary> {
    return parseRunSummary(await this.call('GET', `/api/runs/${encodeURIComponent(id)}`));
  }

  async submit(template: string, params: ParamValues, name?: string): Promise<RunSummary> {
    return parseRunSummary(
      await this.call('POST', '/api/runs', { template, params, ...(name ? { name } : {}) }),
    );
  }

  async stop(id: string): Promise<RunSummary> {
    return parseRunSummary(await this.call('POST', `/api/runs/${encodeURIComponent(id)}/stop`));
  }

  async remove(id: string): Promise<void> {
    await this.call('DELETE', `/api/runs/${encodeURIComponent(id)}`);
  }

  async metrics(id: string): Promise<MetricRow[]> {
    return parseMetricRows(await this.call('GET', `/api/runs/${encodeURIComponent(id)}/metrics`));
  }

  async rollouts(id: string): Promise<RolloutSummary[]> {
    return parseRolloutList(await this.call('GET', `/api/runs/${encodeURIComponent(id)}/rollouts`));
  }

  /** The run's stored rollouts as an Agent Lightning events bundle (read by core's importer in the lab worker). */
  async bundle(id: string): Promise<Blob> {
    const res = await fetch(`${this.base}/api/runs/${encodeURIComponent(id)}/rollouts/bundle`, {
      headers: { authorization: `Bearer ${this.token}` },
    });
    if (!res.ok) throw new GatewayError(res.status, `rollouts of ${id}: HTTP ${res.status}`);
    return res.blob();
  }

  /**
   * Follows a run's event stream from `after` on. Returns a function that closes it. `onEvent` gets each
   * checked event in order; a dropped connection is retried with backoff from the last event id.
   */
  follow(
    id: string,
    after: number,
    onEvent: (e: SequencedEvent) => void,
    onState: (s: { connected: boolean; error: string | null }) => void,
  ): () => void {
    let last = after;
    let closed = false;
    let ctl: AbortController | null = null;
    let backoff = 500;
    const loop = async () => {
      while (!closed) {
        ctl = new AbortController();
        try {
          const res = await fetch(`${this.base}/api/runs/${encodeURIComponent(id)}/events`, {
            headers: { authorization: `Bearer ${this.token}`, 'last-event-id': String(last) },
            signal: ctl.signal,
          });
          if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
          onState({ connected: true, error: null });
          backoff = 500;
          const parser = createParser({
            onEvent: (m) => {
              const seq = Number(m.id);
              if (!Number.isInteger(seq) || seq <= last) return;
              let event: SequencedEvent['event'];
              try {
                event = parseRunEvent(m.event ?? '', JSON.parse(m.data));
              } catch (e) {
                onState({ connected: true, error: `event ${m.id}: ${(e as Error).message}` });
                last = seq;
                return;
              }
              last = seq;
              onEvent({ seq, event });
            },
          });
          const reader = res.body.getReader();
          const decoder = new TextDecoder();
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            parser.feed(decoder.decode(value, { stream: true }));
          }
        } catch (e) {
          if (closed) return;
          onState({ connected: false, error: `event stream: ${(e as Error).message}; reconnecting` });
        }
        if (closed) return;
        await new Promise((r) => setTimeout(r, backoff));
        backoff = Math.min(backoff * 2, 10_000);
      }
    };
    void loop();
    return () => {
      closed = true;
      ctl?.abort();
    };
  }
}

/** The token from a gateway link (`?token=…`), moved out of the address bar into this tab's storage. */
export function takeTokenFromUrl(): string | null {
  if (typeof location === 'undefined') return null;
  const params = new URLSearchParams(location.search);
  const t = params.get('token');
  if (t) {
    sessionStorage.setItem(TOKEN_KEY, t);
    params.delete('token');
    const q = params.toString();
    history.replaceState(null, '', `${location.pathname}${q ? `?${q}` : ''}${location.hash}`);
  }
  return sessionStorage.getItem(TOKEN_KEY);
}

export const TOKEN_KEY = 'harness-lab-gateway-token';
