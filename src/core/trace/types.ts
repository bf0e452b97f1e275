/**
 * The trace model: what a trainer in harnessed RL sees. A rollout is the ordered list of LLM calls that a
 * harness made for one task, as recorded by the proxy in front of the inference engine, plus the rewards the
 * harness reported. Field names follow Agent Lightning v1.0 / OpenAI where they exist there.
 *
 * Token data is held in typed arrays (one per call), never as one object per token, so a batch of millions of
 * tokens stays a few thousand objects.
 */

/** Agent Lightning rollout states. */
export type RolloutState = 'queuing' | 'running' | 'succeeded' | 'failed';

/** One OpenAI tool call as it appears in an assistant message. */
export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** One OpenAI chat message. `reasoning_content` holds a separated thinking block when the engine splits it out. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string | null;
  name?: string;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  reasoning_content?: string;
}

/** One OpenAI function tool definition (`tools[]` of a chat-completions request). */
export interface ToolDefinition {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown> };
}

/** Sampling parameters of a chat-completions request (OpenAI names). */
export interface SamplingParams {
  temperature?: number;
  top_p?: number;
  max_tokens?: number;
  stop?: string[];
  seed?: number;
}

export interface ModelRequest {
  model?: string;
  messages: ChatMessage[];
  tools?: ToolDefinition[];
  sampling: SamplingParams;
}

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | (string & {});

export interface ModelResponse {
  message: ChatMessage;
  finishReason: FinishReason | null;
}

/** Where a call was served: engine kind and model, and which policy version produced it (async staleness). */
export interface EngineInfo {
  engine: string;
  model: string;
  policyVersion?: number;
}

export interface CallTimings {
  /** ms since the epoch */
  startMs: number;
  endMs: number;
}

/**
 * The k most likely next tokens at each response position under the distribution the engine sampled from
 * (softmax of the logits at the sampling temperature, before top-p truncation; temperature 1 when greedy) —
 * the same distribution `responseLogProbs` are taken from. Flat, position-major: position i's alternatives are
 * `ids[i·k .. i·k + k)` with their log-probs in descending order.
 */
export interface TokenAlternatives {
  k: number;
  ids: Int32Array;
  logProbs: Float32Array;
}

/**
 * The rollout engine's and the trainer's whole next-token distributions compared at each response position (a
 * training step's kept batch, both at the weights that train on it and at the rollout temperature): per
 * position KL(π_rollout ‖ π_train) = Σ_v π_r(v)·(log π_r(v) − log π_t(v)) and the total variation
 * ½·Σ_v |π_r(v) − π_t(v)|, and the k tokens whose probabilities differ most (flat, position-major like
 * TokenAlternatives: position i's are `ids[i·k .. i·k + k)`, largest |π_r − π_t| first) with both log-probs.
 */
export interface VocabMismatch {
  kl: Float32Array;
  tv: Float32Array;
  k: number;
  ids: Int32Array;
  rolloutLogProbs: Float32Array;
  trainerLogProbs: Float32Array;
}

/**
 * One recorded LLM request/response pair. Token ids and log-probs are present when the engine returned them
 * (vLLM `return_token_ids`, `logprobs`); `responseLogProbs[i]` is NaN where the engine gave no finite log-prob.
 */
export interface ModelCall {
  request: ModelRequest;
  /** null when the call failed before a response (see httpStatus / error). */
  response: ModelResponse | null;
  promptTokenIds?: Int32Array;
  responseTokenIds?: Int32Array;
  responseLogProbs?: Float32Array;
  /**
   * A log-prob list the source recorded whose length differs from responseTokenIds (then responseLogProbs is
   * absent: the values cannot be aligned to tokens). Kept because Agent Lightning's sample builder still uses
   * such a list when truncation to max_response_length makes the two lengths agree.
   */
  mismatchedLogProbs?: Float32Array;
  /** The engine's k most likely tokens at each response position (see TokenAlternatives), when it recorded them. */
  responseTopK?: TokenAlternatives;
  /**
   * The trainer's own log-probs and entropies of the response ids (a training step's kept batch), aligned with
   * responseTokenIds; NaN where the trainer did not score a token (e.g. cut by max_response_length).
   */
  trainerLogProbs?: Float32Array;
  trainerEntropy?: Float32Array;
  /** The full-vocabulary comparison of both engines' distributions at each response position, when measured. */
  vocabMismatch?: VocabMismatch;
  engine?: EngineInfo;
  timings?: CallTimings;
  httpStatus: number;
  error?: string;
}

/** A reward the harness reported (Agent Lightning `reward` event); `callIndex` when tied to a call. */
export interface RewardEvent {
  value: number;
  callIndex?: number;
  timestampMs?: number;
}

/** A part of a rollout's source that could not be read (an unreadable event): the rollout is kept without it. */
export interface RolloutGap {
  /** where the unreadable part was: "line 7", "events[12]", "rollouts[3].events[2]" */
  where: string;
  message: string;
}

export interface Rollout {
  rolloutId: string;
  /** The task; rollouts with the same dataId form one GRPO group (verl `uid`). */
  dataId: string;
  isTrain: boolean;
  state: RolloutState;
  /** Why the rollout failed, when state is 'failed'. */
  error?: string;
  calls: ModelCall[];
  rewards: RewardEvent[];
  /** The reward the trainer uses: the last reward event, or null when none was reported. */
  finalReward: number | null;
  /** Training step / sample order, as Agent Lightning's trainer orders rollouts. */
  step?: number;
  sampleIdxInStep?: number;
  metadata: Record<string, unknown>;
  /**
   * Present when part of the rollout's source could not be read (a call or reward event is missing): the
   * rollout is kept without it and marked, so a user can see it and exclude it.
   */
  incomplete?: RolloutGap[];
}

/** The batch without its incomplete rollouts (those with a part that could not be read). */
export function excludeIncomplete<T extends { rollouts: Rollout[] }>(batch: T): T {
  return { ...batch, rollouts: batch.rollouts.filter((r) => !r.incomplete?.length) };
}

/** A batch of rollouts as loaded from one source, with what the loader had to say about it. */
export interface TraceBatch {
  rollouts: Rollout[];
  /** Records that were rejected, with their location and reason; valid records were kept. */
  issues: TraceIssue[];
  /** Counters the import produced (e.g. non-finite log-probs turned into absent). */
  counters: Record<string, number>;
}

export interface TraceIssue {
  /** "line 42", "rollouts[3]", … : the record the issue belongs to */
  where: string;
  /** index path inside the record, e.g. "calls[3].response_log_probs" */
  field?: string;
  message: string;
  /** 'error': the record was skipped; 'warning': the record was kept with this part adjusted (default 'error') */
  severity?: 'error' | 'warning';
}

/** One-line rendering of an issue: "line 42: calls[3].response_log_probs has 16 values but …". */
export function formatIssue(issue: TraceIssue): string {
  const loc = issue.field ? `${issue.where}: ${issue.field}` : issue.where;
  return `${loc} ${issue.message}`;
}
