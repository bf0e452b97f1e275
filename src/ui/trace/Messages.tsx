import { useState } from 'react';
import type { ChatMessage, ToolCall } from '../../core/trace/types';

const LONG = 700;

function prettyArgs(args: string): string {
  try {
    return JSON.stringify(JSON.parse(args), null, 1);
  } catch {
    return args;
  }
}

function Text(props: { text: string }) {
  const [open, setOpen] = useState(false);
  const long = props.text.length > LONG;
  return (
    <>
      <pre className="msg-text">{long && !open ? `${props.text.slice(0, LONG)}…` : props.text}</pre>
      {long && (
        <button type="button" className="linkish" onClick={() => setOpen(!open)}>
          {open ? 'show less' : `show all ${props.text.length} characters`}
        </button>
      )}
    </>
  );
}

function ToolCalls(props: { calls: ToolCall[] }) {
  return (
    <ul className="toolcalls">
      {props.calls.map((c) => (
        <li key={c.id}>
          <span className="tc-name">{c.function.name}</span>
          <span className="tc-id">{c.id}</span>
          <pre className="msg-text">{prettyArgs(c.function.arguments)}</pre>
        </li>
      ))}
    </ul>
  );
}

/** One chat message: role, content, separated reasoning, tool calls, the tool call it answers. */
export function Message(props: { m: ChatMessage; label?: string }) {
  const { m } = props;
  return (
    <div className={`msg msg-${m.role}`}>
      <div className="msg-head">
        <span className={`role role-${m.role}`}>{props.label ?? m.role}</span>
        {m.name && <span className="muted">{m.name}</span>}
        {m.tool_call_id && <span className="muted">answers {m.tool_call_id}</span>}
      </div>
      {m.reasoning_content && (
        <div className="reasoning">
          <span className="muted">reasoning</span>
          <Text text={m.reasoning_content} />
        </div>
      )}
      {m.content !== null && m.content !== '' && <Text text={m.content} />}
      {m.tool_calls && m.tool_calls.length > 0 && <ToolCalls calls={m.tool_calls} />}
    </div>
  );
}
